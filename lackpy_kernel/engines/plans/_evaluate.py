"""A plan's evaluation, apart from how its steps run: which band runs next, what it is given,
and where the plan goes after it (routes, bands, sentinels, max_iterations).

Nothing here does I/O or runs a step, so a local runner and a durable one (a Temporal
workflow, with each step an activity) drive the same plan through the same rules:

    state = PlanState(task, next_step=evaluator.first_step())
    while state.next_step is not None and not evaluator.exhausted(state):
        band = evaluator.band(state)
        results = [run(step, *evaluator.inputs(step, state)) for step in band]  # concurrently
        writes = evaluator.advance(state, band, results)   # when every result succeeded
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any

from lackpy_kernel.errors import PlanRuntimeError
from lackpy_kernel.run import summarize
from lackpy_kernel.run.plain import jsonable

from ._compiler import did_you_mean, output_fields
from ._envelope import ErrorInfo, StepResult
from ._sentinels import FromParallelAll, FromPrev, FromStart, FromStep
from ._step import Step, target_label

__all__ = ["CHECKPOINT_MARK", "Evaluator", "PlanState", "choose_route", "pause_error",
           "type_problem"]

CHECKPOINT_MARK = "checkpoint_version"  # the key that makes a Store value a run's checkpoint


@dataclass
class PlanState:
    """Where a run is: its task, the next step, the written values (``kv``), the steps
    completed and their results, the bands run so far, and the rejoin points of branches
    taken. ``to_dict`` is the checkpoint's form."""

    task: Any = None
    next_step: str | None = None
    kv: dict[str, Any] = field(default_factory=dict)
    completed_steps: list[str] = field(default_factory=list)
    history: list[StepResult] = field(default_factory=list)
    iterations: int = 0
    branch_return: dict[str, str] = field(default_factory=dict)
    approved: str | None = None  # the Approval step a resume let through (not checkpointed)

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form."""
        return {"task": self.task, "next_step": self.next_step, "kv": dict(self.kv),
                "completed_steps": list(self.completed_steps),
                "history": [result.to_dict() for result in self.history],
                "iterations": self.iterations, "branch_return": dict(self.branch_return)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PlanState:
        """Rebuild from ``to_dict``'s output (a checkpoint holds more keys; they are ignored)."""
        return cls(
            task=data.get("task"), next_step=data.get("next_step"), kv=dict(data.get("kv") or {}),
            completed_steps=list(data.get("completed_steps") or []),
            history=[StepResult.from_dict(item) for item in data.get("history") or []],
            iterations=int(data.get("iterations") or 0),
            branch_return=dict(data.get("branch_return") or {}),
        )


