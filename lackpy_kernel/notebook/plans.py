"""The plan magics, for both hosts: ``%%step`` declares a step from a cell, ``%plan`` shows,
runs, fans out, resumes, restarts, saves and loads the plan. Runs checkpoint in the
workspace's ``.lackpy/plans.sqlite``; the stop button pauses a run with a checkpoint.

With ``--temporal ADDRESS``, ``%plan run`` starts the plan on Temporal and the cell ends at
once: a background task polls the run and updates its display as steps end, so the notebook
stays free; ``%plan resume K`` signals it, ``%plan status [K]`` asks where it is."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from lackpy_kernel.errors import LackpyError, PlanStepError, UsageError, error_text
from lackpy_kernel.kit.changes import Change
from lackpy_kernel.notebook.bundles import (
    change_bundle,
    plan_bundle,
    progress_bundle,
    remote_run_bundle,
    runs_bundle,
    table_bundle,
    tasks_bundle,
)
from lackpy_kernel.notebook.declare import (
    PLAN_OPTIONS,
    PLAN_REST,
    PLAN_SUMMARY,
    STEP_OPTIONS,
    STEP_SUMMARY,
    PlanCommand,
    magic,
    plan_command,
    step_line,
)
from lackpy_kernel.notebook.family import MagicFamily
from lackpy_kernel.notebook.port import NotebookError, NotebookPort
from lackpy_kernel.notebook.syntax import MagicLine, parse_param

if TYPE_CHECKING:  # the engines load with the first %%step or %plan: start-up stays short
    from lackpy_kernel.engines import Envelope, Plan, Step
    from lackpy_kernel.engines.temporal import RemoteRuns, TemporalRun, TemporalRunner
    from lackpy_kernel.notebook.draft import PlanDraft

__all__ = ["LiveDisplay", "PlanMagics", "TaskLog", "envelope_failure", "envelope_state", "whole_number"]

OnStep = Callable[[str, str, float | None], None]
MANY_EVERY_S = 0.25  # a run-many's live table is redrawn at most this often (tasks may be many)
Runner = Callable[[OnStep], Awaitable["Envelope"]]
log = logging.getLogger(__name__)


class PlanMagics(MagicFamily):
    """``%%step`` and ``%plan`` over a PlanDraft of the notebook's session and service."""

    @functools.cached_property
    def plans(self) -> PlanDraft:
        """The plan the notebook's %%step cells declared."""
        from lackpy_kernel.notebook.draft import PlanDraft

        return PlanDraft(self.service)

    @functools.cached_property
    def _following(self) -> set[asyncio.Task[None]]:
        """The remote runs whose displays are being kept up to date."""
        return set()

    @functools.cached_property
    def remote(self) -> RemoteRuns:
        """The runs this notebook started on Temporal; MissingExtraError without the
        temporal extra."""
        from lackpy_kernel.engines.temporal import RemoteRuns  # noqa: PLC0415 - optional extra

        return RemoteRuns()

    @magic("step", STEP_SUMMARY, options=STEP_OPTIONS, rest="NAME", cell=True)
    def step(self, line: MagicLine, body: str) -> None:
        from lackpy_kernel.notebook.draft import step_from_cell

        name, options = step_line(self._magic("step"), line)
        self._declare(step_from_cell(
            name, body, kit=options.get("--kit") or self.session.kit,
            writes=options.get("--writes"), parallel=bool(options.get("--parallel")),
            task=options.get("--task"), context=options.get("--context")))

    @magic("plan", PLAN_SUMMARY, options=PLAN_OPTIONS, rest=PLAN_REST)
    async def plan(self, line: MagicLine) -> None:
        command = plan_command(self._magic("plan"), line)
        action = command.action.replace("-", "_")
        await getattr(self, f"_plan_{action}")(command)

    # -- the actions ------------------------------------------------------------

    async def _plan_show(self, command: PlanCommand) -> None:
        title = f"plan {self.plans.name}" if self.plans.name else "plan"
        self.port.display(plan_bundle(self.plans.rows(), title))

    async def _plan_gate(self, command: PlanCommand) -> None:
        name, *prompt = command.words
        if not name.isidentifier():
            raise UsageError(f"name the gate with one name such as review, not {name!r}")
        from lackpy_kernel.engines import Approval, Step

        self._declare(Step(Approval(" ".join(prompt) or "waiting for approval"), name=name))

    async def _plan_drop(self, command: PlanCommand) -> None:
        self.plans.drop(command.word)
        self.port.display(plan_bundle(self.plans.rows(), "plan"))

    async def _plan_clear(self, command: PlanCommand) -> None:
        self.plans.clear()
        self.port.display({"text/plain": "the plan has no steps now"})

    async def _plan_save(self, command: PlanCommand) -> None:
        path = self.plans.save(command.word)
        shown = path.relative_to(self.plans.library.workspace)
        self.port.display({"text/plain": f"saved {shown}; `lackpy plan run {command.word} "
                                         f"TASK` runs it from a shell"})

    async def _plan_load(self, command: PlanCommand) -> None:
        self.plans.load(command.word)
        self.port.display(plan_bundle(self.plans.rows(), f"plan {command.word}"))

    async def _plan_status(self, command: PlanCommand) -> None:
        key = command.word or None
        runner = self._remote_runner(key, command)
        if runner is not None and key is not None:
            run = await runner.status(key)
            self.port.display(remote_run_bundle(f"{key} on Temporal at {runner.address}", run,
                                                trace=True))
        elif runner is not None:
            rows = [[name, status] for name, status in await runner.runs()]
            self.port.display(table_bundle(["key", "status on Temporal"], rows))
        else:
            remote = await self._remote_runs() if key is None else []
            runs = self.plans.status(key)
            self.port.display(runs_bundle([*runs, *remote]))
            if key is not None and runs[0].change is not None:
                self.port.display(change_bundle(Change.from_frame(runs[0].change)))

    async def _plan_run(self, command: PlanCommand) -> None:
        key = command.options.get("--key")
        task = parse_param(f"task={command.word}")[1]
        plan = self.plans.plan(key=key)
        runner = self._remote_runner(None, command)
        if runner is not None:
            key = await runner.start(plan, task)
            self.remote.remember(key, runner)
            self._follow(runner, key, f"plan on {task!r}, key {key}, on Temporal at "
                                      f"{runner.address}")
            self.port.result(key, shown=True)
            return
        await self._live(plan, key, f"plan on {task!r}" + (f", key {key}" if key else ""),
                         lambda on_step: plan.arun(task, on_step=on_step))

    async def _plan_resume(self, command: PlanCommand) -> None:
        runner = self._remote_runner(command.word, command)
        approve = bool(command.options.get("--approve"))
        if runner is not None:
            await runner.signal_resume(command.word, approve=approve)
            self._follow(runner, command.word, f"resuming {command.word} on Temporal at "
                                               f"{runner.address}")
            return
        plan = self.plans.for_key(command.word, resume=True)
        (run,) = self.plans.status(command.word)
        await self._live(plan, command.word, f"resuming {command.word}",
                         lambda on_step: plan.arun(on_step=on_step, approve=approve),
                         run.completed_steps)

    async def _plan_restart(self, command: PlanCommand) -> None:
        plan = self.plans.for_key(command.word, resume=False)
        await self._live(plan, command.word, f"restarting {command.word}",
                         lambda on_step: plan.arestart(on_step=on_step))

    async def _plan_run_many(self, command: PlanCommand) -> None:
        inputs = await self.port.variable(command.word)
        if not isinstance(inputs, list | tuple):
            raise UsageError(f"%plan run-many takes a list; {command.word} is a "
                             f"{type(inputs).__name__}")
        key = command.options.get("--key")
        plan = self.plans.plan(key=key, fork=key is not None)
        concurrency = whole_number(command.options, "--concurrency")
        tasks = TaskLog(list(inputs))
        title = f"plan on {len(tasks.tasks)} task{'' if len(tasks.tasks) == 1 else 's'}" + (
            f", keys {key}:..." if key else "")
        live = LiveDisplay(self.port, title, tasks, tasks_bundle, every=MANY_EVERY_S)
        try:
            envelopes = await plan.arun_many(list(inputs), concurrency=concurrency, on_task=live)
        except asyncio.CancelledError:
            tasks.interrupted()
            live.finish("interrupted")
            ended = sum(status not in ("waiting", "interrupted") for status in tasks.status)
            raise NotebookError("KeyboardInterrupt", f"interrupted: {ended} of "
                                f"{len(tasks.tasks)} tasks had ended") from None
        live.finish(tasks.state())
        self.port.result(envelopes, shown=True)

    # -- remote runs ------------------------------------------------------------

    def _remote_runner(self, key: str | None, command: PlanCommand) -> TemporalRunner | None:
        """The runner for ``--temporal``, else the one that started the run ``key`` here,
        else None (a local run)."""
        address = command.options.get("--temporal")
        if address is None and (key is None or "remote" not in self.__dict__):
            return None
        return self.remote.runner_for(key or "", address, command.options.get("--task-queue"))

    async def _remote_runs(self) -> list[TemporalRun]:
        if "remote" not in self.__dict__:
            return []
        runs = []
        for key in self.remote.keys():
            runner = self.remote.runner_for(key)
            if runner is not None:
                runs.append(await runner.status(key))
        return runs

    def _follow(self, runner: TemporalRunner, key: str, title: str) -> None:
        """Show the run ``key`` in a display kept up to date by a background task, so the
        cell ends now and the notebook stays free."""
        display_id = uuid.uuid4().hex
        self.port.display({"text/plain": f"{title}: started"}, display_id)

        def show(run: TemporalRun) -> None:
            self.port.update_display(remote_run_bundle(title, run), display_id)

        async def follow() -> None:
            try:
                await runner.watch(key, show)
            except LackpyError as exc:  # the server went away, no worker answers
                self.port.update_display(
                    {"text/plain": f"{title}\n{type(exc).__name__}: {error_text(exc)}"},
                    display_id)

        task = asyncio.ensure_future(follow())
        self._following.add(task)
        task.add_done_callback(self._followed)

    async def aclose(self) -> None:
        """Stop following the remote runs and wait until their tasks end; the runs go on on
        Temporal (``%plan status K`` in another session reaches them)."""
        following = list(self.__dict__.get("_following", ()))
        for task in following:
            task.cancel()
        await asyncio.gather(*following, return_exceptions=True)

    def _followed(self, task: asyncio.Task[None]) -> None:
        self._following.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("lackpy: following a remote plan run failed", exc_info=task.exception())

    # -- helpers ----------------------------------------------------------------

    def _declare(self, step: Step) -> None:
        self.plans.declare(step)
        number = [s.name for s in self.plans.steps].index(step.name) + 1
        row = self.plans.rows()[number - 1]
        self.port.display(plan_bundle([row], f"step {number} of {len(self.plans.steps)}"))

    async def _live(self, plan: Plan, key: str | None, title: str, run: Runner,
                    done_before: list[str] | None = None) -> None:
        """Run with a display updated as each step starts and ends; show the outcome."""
        from lackpy_kernel.notebook.draft import StepLog

        steps = StepLog([step.name for step in plan.steps], done_before)
        live = LiveDisplay(self.port, title, steps, progress_bundle)
        try:
            envelope = await run(live)
        except asyncio.CancelledError:
            steps.interrupted()
            live.finish("interrupted")
            resume = (f"paused with a checkpoint: %plan resume {key} continues" if key else
                      "stopped; it had no --key, so there is no checkpoint to resume")
            raise NotebookError("KeyboardInterrupt",
                                f"interrupted: the plan is {resume}") from None
        live.finish(envelope_state(envelope))
        self._outcome(envelope, key)

    def _outcome(self, envelope: Envelope, key: str | None) -> None:
        error = envelope.error
        if error is None:
            self.port.result(envelope.payload)
            return
        hint = f"; %plan resume {key} continues" if key else "; run it with --key K to resume it"
        change = self.plans.status(key)[0].change if key and error.type == "PlanPaused" else None
        if change is not None:  # the diff as a person approves it, then how to approve it
            self.port.display(change_bundle(Change.from_frame(change)))
            self.port.stream("stdout", f"{error.message.splitlines()[0]} (%plan resume {key} "
                                       f"--approve)\n")
            return
        if error.type == "PlanPaused":
            self.port.stream("stdout", f"{error.message}{hint}\n")
            return
        raise envelope_failure(envelope, hint if key else "")


