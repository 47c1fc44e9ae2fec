"""The activities a plan's workflow schedules: one step, one band's writes, and, when the
run ends, forgetting its steps' commit records.

Each takes one dataclass and returns one, as in temporalio's samples, so that the workflow
and the workers cannot disagree on a field; the workflow calls them by method reference
(``workflow.execute_activity_method(StepActivities.run_step, ...)``), the names below being
what the workflow's history records. ``StepPolicy`` says how the workflow schedules a step's
activity (its timeouts and attempts). ``StepActivities`` holds what the activities need on a
worker: its registry, LackpyServices of its workspace, its plan Store.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import asdict, dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

from lackpy_kernel.config import LackpyConfig
from lackpy_kernel.errors import LackpyError, PlanPaused, PlanRuntimeError, UsageError
from lackpy_kernel.kit import Kit
from lackpy_kernel.run.plain import jsonable
from lackpy_kernel.service import LackpyService

from ..plans import (
    ChangePaused,
    Ledger,
    ServiceExecutor,
    Step,
    StepResult,
    Store,
    choose_route,
    step_from_dict,
    target_label,
)

_T = TypeVar("_T")

__all__ = [
    "COMMIT_ACTIVITY",
    "FORGET_ACTIVITY",
    "STEP_ACTIVITY",
    "CommitAnswer",
    "CommitRequest",
    "ForgetRequest",
    "StepActivities",
    "StepAnswer",
    "StepPolicy",
    "StepRequest",
]

STEP_ACTIVITY = "lackpy.step"
COMMIT_ACTIVITY = "lackpy.commit"
FORGET_ACTIVITY = "lackpy.forget"
MIN_BEAT_S = 0.2


@dataclass(frozen=True)
class StepPolicy:
    """How Temporal runs a step as an activity: ``timeout`` seconds for one attempt,
    ``heartbeat`` seconds of silence after which its worker counts as dead (the step then
    runs again on another worker), ``attempts`` in all. A step's retryable failure (a
    provider down, the sandbox worker lost, a time limit: ``ErrorInfo.retryable``) is
    retried while attempts are left; the last one is the Envelope's error, as on this
    machine. Other failures are not retried."""

    timeout: float = 3600.0
    heartbeat: float = 30.0
    attempts: int = 3

    def __post_init__(self) -> None:
        for name in ("timeout", "heartbeat"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise UsageError(f"StepPolicy({name}={value!r}): give a number of seconds above 0")
        if isinstance(self.attempts, bool) or not isinstance(self.attempts, int) \
                or self.attempts < 1:
            raise UsageError(f"StepPolicy(attempts={self.attempts!r}): give a whole number of "
                             f"at least 1")

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form."""
        return asdict(self)


@dataclass
class StepRequest:
    """One step to run: its saved form (an entry of ``Plan.to_dict()["steps"]``), the plan's
    kit, the step's task and context, how many attempts its policy allows, the digest
    of the file change a person approved for it (``ChangePaused``), and the id of its
    ``ledger`` (its commit records, and the calls it was allowed; default: the activity's
    id): the same while the step runs again after pauses."""

    step: dict[str, Any]
    kit: Kit = None
    task: Any = None
    context: Any = None
    attempts: int = 1
    approved: str | None = None
    ledger: str | None = None


@dataclass
class StepAnswer:
    """How a step's attempt went: its number and worker, and either the step's ``result``
    with the ``route`` its output takes, or the message of the pause it asked for (and the
    file change it waits on: ``ChangePaused.to_dict()``)."""

    attempt: int
    worker: str
    result: StepResult | None = None
    route: str | None = None
    paused: str | None = None
    change: dict[str, Any] | None = None


@dataclass
class CommitRequest:
    """A band's writes to the Store, as band ``band`` of the run ``run`` of the workflow
    ``key``."""

    key: str
    run: str
    band: int
    writes: dict[str, Any]


@dataclass
class ForgetRequest:
    """The ledgers (their ids: ``StepRequest.ledger``) of the workflow ``key`` that no
    attempt will read again: the run ended."""

    key: str
    ledgers: list[str]


@dataclass
class CommitAnswer:
    """Whether the writes were applied now (False: a retried commit found them applied)."""

    applied: bool