class Evaluator:
    """The rules of one plan's steps; every method is pure apart from ``advance``, which
    changes the state it is given."""

    def __init__(self, steps: list[Step], max_iterations: int) -> None:
        self.steps = steps
        self.max_iterations = max_iterations
        self.names = [step.name for step in steps]
        self.by_name = {step.name: step for step in steps}

    def first_step(self) -> str:
        """The name of the step a fresh run starts at."""
        return self.names[0]

    def exhausted(self, state: PlanState) -> bool:
        """Whether the run has used its ``max_iterations`` bands and would need another."""
        return state.next_step is not None and state.iterations >= self.max_iterations

    def exhausted_error(self, state: PlanState) -> ErrorInfo:
        """The error of a run stopped by ``max_iterations``."""
        return ErrorInfo("MaxIterationsExceeded",
                         f"the plan ran {state.iterations} steps or bands (max_iterations="
                         f"{self.max_iterations}) and would go on to {state.next_step!r}; a route "
                         f"that loops back never stopped: check its predicate, or raise "
                         f"max_iterations")

    def band(self, state: PlanState) -> list[Step]:
        """The steps that run next: one step, or the parallel band starting at it."""
        assert state.next_step is not None, "a finished plan has no next band"
        start = self.names.index(state.next_step)
        band = [self.steps[start]]
        if band[0].parallel:
            for step in self.steps[start + 1:]:
                if not step.parallel:
                    break
                band.append(step)
        return band

    def inputs(self, step: Step, state: PlanState) -> tuple[Any, Any]:
        """The ``task`` and ``context`` ``step`` runs with, from its references."""
        task = self._resolve(step.task, step, state)
        if isinstance(step.context, list):
            parts = [_as_text(self._resolve(item, step, state), item) for item in step.context]
            return task, "\n\n".join(part for part in parts if part)
        return task, self._resolve(step.context, step, state)

    def advance(self, state: PlanState, band: list[Step], results: list[StepResult]
                ) -> dict[str, Any]:
        """Record a band's successful results in ``state`` and move it on.

        Returns the values to write to the Store (``{key: value}``; a None output writes
        nothing). Raises PlanRuntimeError when routing fails or an output to write looks like
        a checkpoint (the state is then unchanged).
        """
        for step, result in zip(band, results, strict=True):
            if step.writes and isinstance(result.output, dict) and CHECKPOINT_MARK in result.output:
                raise PlanRuntimeError(
                    f"step {step.name!r} ({target_label(step.target)}) output a dict with a "
                    f"{CHECKPOINT_MARK!r} key, which would stand in the Store as a run's "
                    f"checkpoint; nothing was written under {step.writes!r}: rename that key")
        following = self._next_after(state, band, results)
        writes: dict[str, Any] = {}
        for step, result in zip(band, results, strict=True):
            state.history.append(result)
            state.completed_steps.append(step.name)
            if step.writes and result.output is not None:
                state.kv[step.writes] = writes[step.writes] = result.output
        state.iterations += 1
        state.next_step = following
        return writes

    # -- routing ----------------------------------------------------------------

    def _next_after(self, state: PlanState, band: list[Step], results: list[StepResult]
                    ) -> str | None:
        last = band[-1]
        if not last.parallel:
            routed = self._route(last, results[-1].output)
            if routed is not None:
                if last.after_branches:
                    state.branch_return[routed] = last.after_branches
                return routed
            if last.name in state.branch_return:
                return state.branch_return.pop(last.name)
        position = self.names.index(last.name) + 1
        return self.names[position] if position < len(self.names) else None

    def _route(self, step: Step, output: Any) -> str | None:
        if step.routes:
            return choose_route(step, output)
        if step.routes_by:
            value = _field(step, step.routes_by, output)
            if value is None:
                return None
            if not isinstance(value, str) or value not in self.by_name:
                shown = summarize(value)
                raise PlanRuntimeError(
                    f"step {step.name!r} ({target_label(step.target)}): its output's "
                    f"{step.routes_by!r} is {shown!r}, which names no step"
                    + did_you_mean(shown if isinstance(shown, str) else "", self.names, "steps"))
            return value
        return None

    # -- references -------------------------------------------------------------

    def _resolve(self, reference: Any, step: Step, state: PlanState) -> Any:
        if isinstance(reference, FromPrev):
            return state.history[-1].output if state.history else state.task
        if isinstance(reference, FromStart):
            return state.task
        if isinstance(reference, FromStep):
            return self._latest(reference.name, step, state).output
        if isinstance(reference, FromParallelAll):
            band = self.band(PlanState(next_step=reference.name))
            return {member.name: self._latest(member.name, step, state).output for member in band}
        return reference

    def _latest(self, name: str, step: Step, state: PlanState) -> StepResult:
        for result in reversed(state.history):
            if result.name == name:
                return result
        ran = ", ".join(dict.fromkeys(result.name for result in state.history)) or "none"
        raise PlanRuntimeError(
            f"step {step.name!r} reads the output of {name!r}, which has not run in this run "
            f"(a route went around it); steps that ran: {ran}. Read from a step every path "
            f"runs, or use from_prev")


def choose_route(step: Step, output: Any) -> str | None:
    """The first target of ``step.routes`` whose predicate holds for ``output``, or None.

    Raises PlanRuntimeError naming the step when a predicate raises. (A durable runner calls
    this where the step ran and hands the answer to the evaluator, so workflow code never
    calls a predicate.)
    """
    for target, predicate in (step.routes or {}).items():
        try:
            if predicate(output):
                return target
        except Exception as exc:
            raise PlanRuntimeError(
                f"step {step.name!r} ({target_label(step.target)}): the route predicate "
                f"for {target!r} raised {type(exc).__name__}: {exc}") from exc
    return None


def pause_error(step: str, band: list[Step], message: str) -> ErrorInfo:
    """The error of a run paused at ``step`` of ``band`` (``PlanPaused`` with ``message``)."""
    where = f"step {step!r}"
    if len(band) > 1:
        where += f" (in the parallel band from {band[0].name!r}, which runs again whole)"
    reason = f": {message}" if message else ""
    return ErrorInfo("PlanPaused", f"paused at {where}{reason}", retryable=True)


def type_problem(value: Any, expected: Any) -> str | None:
    """Why ``value`` is not of type ``expected`` (``Any`` and ``str`` accept anything), or None."""
    if expected is Any or expected is str or expected is None:
        return None
    fields = output_fields(expected)
    if fields is not None and isinstance(value, dict):
        missing = [name for name in fields if name not in value]
        return f"it lacks the field(s) {', '.join(missing)} of {expected.__name__}" if missing else None
    if isinstance(expected, type) and not isinstance(value, expected):
        return f"it is a {type(value).__name__}, not a {expected.__name__}"
    return None


def _field(step: Step, name: str, output: Any) -> Any:
    if isinstance(output, dict):
        if name in output:
            return output[name]
        known = [str(key) for key in output]
    elif dataclasses.is_dataclass(output) and not isinstance(output, type):
        known = [item.name for item in dataclasses.fields(output)]
        if name in known:
            return getattr(output, name)
    else:
        known = []
    raise PlanRuntimeError(
        f"step {step.name!r} ({target_label(step.target)}) routes by the field {name!r}, but "
        f"its output ({type(output).__name__}) has none" + did_you_mean(name, known, "fields"))


def _as_text(value: Any, reference: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(reference, FromParallelAll) and isinstance(value, dict):
        return "\n\n".join(f"[{name}]\n{_as_text(output, None)}" for name, output in value.items())
    return json.dumps(jsonable(value), ensure_ascii=False)
