"""The workflows: a plan evaluated in workflow code, its steps run as activities.

``PlanWorkflow`` drives one plan with the local engine's ``Evaluator`` (bands, sentinels,
routes, ``max_iterations``); each step is the ``lackpy.step`` activity
(``StepActivities.run_step``: a ``StepRequest`` in, a ``StepAnswer`` out), each band's writes
the ``lackpy.commit`` activity (``StepActivities.commit``), an ``Approval`` (or a step raising
``PlanPaused``) a wait for the ``resume`` signal. When the run ends (however it ends), the
``lackpy.forget`` activity drops the commit records its steps left in the workers' Store.
``PlanManyWorkflow`` runs one child PlanWorkflow per input, a few at a time.

This code is replayed: it reads no clock, does no I/O, draws no random numbers and calls
none of the plan's Python code. What it needs comes in: the plan, the task and the step
policies in the request; each step's output, and which of its ``routes`` holds for that
output (the worker evaluates the predicates where the step ran), in the activity's answer,
recorded in the workflow's history. The callables a plan names are placeholders here; the
workers' registries hold the real ones. The whole of ``lackpy_kernel`` is passed through
Temporal's workflow sandbox, so the evaluator is the very module the local engine uses.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from lackpy_kernel.errors import LackpyError, PlanCompileError, PlanRuntimeError

    from ..plans import (
        Approval,
        Envelope,
        ErrorInfo,
        Evaluator,
        PlanState,
        Step,
        StepResult,
        pause_error,
        step_from_dict,
    )
    from ._activities import (
        CommitRequest,
        ForgetRequest,
        StepActivities,
        StepPolicy,
        StepRequest,
    )

__all__ = [
    "MANY_WORKFLOW",
    "PLAN_WORKFLOW",
    "ManyRequest",
    "PlanManyWorkflow",
    "PlanRequest",
    "PlanWorkflow",
]

PLAN_WORKFLOW = "lackpy.plan"
MANY_WORKFLOW = "lackpy.plan-many"
RESUME_SIGNAL = "resume"
APPROVE_SIGNAL = "approve"  # resume, letting the file change the run paused on land
STATUS_QUERY = "status"
SETTLED_UPDATE = "settled"



@dataclass
class PlanRequest:
    """One plan run: ``plan`` (``Plan.to_dict()``), its ``task``, and ``policies``: a
    ``StepPolicy.to_dict()`` by step name, ``"*"`` for every step."""

    plan: dict[str, Any]
    task: Any = None
    policies: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class ManyRequest:
    """Many plan runs: the ``plans`` (``Plan.to_dict()`` each), the ``runs`` as (plan's
    index, task), at most ``concurrency`` at once (None: all), with ``policies`` as in a
    PlanRequest."""

    plans: list[dict[str, Any]]
    runs: list[tuple[int, Any]]
    concurrency: int | None = None
    policies: dict[str, dict[str, Any]] = field(default_factory=dict)


# failure_exception_types: a bug in this code fails the run with its error, rather than
# retrying the workflow task until a fixed worker is deployed (Temporal's default).
@workflow.defn(name=PLAN_WORKFLOW, failure_exception_types=[Exception])
class PlanWorkflow:
    """One plan run: a PlanRequest in, its Envelope out. The ``status`` query tells where it
    is; the ``settled`` update returns once it pauses (again) or ends; the ``resume`` signal
    ends a pause."""

    def __init__(self) -> None:
        self._plan_name: str | None = None
        self._steps: list[str] = []
        self._state = PlanState()
        self._status = "running"
        self._running: list[str] = []
        self._failed: list[StepResult] = []
        self._error: ErrorInfo | None = None
        self._attempts: dict[str, int] = {}
        self._workers: dict[str, str] = {}
        self._pauses = 0
        self._resumes = 0
        self._routes: dict[str, str | None] = {}  # each step's latest route, as its worker chose
        self._change: dict[str, Any] | None = None  # the change the run paused on, and its step
        self.approved: dict[str, str] = {}  # step -> the digest of its approved change

    @workflow.run
    async def run(self, request: PlanRequest) -> Envelope:
        """Run the plan of ``request`` to its end; returns its Envelope."""
        plan = request.plan
        self._plan_name = plan.get("name")
        evaluator = _evaluator(plan, self._routes)
        self._steps = list(evaluator.names)
        self._state = PlanState(request.task, next_step=evaluator.first_step())
        runner = _Steps(self, plan, request.policies)
        try:
            envelope = await self._drive(evaluator, runner)
        finally:
            await runner.forget()
        self._status = "done" if envelope.ok else "failed"
        await workflow.wait_condition(workflow.all_handlers_finished)
        return envelope

    async def _drive(self, evaluator: Evaluator, runner: _Steps) -> Envelope:
        state = self._state
        while state.next_step is not None:
            if evaluator.exhausted(state):
                self._error = evaluator.exhausted_error(state)
                return Envelope.from_steps(state.history, self._error)
            band = evaluator.band(state)
            with _plan_bugs_fail_the_run():
                inputs = [evaluator.inputs(step, state) for step in band]
            results = await self._run_band(band, inputs, runner)
            failed = [result for result in results if not result.ok]
            if failed:
                self._failed, self._error = results, failed[0].error
                return Envelope.from_steps(state.history, self._error, results)
            band_number = state.iterations + 1
            with _plan_bugs_fail_the_run():
                writes = evaluator.advance(state, band, results)
            if writes:
                await runner.commit(band_number, writes)
        return Envelope.from_steps(state.history)

    async def _run_band(self, band: list[Step], inputs: list[tuple[Any, Any]],
                        runner: _Steps) -> list[StepResult]:
        """The band's results; a pause waits for ``resume`` and runs the whole band again."""
        while True:
            self._running = [step.name for step in band]
            outcomes = await asyncio.gather(*(
                runner.run(step, task, context, self._state)
                for step, (task, context) in zip(band, inputs, strict=True)))
            self._running = []
            paused = next((outcome for outcome in outcomes if isinstance(outcome, _Pause)), None)
            if paused is None:
                return [outcome for outcome in outcomes if isinstance(outcome, StepResult)]  # all
            self._change = {**paused.change, "step": paused.step} if paused.change else None
            await self._pause(pause_error(paused.step, band, paused.message), paused.step)

    async def _pause(self, error: ErrorInfo, step: str) -> None:
        self._status, self._error = "paused", error
        self._pauses += 1
        seen = self._resumes
        await workflow.wait_condition(lambda: self._resumes > seen)
        self._status, self._error, self._change = "running", None, None
        self._state.approved = step  # resuming is the approval

    @workflow.signal(name=RESUME_SIGNAL)
    def resume(self) -> None:
        """End the pause the run is in (a resume while it is not paused does nothing)."""
        if self._status == "paused":
            self._resumes += 1

    @workflow.signal(name=APPROVE_SIGNAL)
    def approve(self) -> None:
        """End the pause, letting exactly the file change the run paused on land (a step
        that then makes another change pauses again)."""
        if self._status == "paused" and self._change is not None:
            self.approved[self._change["step"]] = self._change["digest"]
        self.resume()

    @workflow.query(name=STATUS_QUERY)
    def status(self) -> dict[str, Any]:
        """Where the run is: status, steps, the step results so far, attempts, workers."""
        state = self._state
        return {
            "kind": "plan", "plan": self._plan_name, "status": self._status,
            "steps": self._steps, "next_step": state.next_step, "running": self._running,
            "completed_steps": list(state.completed_steps), "task": state.task,
            "history": [result.to_dict() for result in state.history],
            "failed": [result.to_dict() for result in self._failed],
            "error": self._error.to_dict() if self._error else None,
            "attempts": dict(self._attempts), "workers": dict(self._workers),
            "pauses": self._pauses,
            "change": self._change["change"] if self._change else None,
        }

    # Clients whose run ended before this update answered read the run's result instead.
    @workflow.update(name=SETTLED_UPDATE,
                     unfinished_policy=workflow.HandlerUnfinishedPolicy.ABANDON)
    async def settled(self, pauses_seen: int) -> dict[str, Any]:
        """The status once the run has ended, or paused more than ``pauses_seen`` times."""
        await workflow.wait_condition(
            lambda: self._status in ("done", "failed")
            or (self._status == "paused" and self._pauses > pauses_seen))
        return self.status()