class StepActivities:
    """A worker's activities: steps run through a LackpyService of ``workspace`` (with
    ``config``, else the workspace's) that is their own while they run, callables found in
    ``registry``; writes go to ``store``. ``identity`` names the worker in each answer."""

    def __init__(self, *, workspace: Path, registry: Mapping[str, Any],
                 config: LackpyConfig | None, store: Store, identity: str) -> None:
        self.workspace = workspace
        self.registry = registry
        self.config = config
        self.identity = identity
        self._store = store
        self._idle: list[LackpyService] = []
        self._services: list[LackpyService] = []

    @activity.defn(name=STEP_ACTIVITY)
    async def run_step(self, request: StepRequest) -> StepAnswer:
        """Run one step; its result and route, or the pause it asked for.

        A retryable failure raises for Temporal to retry while attempts are left; the last
        attempt returns it, as the local engine would. A callable the registry lacks or an
        output the wire cannot carry fail the workflow (non-retryable).
        """
        info = activity.info()
        step = _plan_bug(lambda: step_from_dict(request.step, self.registry))
        answer = StepAnswer(info.attempt, self.identity)
        async with self._service() as service:
            executor = ServiceExecutor(lambda: service, request.kit)
            # an attempt retried after its worker died sees the commit the dead one made
            executor.ledger = self._ledger(info.workflow_id, request.ledger or info.activity_id)
            if request.approved is not None:
                executor.approved[step.name] = request.approved
            work = asyncio.ensure_future(executor.execute(step, request.task, request.context))
            await _beating(work, info.heartbeat_timeout)
        try:
            result = work.result()
        except ChangePaused as pause:
            return replace(answer, paused=pause.message, change=pause.to_dict())
        except PlanPaused as pause:
            return replace(answer, paused=pause.message)
        if result.error is not None and result.error.retryable \
                and info.attempt < request.attempts:
            raise ApplicationError(result.error.message, type=result.error.type)
        route = _plan_bug(lambda: choose_route(step, result.output)) if result.ok \
            and step.routes and not step.parallel else None
        return replace(answer, result=_wire_result(step, result), route=route)

    @activity.defn(name=COMMIT_ACTIVITY)
    async def commit(self, request: CommitRequest) -> CommitAnswer:
        """Apply a band's writes to the Store, once however often the commit is retried."""
        return CommitAnswer(await asyncio.to_thread(self._commit, request))

    @activity.defn(name=FORGET_ACTIVITY)
    async def forget(self, request: ForgetRequest) -> None:
        """Drop the commit records (and allowed calls) the steps of a run that ended left in
        the Store: only its own workflow's (another ``key`` fails, non-retryable)."""
        if request.key != activity.info().workflow_id:
            raise ApplicationError(
                f"workflow {activity.info().workflow_id!r} asked to forget the records of "
                f"workflow {request.key!r}; a run forgets only its own", non_retryable=True)

        def forget() -> None:
            for ledger in request.ledgers:
                self._ledger(request.key, ledger).clear()

        await asyncio.to_thread(forget)

    def close(self) -> None:
        """Stop the services' sandbox workers and close the Store."""
        for service in self._services:
            service.close()
        self._services, self._idle = [], []
        self._store.close()

    def _ledger(self, workflow_id: str | None, ledger: str | None) -> Ledger:
        """The commit records of one step's run, by the id of its ledger."""
        return Ledger(self._store, f"temporal:{workflow_id}:{ledger}")

    def _commit(self, request: CommitRequest) -> bool:
        key = f"temporal:{request.key}"
        marker = {"run": request.run, "band": request.band}
        while True:
            current = self._store.read(key)
            if isinstance(current, dict) and current.get("run") == request.run \
                    and current.get("band", 0) >= request.band:
                return False
            if self._store.compare_and_swap(key, current, marker, writes=request.writes):
                return True

    @contextlib.asynccontextmanager
    async def _service(self) -> AsyncIterator[LackpyService]:
        if self._idle:
            service = self._idle.pop()
        else:
            service = LackpyService(self.workspace, self.config)
            self._services.append(service)
        try:
            yield service
        finally:
            self._idle.append(service)


async def _beating(work: asyncio.Future[Any], timeout: timedelta | None) -> None:
    """Wait for ``work``, heartbeating meanwhile; cancelling the wait cancels the work."""
    every = max(timeout.total_seconds() / 3, MIN_BEAT_S) if timeout else None
    try:
        while not work.done():
            await asyncio.wait({work}, timeout=every)
            if not work.done():
                activity.heartbeat()
    except asyncio.CancelledError:
        work.cancel()
        with contextlib.suppress(BaseException):
            await work
        raise


def _wire_result(step: Step, result: StepResult) -> StepResult:
    """``result`` as it can travel to the workflow: its output JSON data, its tool calls made
    JSON data; PlanRuntimeError (non-retryable) for an output that is not."""
    try:
        json.dumps(result.output, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise _failure(PlanRuntimeError(
            f"step {step.name!r} ({target_label(step.target)}) output a "
            f"{type(result.output).__name__}, which cannot travel to the workflow ({exc}); "
            f"return JSON data: str, numbers, bool, None, lists and dicts")) from None
    trace = [replace(entry, args=jsonable(entry.args), result=jsonable(entry.result))
             for entry in result.trace]
    return replace(result, trace=trace)


def _plan_bug(work: Callable[[], _T]) -> _T:
    try:
        return work()
    except LackpyError as exc:
        raise _failure(exc) from None


def _failure(exc: LackpyError) -> ApplicationError:
    return ApplicationError(str(exc), type=type(exc).__name__, non_retryable=True)