class LiveDisplay:
    """A display that follows a run (call it as the run's ``on_step`` or ``on_task``): it
    shows ``title``, then after each event it hands to ``log`` (a StepLog, TaskLog or
    TurnLog) ``bundle(title, log.rows())``: at most once every ``every`` seconds, the latest
    event always shown in the end."""

    def __init__(self, port: NotebookPort, title: str, log: Any,
                 bundle: Callable[..., dict[str, Any]], every: float = 0.0) -> None:
        self.port, self.title, self.log, self.bundle, self.every = port, title, log, bundle, every
        self.display_id = uuid.uuid4().hex
        self.shown_at = 0.0
        self.pending: asyncio.TimerHandle | None = None
        port.display({"text/plain": title}, self.display_id)

    def __call__(self, *event: Any) -> None:
        self.log(*event)
        self.redraw()

    def redraw(self, now: bool = False) -> None:
        """Show the log's rows: ``now``, or once ``every`` seconds have passed since the last
        time they were shown."""
        if now:
            self._cancel()
        elif self.pending is not None:
            return
        wait = 0.0 if now else self.shown_at + self.every - time.monotonic()
        if wait <= 0:
            self._show()
        else:
            self.pending = asyncio.get_running_loop().call_later(wait, self._show)

    def _show(self) -> None:
        self.pending = None
        self.shown_at = time.monotonic()
        self.port.update_display(self.bundle(self.title, self.log.rows()), self.display_id)

    def _cancel(self) -> None:
        if self.pending is not None:
            self.pending.cancel()
            self.pending = None

    def finish(self, state: str) -> None:
        """The display goes back to its first text and the final table (and the Lab
        extension's card, in ``state``) follows, so a notebook shows the same outputs
        whether or not its front end applied the updates."""
        self._cancel()
        self.port.update_display({"text/plain": self.title}, self.display_id)
        self.port.display(self.bundle("", self.log.rows(), state=state))


