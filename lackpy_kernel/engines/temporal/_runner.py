"""The client side: start plan runs on Temporal, wait for them, resume them, ask where they are."""

from __future__ import annotations

import asyncio
import json
import uuid
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import Any, TypeVar

from temporalio.client import (
    Client,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowQueryFailedError,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import (
    ApplicationError,
    CancelledError,
    TerminatedError,
    WorkflowAlreadyStartedError,
)
from temporalio.service import RPCError, RPCStatusCode

from lackpy_kernel import errors, telemetry
from lackpy_kernel.errors import (
    ConcurrentPlanRunError,
    LackpyError,
    TemporalError,
    TemporalUnreachableError,
    UsageError,
)

from ..plans import Envelope, ErrorInfo, Plan, StepResult
from ._activities import StepPolicy
from ._workflows import (
    APPROVE_SIGNAL,
    MANY_WORKFLOW,
    PLAN_WORKFLOW,
    RESUME_SIGNAL,
    SETTLED_UPDATE,
    STATUS_QUERY,
    ManyRequest,
    PlanManyWorkflow,
    PlanRequest,
    PlanWorkflow,
)

__all__ = ["RemoteRuns", "TemporalRun", "TemporalRunner", "connect"]

_R = TypeVar("_R")

QUERY_TIMEOUT_S = 10.0
WATCH_EVERY_S = 0.5
SETTLED = ("done", "failed", "paused")


@dataclass
class TemporalRun:
    """Where a plan run on Temporal is: its key (the workflow id), plan, status (``running``,
    ``paused``, ``done``, ``failed``), its steps in order, the next step, the steps running
    now, the completed steps and their results (``history``, with their tool calls), the
    results of the band that failed, each step's latest attempt number and worker, and the
    steps whose attempt is being retried (``pending``: step, attempt, why), and the file
    change a paused run waits on (``Change.to_frame()``; ``resume(key, approve=True)``)."""

    key: str
    plan: str | None = None
    status: str = "running"
    steps: list[str] = field(default_factory=list)
    next_step: str | None = None
    running: list[str] = field(default_factory=list)
    completed_steps: list[str] = field(default_factory=list)
    task: Any = None
    error: dict[str, Any] | None = None
    history: list[StepResult] = field(default_factory=list)
    failed: list[StepResult] = field(default_factory=list)
    attempts: dict[str, int] = field(default_factory=dict)
    workers: dict[str, str] = field(default_factory=dict)
    pending: list[dict[str, Any]] = field(default_factory=list)
    pauses: int = 0
    change: dict[str, Any] | None = None

    COLUMNS = ("step", "status", "attempts", "worker", "ms")
    TRACE_COLUMNS = ("step", "tool", "args", "ms", "ok")

    @classmethod
    def from_status(cls, key: str, data: Mapping[str, Any],
                    pending: list[dict[str, Any]] | None = None) -> TemporalRun:
        """The run as the workflow's ``status`` query describes it."""
        return cls(
            key=key, plan=data.get("plan"), status=data["status"], steps=list(data["steps"]),
            next_step=data.get("next_step"), running=list(data.get("running") or []),
            completed_steps=list(data.get("completed_steps") or []), task=data.get("task"),
            error=data.get("error"),
            history=[StepResult.from_dict(item) for item in data.get("history") or []],
            failed=[StepResult.from_dict(item) for item in data.get("failed") or []],
            attempts=dict(data.get("attempts") or {}), workers=dict(data.get("workers") or {}),
            pending=list(pending or []), pauses=int(data.get("pauses") or 0),
            change=data.get("change"))

    def envelope(self) -> Envelope:
        """The Envelope of the run so far (its error: why it paused or failed)."""
        error = ErrorInfo.from_dict(self.error) if self.error else None
        return Envelope.from_steps(self.history, error, self.failed if error else None)

    def rows(self) -> list[list[str]]:
        """One row per step (see COLUMNS): its status, attempts, worker and time."""
        done = {result.name: result for result in self.history}
        failed = {result.name: result for result in self.failed if not result.ok}
        retrying = {item["step"]: item for item in self.pending if item.get("attempt", 1) > 1}
        rows = []
        for name in self.steps:
            result = failed.get(name) or done.get(name)
            if name in self.running:
                status = f"retrying: {retrying[name]['why']}" if name in retrying else "running"
            elif name in failed:
                status = "failed"
            elif self.status == "paused" and name == self.next_step:
                status = "paused"
            else:
                status = "done" if name in done else "waiting"
            attempts = retrying[name]["attempt"] if name in retrying else self.attempts.get(name)
            rows.append([name, status, "" if attempts is None else str(attempts),
                         self.workers.get(name, ""),
                         f"{result.ms:.1f} ms" if result is not None else ""])
        return rows

    def trace_rows(self) -> list[list[str]]:
        """Every tool call of the completed steps (see TRACE_COLUMNS)."""
        return [[result.name, entry.tool, json.dumps(entry.args, ensure_ascii=False,
                                                     default=str),
                 f"{entry.duration_ms:.1f}", "ok" if entry.success else entry.error or "failed"]
                for result in [*self.history, *self.failed] for entry in result.trace]

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (``lackpy plan status --temporal --json``)."""
        data = asdict(self)
        data["history"] = [result.to_dict() for result in self.history]
        data["failed"] = [result.to_dict() for result in self.failed]
        return data


async def connect(address: str = "localhost:7233", namespace: str = "default") -> Client:
    """A Temporal client (with temporalio's OpenTelemetry interceptor while spans are on);
    TemporalUnreachableError when the server cannot be reached."""
    try:
        return await Client.connect(address, namespace=namespace,
                                    interceptors=telemetry.temporal_interceptors())
    except RuntimeError as exc:  # the SDK's "Failed client connect: ..."
        raise TemporalUnreachableError(
            f"cannot reach the Temporal server at {address} (namespace {namespace}): {exc}; "
            f"start one (`temporal server start-dev`) or give its address with --temporal "
            f"HOST:PORT") from None


class TemporalRunner:
    """Runs plans on the Temporal server at ``address``, as workflows on ``task_queue``,
    where ``lackpy worker`` processes run them.

    A run gives the Envelope the local engine gives (its payload, error, history and tool
    calls). Its key (the workflow id) is ``workflow_id``, else the plan's ``checkpoint_key``
    (``on_concurrent="fork"`` adds a unique suffix), else a fresh one. ``policy`` says how
    steps run as activities (``policies`` by step name, for some of them). Writes go to the
    workers' plan Store. Raises TemporalUnreachableError, MissingExtraError (at import).
    """

    def __init__(self, address: str = "localhost:7233", namespace: str = "default",
                 task_queue: str = "lackpy", *, policy: StepPolicy | None = None,
                 policies: Mapping[str, StepPolicy] | None = None) -> None:
        self.address = address
        self.namespace = namespace
        self.task_queue = task_queue
        self.policy = policy or StepPolicy()
        self.policies = dict(policies or {})
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Client] = \
            weakref.WeakKeyDictionary()

    def __repr__(self) -> str:
        return (f"TemporalRunner({self.address!r}, {self.namespace!r}, "
                f"task_queue={self.task_queue!r})")

    async def client(self) -> Client:
        """The client for this event loop (connected on first use)."""
        loop = asyncio.get_running_loop()
        if loop not in self._clients:
            self._clients[loop] = await connect(self.address, self.namespace)
        return self._clients[loop]

    # -- one run ----------------------------------------------------------------

    async def run(self, plan: Plan, task: Any = None, workflow_id: str | None = None
                  ) -> Envelope:
        """Run ``plan`` on ``task`` and return its Envelope once it ends or pauses (its error
        is then PlanPaused; ``resume`` continues it). A plan with ``resume=True`` resumes
        the paused run under its key instead.

        Raises ConcurrentPlanRunError when a run holds the key (on_concurrent="fail"),
        PlanRuntimeError (or PlanRegistryError) for a bug in the plan, as a local run does,
        TemporalError when the workflow ends without an Envelope.
        """
        if plan.resume:
            return await self.resume(self._base_key(plan, workflow_id))
        return await self.wait(await self.start(plan, task, workflow_id))

    async def start(self, plan: Plan, task: Any = None, workflow_id: str | None = None) -> str:
        """Start ``plan`` on ``task`` and return its key at once (see ``run``)."""
        request = PlanRequest(plan.to_dict(), _wire_task(task), self._policies())
        key = self._key(plan, workflow_id)
        await self._start(PLAN_WORKFLOW, request, key)
        return key

    async def resume(self, key: str, *, approve: bool = False) -> Envelope:
        """Send the paused run ``key`` its ``resume`` signal (``approve``: let the file change
        it paused on land) and wait until it ends or pauses again; TemporalError when it is
        not paused (or not there)."""
        before = await self.signal_resume(key, approve=approve)
        return await self._settle(key, before.pauses)

    async def signal_resume(self, key: str, *, approve: bool = False) -> TemporalRun:
        """Send the paused run ``key`` its ``resume`` signal, or with ``approve`` its
        ``approve`` signal; returns its status before it."""
        run = await self.status(key)
        if run.status != "paused":
            raise TemporalError(f"the run {key!r} is {run.status}, not paused: there is nothing "
                                f"to resume")
        signal = APPROVE_SIGNAL if approve else RESUME_SIGNAL
        await self._call((await self._handle(key)).signal(signal), key)
        return run

    async def wait(self, key: str) -> Envelope:
        """The Envelope of the run ``key`` once it has ended or paused (see ``run``)."""
        return await self._settle(key, 0)

    # -- many runs --------------------------------------------------------------

    async def run_many(self, plans_inputs: Iterable[tuple[Plan, Any]], *,
                       concurrency: int | None = None, workflow_id: str | None = None
                       ) -> list[Envelope]:
        """Run each ``(plan, task)`` as a child workflow of one parent (``workflow_id``, else a
        fresh key), at most ``concurrency`` at once; one Envelope per pair, in order, a
        run's failure in its slot. A run that pauses waits for its ``resume`` signal
        (its key is ``PARENT/N``)."""
        if concurrency is not None and (isinstance(concurrency, bool)
                                        or not isinstance(concurrency, int) or concurrency < 1):
            raise UsageError(f"concurrency must be a whole number of at least 1, not "
                             f"{concurrency!r}, or None for no limit")
        request = ManyRequest([], [], concurrency, self._policies())
        index: dict[int, int] = {}
        for plan, task in plans_inputs:
            if id(plan) not in index:
                index[id(plan)] = len(request.plans)
                request.plans.append(plan.to_dict())
            request.runs.append((index[id(plan)], _wire_task(task)))
        key = workflow_id or f"lackpy-many-{uuid.uuid4().hex[:12]}"
        await self._start(MANY_WORKFLOW, request, key)
        client = await self.client()
        return await self._outcome(client.get_workflow_handle_for(PlanManyWorkflow.run, key))

    # -- where runs are ---------------------------------------------------------

    async def status(self, key: str) -> TemporalRun:
        """Where the run ``key`` is (its steps, results, attempts, workers); TemporalError
        when there is no such run, or no worker answers for its task queue."""
        handle = await self._handle(key)
        data = await self._call(handle.query(STATUS_QUERY, rpc_timeout=timedelta(
            seconds=QUERY_TIMEOUT_S)), key)
        if data.get("kind") != "plan":
            raise TemporalError(f"{key!r} is a run-many of {data['total']} runs "
                                f"({data['finished']} finished, {data['failed']} failed); "
                                f"ask for one of them, {key}/N")
        return TemporalRun.from_status(key, data, await self._pending(handle))

    async def runs(self, limit: int = 50) -> list[tuple[str, str]]:
        """The latest ``limit`` plan runs on the server (not the children of a run-many):
        ``(key, Temporal's status)`` each, newest first."""
        client = await self.client()
        found = client.list_workflows(
            f"WorkflowType = '{PLAN_WORKFLOW}' OR WorkflowType = '{MANY_WORKFLOW}'")
        listed: list[tuple[str, str]] = []
        async for execution in found:
            if execution.parent_id is None:
                status = execution.status.name.lower() if execution.status else "unknown"
                listed.append((execution.id, status))
            if len(listed) >= limit:
                break
        return listed

    async def watch(self, key: str, on_status: Callable[[TemporalRun], None], *,
                    every: float = WATCH_EVERY_S) -> TemporalRun:
        """Poll the run ``key`` every ``every`` seconds, calling ``on_status`` whenever it
        changed, until it has ended or paused; returns its last status."""
        last: dict[str, Any] | None = None
        while True:
            run = await self.status(key)
            shown = run.to_dict()
            if shown != last:
                on_status(run)
                last = shown
            if run.status in SETTLED:
                return run
            await asyncio.sleep(every)

    # -- internals --------------------------------------------------------------

    def _policies(self) -> dict[str, dict[str, Any]]:
        return {"*": self.policy.to_dict(),
                **{name: policy.to_dict() for name, policy in self.policies.items()}}

    def _base_key(self, plan: Plan, workflow_id: str | None) -> str:
        key = workflow_id or plan.checkpoint_key
        if key is None:
            raise UsageError("resume=True needs the key of the run to resume: give workflow_id= "
                             "or the plan's checkpoint_key")
        return key

    def _key(self, plan: Plan, workflow_id: str | None) -> str:
        base = workflow_id or plan.checkpoint_key
        if base is None:
            return f"lackpy-plan-{uuid.uuid4().hex[:12]}"
        return f"{base}:{uuid.uuid4().hex[:12]}" if plan.on_concurrent == "fork" else base

    async def _handle(self, key: str) -> WorkflowHandle[Any, Any]:
        return (await self.client()).get_workflow_handle(key)

    async def _start(self, workflow: str, request: PlanRequest | ManyRequest, key: str) -> None:
        client = await self.client()
        try:
            await self._call(client.start_workflow(
                workflow, request, id=key, task_queue=self.task_queue,
                id_conflict_policy=WorkflowIDConflictPolicy.FAIL,
                id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE), key)
        except WorkflowAlreadyStartedError:
            raise ConcurrentPlanRunError(
                f"a run under the key {key!r} is live on Temporal ({self.address}); wait for "
                f"it, resume it if it is paused (`lackpy plan resume {key} --temporal "
                f"{self.address}`), use another key, or on_concurrent='fork'") from None

    async def _settle(self, key: str, pauses_seen: int) -> Envelope:
        handle = await self._handle(key)
        try:
            data = await self._call(handle.execute_update(SETTLED_UPDATE, pauses_seen,
                                                          result_type=dict), key)
        except (WorkflowUpdateFailedError, TemporalError):
            return await self._result(key)  # it ended before the update reached it
        if data["status"] == "paused":
            return TemporalRun.from_status(key, data).envelope()
        return await self._result(key)

    async def _result(self, key: str) -> Envelope:
        client = await self.client()
        return await self._outcome(client.get_workflow_handle_for(PlanWorkflow.run, key))

    async def _outcome(self, handle: WorkflowHandle[Any, _R]) -> _R:
        """The workflow's result; its failure as the lackpy error of that name."""
        try:
            result: _R = await self._call(handle.result(), handle.id)
        except WorkflowFailureError as exc:
            raise _lackpy_error(handle.id, exc.cause) from None
        return result

    async def _pending(self, handle: WorkflowHandle[Any, Any]) -> list[dict[str, Any]]:
        description = await self._call(handle.describe(), handle.id)
        pending = []
        for item in description.raw_description.pending_activities:
            step = item.activity_id.rsplit("#", 1)[0]
            why = item.last_failure.message if item.HasField("last_failure") else ""
            if item.last_worker_identity and why:
                why = f"{why} (worker {item.last_worker_identity})"
            pending.append({"step": step, "attempt": item.attempt, "why": why or "retrying",
                            "worker": item.last_worker_identity})
        return pending

    async def _call(self, work: Any, key: str) -> Any:
        """``await work``, with the server's refusals as lackpy's errors."""
        try:
            return await work
        except RPCError as exc:
            raise self._rpc_error(exc, key) from None
        except WorkflowQueryFailedError as exc:
            raise TemporalError(f"the run {key!r} could not answer: {exc.message}") from None

    def _rpc_error(self, exc: RPCError, key: str) -> LackpyError:
        if exc.status == RPCStatusCode.UNAVAILABLE:
            return TemporalUnreachableError(
                f"the Temporal server at {self.address} stopped answering ({exc.message}); the "
                f"run {key!r} keeps its state there: ask again once it is back")
        if exc.status == RPCStatusCode.NOT_FOUND:
            return TemporalError(f"no run {key!r} on Temporal at {self.address} (namespace "
                                 f"{self.namespace}): {exc.message}; `lackpy plan status "
                                 f"--temporal {self.address}` lists the runs")
        if exc.status == RPCStatusCode.DEADLINE_EXCEEDED:
            return TemporalError(
                f"no worker answered for the run {key!r} on the task queue "
                f"{self.task_queue!r}: start one with `lackpy worker --temporal {self.address} "
                f"--task-queue {self.task_queue} --workspace W`")
        return TemporalError(f"Temporal at {self.address} refused the request for {key!r}: "
                             f"{exc.status.name}: {exc.message}")


class RemoteRuns:
    """The runs a notebook started on Temporal: one runner per server and task queue, and
    which runner each run's key belongs to."""

    def __init__(self) -> None:
        self._runners: dict[tuple[str, str], TemporalRunner] = {}
        self._by_key: dict[str, TemporalRunner] = {}

    def runner(self, address: str, task_queue: str | None = None) -> TemporalRunner:
        """The runner for ``address`` and ``task_queue`` (default ``lackpy``)."""
        where = (address, task_queue or "lackpy")
        if where not in self._runners:
            self._runners[where] = TemporalRunner(address, task_queue=where[1])
        return self._runners[where]

    def remember(self, key: str, runner: TemporalRunner) -> None:
        """The run ``key`` was started through ``runner``."""
        self._by_key[key] = runner

    def runner_for(self, key: str, address: str | None = None,
                   task_queue: str | None = None) -> TemporalRunner | None:
        """The runner of the run ``key``: at ``address`` when given, else the one that started
        it here; None for a run this notebook knows only locally."""
        if address:
            return self.runner(address, task_queue)
        return self._by_key.get(key)

    def keys(self) -> list[str]:
        """The runs started here, in order."""
        return list(self._by_key)


def _wire_task(task: Any) -> Any:
    try:
        json.dumps(task, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"a task sent to Temporal must be JSON data (str, numbers, bool, None, "
                         f"lists, dicts), not {type(task).__name__}: {exc}") from None
    return task


def _lackpy_error(key: str, cause: BaseException | None) -> LackpyError:
    """The error a workflow failed with, as the lackpy error of that name when there is one."""
    if isinstance(cause, ApplicationError) and cause.type:
        kind = getattr(errors, cause.type, None)
        if isinstance(kind, type) and issubclass(kind, LackpyError):
            return kind(cause.message)
        return TemporalError(f"the run {key!r} failed: {cause.type}: {cause.message}")
    if isinstance(cause, TerminatedError):
        return TemporalError(f"the run {key!r} was terminated from outside lackpy "
                             f"({cause.message}); its completed steps stay in its history")
    if isinstance(cause, CancelledError):
        return TemporalError(f"the run {key!r} was cancelled ({cause.message})")
    return TemporalError(f"the run {key!r} failed: {cause}")

