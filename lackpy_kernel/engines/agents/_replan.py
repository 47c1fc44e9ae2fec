"""ReplanEngine: a planner decides each round's tasks after seeing what the rounds before gave.

The planner is the tool named ``planner_name`` among the agent's tools: an agent with
``output=PlanRound``, or a callable ``planner(task, history)`` returning a PlanRound (or its
dict). Each round the planner sees the task, the other tools' schemas and the history (each
earlier round's tasks with their outputs or errors) and answers with tasks, or with
``done=True`` and the answer. A round's ``parallel=True`` tasks run concurrently, then the
others in order, each through the agent's Toolset (a kit tool as a validated one-line
program in the sandbox; ``tool="lackpy"`` runs the program in ``kwargs["program"]``,
validated first). With a Store and a checkpoint key the run checkpoints after every round,
through the plans' Checkpointer, and ``resume=True`` continues at the next round.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import inspect
import json
import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from lackpy_kernel.errors import PlanCompileError, UsageError
from lackpy_kernel.infer.models import ToolCall
from lackpy_kernel.run.plain import jsonable

from ..plans import Checkpointer, Envelope, ErrorInfo, PlanState, StepResult, Store, error_info
from ._events import RunContext
from ._structured import from_data
from ._tools import LACKPY_TOOL, CallOutcome, result_text

__all__ = ["PlanRound", "ReplanEngine", "Task"]

ROUND = "round"  # the one step name a replan checkpoint knows
DEFAULT_MAX_ROUNDS = 20


@dataclass
class Task:
    """One tool call planned for a round: ``tool`` names one of the agent's tools (or
    ``lackpy``, with ``kwargs={"program": ...}``); ``kwargs`` must fit its schema;
    ``parallel=True`` runs it alongside the round's other parallel tasks."""

    tool: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    parallel: bool = False


@dataclass
class PlanRound:
    """The planner's answer for a round: the tasks to run, or ``done=True`` with the answer.
    Tasks that depend on each other belong in different rounds."""

    tasks: list[Task] = field(default_factory=list)
    done: bool = False
    answer: Any = None


class ReplanEngine:
    """The engine of an agent whose planner decides each round (see the module doc):
    ``Agent(ReplanEngine(store=Store("runs.sqlite"), checkpoint_key="k"), tools=[planner,
    "read_file", summarise])``. ``max_rounds`` caps the rounds.

    Raises PlanCompileError at construction for options that cannot work together.
    """

    needs_lackpy_tool = True  # a Task may always carry a lackpy program

    def __init__(self, *, planner_name: str = "planner", store: Store | None = None,
                 checkpoint_key: str | None = None, resume: bool = False,
                 max_rounds: int = DEFAULT_MAX_ROUNDS) -> None:
        if not isinstance(max_rounds, int) or isinstance(max_rounds, bool) or max_rounds < 1:
            raise PlanCompileError(f"max_rounds={max_rounds!r} must be a whole number of at "
                                   f"least 1; did you mean max_rounds={DEFAULT_MAX_ROUNDS}?")
        if checkpoint_key is not None and store is None:
            raise PlanCompileError("checkpoint_key= without store= has nowhere to checkpoint; "
                                   "did you mean store=Store(db='runs.sqlite')?")
        if resume and checkpoint_key is None:
            raise PlanCompileError("resume=True needs store= and checkpoint_key= to resume from")
        self.planner_name = planner_name
        self.store = store
        self.checkpoint_key = checkpoint_key
        self.resume = resume
        self.max_rounds = max_rounds

    def __repr__(self) -> str:
        return f"ReplanEngine(planner_name={self.planner_name!r}, key={self.checkpoint_key!r})"

    async def arun(self, context: RunContext) -> Envelope:
        """Plan and run rounds until the planner is done; the Envelope's payload is its
        answer, ``history`` one StepResult per round. A planner that fails, or
        ``max_rounds``, is the Envelope's error. Raises UsageError when the agent has no
        planner, ConcurrentPlanRunError or PlanResumeError as a plan does."""
        planner = context.tools.tools.get(self.planner_name)
        if planner is None or planner.kind not in ("agent", "callable"):
            raise UsageError(f"ReplanEngine needs a tool named {self.planner_name!r} among the "
                             f"agent's tools: an Agent with output=PlanRound, or a function "
                             f"planner(task, history) returning a PlanRound")
        run = _Rounds(self, context, planner.target)
        state = PlanState(context.task, next_step=ROUND)
        if self.store is None or self.checkpoint_key is None:
            return await run.drive(state, None)
        checkpointer = Checkpointer(self.store, self.checkpoint_key, uuid.uuid4().hex, "replan",
                                    {ROUND: self._fingerprint(context)})
        try:
            state, status = checkpointer.claim(state, resume=self.resume, task_given=True)
            if status == "done":
                return run.envelope(state, None)
            async with checkpointer.beating():
                return await run.drive(state, checkpointer)
        finally:
            checkpointer.release()

    def _fingerprint(self, context: RunContext) -> str:
        """What a resumed run must share with the one that checkpointed: planner and tools."""
        text = json.dumps([self.planner_name, sorted(context.tools.names)])
        return hashlib.sha256(text.encode()).hexdigest()[:16]