class TaskLog:
    """A ``%plan run-many``'s tasks as they start and end (call it as ``arun_many``'s
    ``on_task``): one row per task, with its status, output or error, and time."""

    def __init__(self, tasks: list[Any]) -> None:
        self.tasks = [repr(task) for task in tasks]
        self.status = ["waiting"] * len(tasks)
        self.outcome: list[Any] = [""] * len(tasks)
        self.ms = [""] * len(tasks)

    def __call__(self, index: int, envelope: Envelope | None, ms: float | None) -> None:
        if envelope is None:
            self.status[index] = "running"
            return
        error = envelope.error
        self.status[index] = envelope_state(envelope)
        self.outcome[index] = envelope.payload if error is None else f"{error.type}: {error.message}"
        self.ms[index] = "" if ms is None else f"{ms:.1f} ms"

    def interrupted(self) -> None:
        """Mark the tasks that were running as stopped by an interrupt."""
        self.status = ["interrupted" if status == "running" else status for status in self.status]

    def state(self) -> str:
        """How the whole run ended: done when every task is done, else failed or paused."""
        return next((state for state in ("failed", "paused") if state in self.status), "done")

    def rows(self) -> list[list[Any]]:
        """task, status, output / error, ms (last, so its varying width only pads the line)."""
        return [list(row) for row in zip(self.tasks, self.status, self.outcome, self.ms,
                                         strict=True)]


def envelope_failure(envelope: Envelope, hint: str = "") -> NotebookError:
    """The error a failed run ends its cell with: the run's own error name and message
    (then ``hint``); IPython raises the PlanStepError behind it."""
    try:
        envelope.raise_for_error()
    except PlanStepError as exc:
        error = exc.error
        return NotebookError(error.type, error.message + hint, cause=exc)
    raise ValueError("envelope_failure takes the envelope of a failed run")


def envelope_state(envelope: Envelope) -> str:
    """How a run ended, as its progress card says: done, paused or failed."""
    error = envelope.error
    return "done" if error is None else "paused" if error.type == "PlanPaused" else "failed"


def whole_number(options: dict[str, Any], flag: str) -> int | None:
    """The whole number (at least 1) option ``flag`` gave, or None; UsageError otherwise."""
    text = options.get(flag)
    if text is None:
        return None
    if not str(text).isdigit() or int(text) < 1:
        raise UsageError(f"{flag} takes a whole number of at least 1, not {text!r}")
    return int(text)
