"""The kernel's plan magics: ``%%step`` declares a step from a cell, ``%plan`` shows, runs,
fans out, resumes, restarts, saves and loads the plan. Runs checkpoint in the workspace's
``.lackpy/plans.sqlite``; the stop button pauses a run with a checkpoint."""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from lackpy_kernel.display import (
    output_bundle,
    plan_bundle,
    progress_bundle,
    runs_bundle,
    table_bundle,
)
from lackpy_kernel.engines import Approval, Envelope, Plan, Step
from lackpy_kernel.engines.notebook import PlanDraft, StepLog, step_from_cell
from lackpy_kernel.errors import UsageError
from lackpy_kernel.magic_syntax import parse_param
from lackpy_kernel.magics import (
    PLAN_OPTIONS,
    PLAN_REST,
    PLAN_SUMMARY,
    STEP_OPTIONS,
    STEP_SUMMARY,
    Magic,
    PlanCommand,
    magic,
    plan_command,
    step_line,
)
from lackpy_kernel.session import LackpySession

from .output import CellError, CellOutput

Runner = Callable[[Callable[[str, str, float | None], None]], Awaitable[Envelope]]


class PlanMagics:
    """``%%step`` and ``%plan`` over a PlanDraft of the kernel's session and service."""

    output: CellOutput
    session: LackpySession
    _magic: Callable[[str], Magic]

    @functools.cached_property
    def plans(self) -> PlanDraft:
        """The plan the notebook's %%step cells declared."""
        return PlanDraft(self.session.service)

    @magic("step", STEP_SUMMARY, options=STEP_OPTIONS, rest="NAME", cell=True)
    def step(self, line: Any, body: str) -> None:
        name, options = step_line(self._magic("step"), line)
        step = step_from_cell(name, body, kit=options.get("--kit") or self.session.kit,
                              writes=options.get("--writes"),
                              parallel=bool(options.get("--parallel")),
                              task=options.get("--task"), context=options.get("--context"))
        self._declare(step)

    @magic("plan", PLAN_SUMMARY, options=PLAN_OPTIONS, rest=PLAN_REST)
    async def plan(self, line: Any) -> None:
        command = plan_command(self._magic("plan"), line)
        action = command.action.replace("-", "_")
        await getattr(self, f"_plan_{action}")(command)

    # -- the actions ------------------------------------------------------------

    async def _plan_show(self, command: PlanCommand) -> None:
        title = f"plan {self.plans.name}" if self.plans.name else "plan"
        self.output.display(plan_bundle(self.plans.rows(), title))

    async def _plan_gate(self, command: PlanCommand) -> None:
        name, *prompt = command.words
        if not name.isidentifier():
            raise UsageError(f"name the gate with one name such as review, not {name!r}")
        self._declare(Step(Approval(" ".join(prompt) or "waiting for approval"), name=name))

    async def _plan_drop(self, command: PlanCommand) -> None:
        self.plans.drop(command.word)
        self.output.display(plan_bundle(self.plans.rows(), "plan"))

    async def _plan_clear(self, command: PlanCommand) -> None:
        self.plans.clear()
        self.output.display({"text/plain": "the plan has no steps now"})

    async def _plan_save(self, command: PlanCommand) -> None:
        path = self.plans.save(command.word)
        shown = path.relative_to(self.plans.library.workspace)
        self.output.display({"text/plain": f"saved {shown}; `lackpy plan run {command.word} "
                                           f"TASK` runs it from a shell"})

    async def _plan_load(self, command: PlanCommand) -> None:
        self.plans.load(command.word)
        self.output.display(plan_bundle(self.plans.rows(), f"plan {command.word}"))

    async def _plan_status(self, command: PlanCommand) -> None:
        self.output.display(runs_bundle(self.plans.status(command.word or None)))

    async def _plan_run(self, command: PlanCommand) -> None:
        key = command.options.get("--key")
        task = parse_param(f"task={command.word}")[1]
        plan = self.plans.plan(key=key)
        await self._live(plan, key, f"plan on {task!r}" + (f", key {key}" if key else ""),
                         lambda on_step: plan.arun(task, on_step=on_step))

    async def _plan_resume(self, command: PlanCommand) -> None:
        plan = self.plans.for_key(command.word, resume=True)
        (run,) = self.plans.status(command.word)
        await self._live(plan, command.word, f"resuming {command.word}",
                         lambda on_step: plan.arun(on_step=on_step), run.completed_steps)

    async def _plan_restart(self, command: PlanCommand) -> None:
        plan = self.plans.for_key(command.word, resume=False)
        await self._live(plan, command.word, f"restarting {command.word}",
                         lambda on_step: plan.arestart(on_step=on_step))

    async def _plan_run_many(self, command: PlanCommand) -> None:
        inputs = await self._list_variable(command.word)
        key = command.options.get("--key")
        plan = self.plans.plan(key=key, fork=key is not None)
        envelopes = await plan.arun_many(inputs, concurrency=_concurrency(command))
        rows = [[repr(task), "done" if envelope.ok else envelope.error.type,
                 envelope.payload if envelope.ok else envelope.error.message]
                for task, envelope in zip(inputs, envelopes, strict=True)]
        self.output.display(table_bundle(["task", "status", "output / error"], rows))

    # -- helpers ----------------------------------------------------------------

    def _declare(self, step: Step) -> None:
        self.plans.declare(step)
        number = [s.name for s in self.plans.steps].index(step.name) + 1
        row = self.plans.rows()[number - 1]
        self.output.display(plan_bundle([row], f"step {number} of {len(self.plans.steps)}"))

    async def _live(self, plan: Plan, key: str | None, title: str, run: Runner,
                    done_before: list[str] | None = None) -> None:
        """Run with a display updated as each step starts and ends; show the outcome."""
        log = StepLog([step.name for step in plan.steps], done_before)
        display_id = uuid.uuid4().hex
        self.output.display({"text/plain": title}, display_id)

        def on_step(name: str, status: str, ms: float | None) -> None:
            log(name, status, ms)
            self.output.update_display(progress_bundle(title, log.rows()), display_id)

        try:
            envelope = await run(on_step)
        except asyncio.CancelledError:
            log.interrupted()
            self._finish(title, display_id, log)
            resume = (f"paused with a checkpoint: %plan resume {key} continues" if key else
                      "stopped; it had no --key, so there is no checkpoint to resume")
            raise CellError("KeyboardInterrupt", f"interrupted: the plan is {resume}") from None
        self._finish(title, display_id, log)
        self._outcome(envelope, key)

    def _finish(self, title: str, display_id: str, log: StepLog) -> None:
        # The live display goes back to its first text and the final table follows, so a
        # notebook shows the same outputs whether or not its front end applied the updates.
        self.output.update_display({"text/plain": title}, display_id)
        self.output.display(progress_bundle("", log.rows()))

    def _outcome(self, envelope: Envelope, key: str | None) -> None:
        error = envelope.error
        if error is None:
            if envelope.payload is not None:
                self.output.result(output_bundle(envelope.payload))
            return
        hint = f"; %plan resume {key} continues" if key else "; run it with --key K to resume it"
        if error.type == "PlanPaused":
            self.output.stream("stdout", f"{error.message}{hint}\n")
            return
        raise CellError(error.type, error.message + (hint if key else ""))

    async def _list_variable(self, name: str) -> list[Any]:
        if name not in self.session.variable_types and name not in self.session.params:
            raise UsageError(f"no variable {name!r}: make a list first, e.g. {name} = "
                             f"['a.txt', 'b.txt']")
        result = await self.session.run(name)
        value = result.raise_for_error().output
        if not isinstance(value, list | tuple):
            raise UsageError(f"%plan run-many takes a list; {name} is a {type(value).__name__}")
        return list(value)


def _concurrency(command: PlanCommand) -> int | None:
    text = command.options.get("--concurrency")
    if text is None:
        return None
    if not text.isdigit() or int(text) < 1:
        raise UsageError(f"--concurrency takes a whole number of at least 1, not {text!r}")
    return int(text)