class _Rounds:
    """One run's rounds: ask the planner, run its tasks, checkpoint."""

    def __init__(self, engine: ReplanEngine, context: RunContext, planner: Any) -> None:
        self.engine = engine
        self.context = context
        self.planner = planner

    async def drive(self, state: PlanState, checkpointer: Checkpointer | None) -> Envelope:
        try:
            while True:
                number = state.iterations + 1
                if number > self.engine.max_rounds:
                    error = ErrorInfo("MaxRoundsExceeded", f"the planner was not done after "
                                      f"max_rounds={self.engine.max_rounds} rounds")
                    return self._end(state, checkpointer, "failed", error=error)
                self.context.emit("turn_started", number)
                started = time.perf_counter()
                try:
                    planned = await self._plan(state)
                except Exception as exc:  # the planner's own failure ends the run as a value
                    return self._end(state, checkpointer, "failed", error=error_info(exc))
                if planned.done:
                    answer = planned.answer if planned.answer is not None else _last_outputs(state)
                    self._record(state, number, {"round": number, "tasks": [], "done": True,
                                                 "answer": jsonable(answer)}, [], started)
                    state.next_step = None
                    return self._end(state, checkpointer, "done", payload=answer)
                outcomes = await self._run_tasks(number, planned.tasks)
                tasks = [_task_record(task, outcome)
                         for task, outcome in zip(planned.tasks, outcomes, strict=True)]
                self._record(state, number, {"round": number, "tasks": tasks, "done": False},
                             [outcome.entry for outcome in outcomes], started)
                if checkpointer is not None:
                    checkpointer.save(state, "running")
        except BaseException as exc:
            if checkpointer is not None:
                stopped = isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt))
                with contextlib.suppress(Exception):
                    checkpointer.save(state, "paused" if stopped else "failed",
                                      error=error_info(exc))
            raise

    async def _plan(self, state: PlanState) -> PlanRound:
        history = [result.output for result in state.history]
        planner = self.planner
        if hasattr(planner, "arun"):  # an Agent
            envelope = await planner.arun(self._prompt(history))
            if not envelope.ok:
                raise RuntimeError(f"the planner failed: {envelope.error.type}: "
                                   f"{envelope.error.message}")
            planned = envelope.payload
        elif inspect.iscoroutinefunction(planner):
            planned = await planner(self.context.task, history)
        else:
            planned = await asyncio.to_thread(planner, self.context.task, history)
        if dataclasses.is_dataclass(planned) and not isinstance(planned, type):
            planned = dataclasses.asdict(planned)
        round_: PlanRound = from_data(PlanRound, planned, "the planner's round")
        self.context.emit("turn_finished", state.iterations + 1, text=_describe(round_))
        return round_

    async def _run_tasks(self, number: int, tasks: list[Task]) -> list[CallOutcome]:
        calls = [ToolCall(f"round{number}_{index}", task.tool, task.kwargs)
                 for index, task in enumerate(tasks, 1)]

        async def one(call: ToolCall) -> CallOutcome:
            self.context.emit("call_started", number, call=call)
            if call.name == self.engine.planner_name:
                outcome = CallOutcome.failed(call.name, call.arguments, "the planner plans; it "
                                             "is not a task", kind="UnknownTool")
            else:
                outcome = await self.context.tools.call(call.name, call.arguments)
            self.context.emit("call_finished", number, call=call, outcome=outcome)
            return outcome

        together = [call for call, task in zip(calls, tasks, strict=True) if task.parallel]
        results = dict(zip((call.id for call in together),
                           await asyncio.gather(*(one(call) for call in together)), strict=True))
        for call, task in zip(calls, tasks, strict=True):
            if not task.parallel:
                results[call.id] = await one(call)
        return [results[call.id] for call in calls]

    def _prompt(self, history: list[dict[str, Any]]) -> str:
        tools = [{"name": schema.name, "description": schema.description,
                  "kwargs": schema.parameters}
                 for schema in self.context.tools.schemas(exclude=(self.engine.planner_name,))]
        shown = [{**record, "tasks": [{**task, "output": result_text(task["output"])}
                                      for task in record.get("tasks", [])]}
                 for record in history]
        return (f"Task: {self.context.task}\n\n"
                f"Tools a round's tasks may call (kwargs is the JSON schema of their arguments; "
                f"{LACKPY_TOOL!r} runs a lackpy program with the tools as functions):\n"
                f"{json.dumps(tools, ensure_ascii=False)}\n\n"
                f"Rounds so far, with each task's output or error:\n"
                f"{json.dumps(shown, ensure_ascii=False) if shown else '(none yet)'}\n\n"
                f"Plan the next round: the tasks to run now (parallel=true for those that do not "
                f"depend on each other), or done=true with the answer.")

    def _record(self, state: PlanState, number: int, record: dict[str, Any],
                entries: list[Any], started: float) -> None:
        ms = round((time.perf_counter() - started) * 1000, 3)
        state.history.append(StepResult(f"{ROUND} {number}", record, ms=ms, trace=entries))
        state.completed_steps.append(ROUND)
        state.iterations += 1

    def _end(self, state: PlanState, checkpointer: Checkpointer | None, status: str, *,
             payload: Any = None, error: ErrorInfo | None = None) -> Envelope:
        if checkpointer is not None:
            checkpointer.save(state, status, error=error)
        return self.envelope(state, payload, error)

    def envelope(self, state: PlanState, payload: Any, error: ErrorInfo | None = None
                 ) -> Envelope:
        calls = [entry for result in state.history for entry in result.trace]
        trace = [replace(entry, step=index) for index, entry in enumerate(calls)]
        if payload is None and state.next_step is None and state.history:
            payload = state.history[-1].output.get("answer")
        return Envelope(payload, error, trace, list(state.history),
                        {"rounds": len(state.history), "tool_calls": len(trace)})


def _task_record(task: Task, outcome: CallOutcome) -> dict[str, Any]:
    return {"tool": task.tool, "kwargs": jsonable(task.kwargs), "parallel": task.parallel,
            "ok": not outcome.is_error,
            "output": None if outcome.is_error else jsonable(outcome.output),
            "error": outcome.content if outcome.is_error else None}


def _last_outputs(state: PlanState) -> Any:
    if not state.history:
        return None
    outputs = [task["output"] for task in state.history[-1].output.get("tasks", [])]
    return outputs[0] if len(outputs) == 1 else outputs


def _describe(round_: PlanRound) -> str:
    if round_.done:
        return "done"
    return ", ".join(f"{task.tool}{' (parallel)' if task.parallel else ''}" for task in round_.tasks)