@workflow.defn(name=MANY_WORKFLOW, failure_exception_types=[Exception])
class PlanManyWorkflow:
    """Many plan runs as child workflows ``{id}/{n}``, at most ``concurrency`` at once.

    A ManyRequest in; one Envelope per run out, in order, a run's failure (even of its
    workflow) in its slot.
    """

    def __init__(self) -> None:
        self._total = 0
        self._finished = 0
        self._failed = 0
        self._in_flight = 0
        self._most_in_flight = 0

    @workflow.run
    async def run(self, request: ManyRequest) -> list[Envelope]:
        """Run every child; returns their Envelopes."""
        runs = request.runs
        self._total = len(runs)
        limit = asyncio.Semaphore(request.concurrency or max(len(runs), 1))
        parent = workflow.info().workflow_id

        async def one(number: int, plan_index: int, task: Any) -> Envelope:
            async with limit:
                self._in_flight += 1
                self._most_in_flight = max(self._most_in_flight, self._in_flight)
                try:
                    envelope = await workflow.execute_child_workflow(
                        PlanWorkflow.run,
                        PlanRequest(request.plans[plan_index], task, request.policies),
                        id=f"{parent}/{number}")
                except ChildWorkflowError as exc:
                    envelope = Envelope(error=_failure_info(exc))
                finally:
                    self._in_flight -= 1
                self._finished += 1
                self._failed += envelope.error is not None
                return envelope

        return list(await asyncio.gather(*(one(number, plan_index, task)
                                           for number, (plan_index, task) in enumerate(runs))))

    @workflow.query(name=STATUS_QUERY)
    def status(self) -> dict[str, Any]:
        """How many runs there are, have finished, failed, run now and ran at most at once."""
        return {"kind": "many", "total": self._total, "finished": self._finished,
                "failed": self._failed, "in_flight": self._in_flight,
                "most_in_flight": self._most_in_flight}


