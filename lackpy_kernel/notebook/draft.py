"""A plan built in a notebook, cell by cell, and what its runs look like as they go.

``%%step`` and ``%plan`` (``notebook.plans``) build on this: a
:class:`PlanDraft` holds the steps the notebook declared (declaring a step of the same name
again replaces it, so a cell can be edited and re-run), builds the Plan to run, and saves
and loads it in the workspace. A :class:`StepLog` follows a run step by step, for a display
updated as each step starts and ends.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

from lackpy_kernel.engines import (
    Plan,
    Program,
    Sentinel,
    Step,
    from_parallel_all,
    from_prev,
    from_start,
    from_step,
)
from lackpy_kernel.engines.plans import PlanLibrary, RunStatus, target_label
from lackpy_kernel.errors import UsageError
from lackpy_kernel.kit import Kit
from lackpy_kernel.service import LackpyService

__all__ = ["PlanDraft", "StepLog", "parse_reference", "reference_text", "step_from_cell"]

_CALL = re.compile(r"(from_step|from_parallel_all)\(\s*(['\"]?)([^'\")]+)\2\s*\)")


def parse_reference(text: str) -> Any:
    """A task or context reference as a magic's option gives it: ``from_prev``,
    ``from_start``, ``from_step(NAME)``, ``from_parallel_all(NAME)``, or else a Python
    literal where it parses as one, else the text itself."""
    text = text.strip()
    if text in ("from_prev", "prev"):
        return from_prev
    if text in ("from_start", "start"):
        return from_start
    call = _CALL.fullmatch(text)
    if call:
        return (from_step if call.group(1) == "from_step" else from_parallel_all)(call.group(3))
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def step_from_cell(name: str, source: str, *, kit: Kit, writes: str | None = None,
                   parallel: bool = False, task: str | None = None,
                   context: list[str] | None = None) -> Step:
    """The Program step a ``%%step NAME`` cell declares: ``source`` with ``kit``, its task and
    context references as the magic's options gave them (text, see ``parse_reference``)."""
    contexts = [parse_reference(text) for text in context or []]
    return Step(Program(source, kit=kit), name=name, writes=writes, parallel=parallel,
                task=from_prev if task is None else parse_reference(task),
                context=None if not contexts else contexts[0] if len(contexts) == 1 else contexts)


def reference_text(reference: Any) -> str:
    """How a reference reads in a table."""
    if isinstance(reference, list):
        return ", ".join(reference_text(item) for item in reference)
    if isinstance(reference, Sentinel):
        return repr(reference)
    return "" if reference is None else repr(reference)


class PlanDraft:
    """The steps a notebook declared, in order, and the plan they make.

    Runs checkpoint in the workspace's plan Store (``.lackpy/plans.sqlite``); ``save`` and
    ``load`` use ``.lackpy/plans/NAME.json``. Every step goes through the plan compiler as it
    is declared, with the steps before it.
    """

    def __init__(self, service: LackpyService, workspace: str | Path | None = None) -> None:
        self.service = service
        self.library = PlanLibrary(workspace if workspace is not None else service.workspace)
        self.steps: list[Step] = []
        self.name: str | None = None

    def declare(self, step: Step) -> Plan:
        """Add ``step`` at the end, or in place of the step of its name; returns the plan.

        Raises PlanCompileError (the draft is then as it was) when the plan would not compile.
        """
        names = [existing.name for existing in self.steps]
        if step.name in names:
            steps = [step if existing.name == step.name else existing for existing in self.steps]
        else:
            steps = [*self.steps, step]
        plan = self._build(steps)
        self.steps = steps
        return plan

    def drop(self, name: str) -> None:
        """Remove step ``name``; UsageError when there is none, PlanCompileError (the draft
        unchanged) when another step needs it."""
        names = [step.name for step in self.steps]
        if name not in names:
            listed = f"its steps: {', '.join(names)}" if names else "it has no steps"
            raise UsageError(f"no step {name!r} in the plan; {listed}")
        steps = [step for step in self.steps if step.name != name]
        if steps:
            self._build(steps)
        self.steps = steps

    def clear(self) -> None:
        """Forget every step (and the saved plan's name)."""
        self.steps = []
        self.name = None

    def plan(self, *, key: str | None = None, resume: bool = False, fork: bool = False) -> Plan:
        """The draft as a Plan, checkpointing under ``key`` in the plan Store."""
        if not self.steps:
            raise UsageError("the plan has no steps yet: declare one with a %%step NAME cell")
        return self._build(self.steps, checkpoint_key=key, resume=resume,
                           on_concurrent="fork" if fork else "fail")

    def for_key(self, key: str, *, resume: bool) -> Plan:
        """The plan to resume or restart the run under ``key``: the draft, or when the draft is
        empty (a fresh kernel), the saved plan the run came from."""
        if self.steps:
            return self.plan(key=key, resume=resume)
        return self.library.plan_for(key, service=self.service, resume=resume)

    def rows(self) -> list[list[str]]:
        """One row per step: #, step, target, task, context, writes, band."""
        return [[str(number), step.name, target_label(step.target), reference_text(step.task),
                 reference_text(step.context), step.writes or "",
                 "parallel" if step.parallel else ""]
                for number, step in enumerate(self.steps, 1)]

    def save(self, name: str) -> Path:
        """Save the draft as ``.lackpy/plans/NAME.json``; runs started after record the name."""
        path = self.library.save(name, self.plan())
        self.name = name
        return path

    def load(self, name: str) -> Plan:
        """Replace the draft by the saved plan ``name``."""
        plan = self.library.load(name, service=self.service)
        self.steps, self.name = list(plan.steps), name
        return plan

    def status(self, key: str | None = None) -> list[RunStatus]:
        """The run under ``key``, or every run in the plan Store."""
        if key is None:
            return self.library.runs()
        run = self.library.run(key)
        if run is None:
            raise UsageError(f"no plan run under the key {key!r}; %plan status lists them")
        return [run]

    def _build(self, steps: list[Step], **options: Any) -> Plan:
        return Plan(*steps, store=self.library.store, name=self.name, service=self.service,
                    **options)


class StepLog:
    """A run's steps as they start and end (call it as a plan's ``on_step``): one row per
    step, with its latest status, its time and how often it ran."""

    def __init__(self, steps: list[str] | None = None, done_before: list[str] | None = None
                 ) -> None:
        """``steps`` are listed as waiting, those of ``done_before`` (a resumed run's completed
        steps) as done earlier."""
        earlier = set(done_before or [])
        self.status: dict[str, str] = {
            name: "done earlier" if name in earlier else "waiting" for name in steps or []}
        self.ms: dict[str, float | None] = {}
        self.runs: dict[str, int] = {}

    def __call__(self, name: str, status: str, ms: float | None) -> None:
        self.status[name] = status
        if status == "running":
            self.runs[name] = self.runs.get(name, 0) + 1
        else:
            self.ms[name] = ms

    def interrupted(self) -> None:
        """Mark the steps that were running as stopped by an interrupt."""
        for name, status in self.status.items():
            if status == "running":
                self.status[name] = "interrupted"

    def rows(self) -> list[list[str]]:
        """step, status, runs, ms (last, so its varying width only pads the line's end)."""
        return [[name, status, str(self.runs.get(name, 0)), _ms(self.ms.get(name))]
                for name, status in self.status.items()]


def _ms(ms: float | None) -> str:
    return "" if ms is None else f"{ms:.1f} ms"