class _Pause:
    """A step of the band asked to pause."""

    def __init__(self, step: str, message: str, change: dict[str, Any] | None = None) -> None:
        self.step = step
        self.message = message
        self.change = change  # a file change it waits on: its digest and the change


class _Steps:
    """Runs a plan's steps as activities, with each step's policy."""

    def __init__(self, owner: PlanWorkflow, plan: Mapping[str, Any],
                 policies: Mapping[str, Any]) -> None:
        self.owner = owner
        self.kit = plan.get("kit")
        self.step_data = {item["name"]: item for item in plan["steps"]}  # as the workers read it
        self.policies = policies
        self.started = 0  # activities scheduled: their ids, unique in the workflow
        # each step's commit records (its ledger) while its run waits on approvals: a step
        # run again after a pause keeps the calls it was allowed, as a local run does
        self.ledgers: dict[str, str] = {}
        self.used: list[str] = []  # every ledger the run's steps used

    async def run(self, step: Step, task: Any, context: Any, state: PlanState
                  ) -> StepResult | _Pause:
        if isinstance(step.target, Approval):
            if state.approved != step.name:
                return _Pause(step.name, step.target.prompt)
            state.approved = None
            return StepResult(step.name, task)
        policy = self._policy(step.name)
        self.started += 1
        activity_id = f"{step.name}#{self.started}"
        if step.name not in self.ledgers:
            self.ledgers[step.name] = activity_id
            self.used.append(activity_id)
        request = StepRequest(self.step_data[step.name], self.kit, task, context,
                              policy.attempts, self.owner.approved.pop(step.name, None),
                              self.ledgers[step.name])
        try:
            answer = await workflow.execute_activity_method(
                StepActivities.run_step, request,
                activity_id=activity_id,
                start_to_close_timeout=timedelta(seconds=policy.timeout),
                heartbeat_timeout=timedelta(seconds=policy.heartbeat),
                retry_policy=RetryPolicy(maximum_attempts=policy.attempts,
                                         initial_interval=timedelta(seconds=1),
                                         maximum_interval=timedelta(seconds=30)))
        except ActivityError as exc:
            del self.ledgers[step.name]
            _raise_plan_bug(exc)
            return StepResult(step.name, error=_lost_step(step.name, policy, exc))
        self.owner._attempts[step.name] = answer.attempt
        self.owner._workers[step.name] = answer.worker
        self.owner._routes[step.name] = answer.route
        if answer.result is None:  # no result: the step asked for a pause
            return _Pause(step.name, answer.paused or "", answer.change)
        del self.ledgers[step.name]
        return answer.result

    async def commit(self, band: int, writes: dict[str, Any]) -> None:
        policy = self._policy(None)
        info = workflow.info()
        await workflow.execute_activity_method(
            StepActivities.commit, CommitRequest(info.workflow_id, info.run_id, band, writes),
            activity_id=f"commit#{band}",
            start_to_close_timeout=timedelta(seconds=policy.timeout),
            retry_policy=RetryPolicy(initial_interval=timedelta(seconds=1),
                                     maximum_interval=timedelta(seconds=30)))

    async def forget(self) -> None:
        """Have a worker drop the commit records of the steps run (no attempt reads them once
        the run ends); records it cannot drop stay, and the run ends as it would."""
        if not self.used:
            return
        with contextlib.suppress(ActivityError):
            await workflow.execute_activity_method(
                StepActivities.forget, ForgetRequest(workflow.info().workflow_id, self.used),
                activity_id="forget", start_to_close_timeout=timedelta(
                    seconds=self._policy(None).timeout),
                retry_policy=RetryPolicy(maximum_attempts=3, initial_interval=timedelta(seconds=1)))

    def _policy(self, name: str | None) -> StepPolicy:
        """The policy of step ``name`` (None: the plan's), as the request gives it."""
        default = self.policies.get("*") or {}
        return StepPolicy(**({**default, **(self.policies.get(name) or {})} if name else default))


def _evaluator(plan: Mapping[str, Any], routes: Mapping[str, str | None]) -> Evaluator:
    """The plan's evaluator, its callables placeholders and its route predicates answering
    as the workers decided (``routes``: step name -> the route its last run took)."""
    try:
        steps = [step_from_dict(item, _Placeholders()) for item in plan["steps"]]
    except LackpyError as exc:
        raise _failure(exc) from None
    for step in steps:
        if step.routes:
            step.routes = {target: _Decided(routes, step.name, target) for target in step.routes}
    return Evaluator(steps, plan.get("max_iterations", 100))


class _Placeholder:
    """Stands for a callable or type of a plan in workflow code, which never calls it."""

    def __init__(self, name: str) -> None:
        self.__name__ = self.__qualname__ = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise PlanRuntimeError(f"{self.__name__} is the workers' to call, not the workflow's")


class _Placeholders(dict[str, Any]):
    """A registry that has every name, as a placeholder."""

    def __missing__(self, name: str) -> _Placeholder:
        return _Placeholder(name)


class _Decided:
    """A route predicate that answers as the worker that ran the step decided."""

    def __init__(self, routes: Mapping[str, str | None], step: str, target: str) -> None:
        self.routes = routes
        self.step = step
        self.target = target

    def __call__(self, output: Any) -> bool:
        return self.routes.get(self.step) == self.target


@contextlib.contextmanager
def _plan_bugs_fail_the_run() -> Iterator[None]:
    """A PlanRuntimeError (a route predicate raised, a from_step whose step never ran) fails
    the workflow, as it raises from a local run."""
    try:
        yield
    except PlanRuntimeError as exc:
        raise _failure(exc) from None


def _failure(exc: LackpyError) -> ApplicationError:
    return ApplicationError(str(exc), type=type(exc).__name__, non_retryable=True)


def _raise_plan_bug(exc: ActivityError) -> None:
    """A step the worker could not even run (a callable its registry lacks, an output the
    wire cannot carry) fails the workflow with that error."""
    cause = exc.cause
    if isinstance(cause, ApplicationError) and cause.non_retryable \
            and cause.type in (PlanRuntimeError.__name__, PlanCompileError.__name__,
                               "PlanRegistryError"):
        raise ApplicationError(cause.message, type=cause.type, non_retryable=True) from None


def _lost_step(name: str, policy: StepPolicy, exc: ActivityError) -> ErrorInfo:
    cause = exc.cause
    if isinstance(cause, ApplicationError) and cause.type:
        return ErrorInfo(cause.type, cause.message, retryable=True)
    return ErrorInfo("WorkerLost", f"step {name!r} did not finish on any of its "
                                   f"{policy.attempts} attempts ({cause or exc}): a worker that "
                                   f"dies or stays silent for {policy.heartbeat} s loses its "
                                   f"attempt; start more workers, then run the plan again",
                     retryable=True)


def _failure_info(exc: ChildWorkflowError) -> ErrorInfo:
    cause = exc.cause
    if isinstance(cause, ApplicationError):
        return ErrorInfo(cause.type or "TemporalError", cause.message)
    return ErrorInfo("TemporalError", f"the run's workflow did not finish: {cause or exc}")
