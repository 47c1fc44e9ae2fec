"""A worker: runs the plan workflows and their steps for one task queue.

Each step runs through a LackpyService of the worker's own workspace (a program in that
service's sandbox worker, a callable from the worker's registry); a band's writes go to the
worker's plan Store, once however often the commit is retried. Several workers, on several
machines, can serve one task queue; each needs the same workspace contents (a shared
filesystem, or a checkout per machine) and the same registry.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from temporalio import activity
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from lackpy_kernel.config import LackpyConfig
from lackpy_kernel.errors import LackpyError, PlanPaused, PlanRuntimeError, UsageError
from lackpy_kernel.run.plain import jsonable
from lackpy_kernel.service import LackpyService

from ..envelope import StepResult
from ..evaluate import choose_route
from ..execute import ServiceExecutor
from ..library import PlanLibrary
from ..serialise import step_from_dict
from ..step import Step, target_label
from ..store import Store
from .runner import connect
from .workflows import COMMIT_ACTIVITY, STEP_ACTIVITY, PlanManyWorkflow, PlanWorkflow

_T = TypeVar("_T")

__all__ = ["TemporalWorker", "serve", "worker_identity"]

MIN_BEAT_S = 0.2


def worker_identity() -> str:
    """This process as a worker names itself: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


class TemporalWorker:
    """Serves ``task_queue`` for plan runs: the workflows, and up to ``concurrency`` steps at
    once, each through a LackpyService of ``workspace`` (with ``config``, else the
    workspace's) that is its own while it runs.

    ``registry`` maps the names of a plan's callables (targets, route predicates, types) to
    them, as ``Plan.from_dict`` takes it. Writes go to ``store`` (default: the workspace's
    ``.lackpy/plans.sqlite``). ``async with worker:`` serves in the background until the
    block ends; ``await worker.run()`` serves until ``shutdown()``.
    """

    def __init__(self, client: Client, *, task_queue: str = "lackpy",
                 workspace: str | os.PathLike[str] | None = None,
                 registry: Mapping[str, Any] | None = None, concurrency: int = 4,
                 config: LackpyConfig | None = None,
                 store: str | os.PathLike[str] | None = None) -> None:
        if not isinstance(concurrency, int) or concurrency < 1:
            raise UsageError(f"concurrency must be a whole number of at least 1, not "
                             f"{concurrency!r}")
        self.workspace = Path(workspace or Path.cwd()).resolve()
        self.task_queue = task_queue
        self.registry = dict(registry or {})
        self.config = config
        self.identity = worker_identity()
        self._store = Store(store) if store is not None else PlanLibrary(self.workspace).store
        self._idle: list[LackpyService] = []
        self._services: list[LackpyService] = []
        restrictions = SandboxRestrictions.default.with_passthrough_modules("lackpy_kernel")
        self._worker = Worker(
            client, task_queue=task_queue, workflows=[PlanWorkflow, PlanManyWorkflow],
            activities=[self.run_step, self.commit], max_concurrent_activities=concurrency,
            identity=self.identity,
            workflow_runner=SandboxedWorkflowRunner(restrictions=restrictions))
        self._serving: asyncio.Task[None] | None = None

    async def run(self) -> None:
        """Serve until ``shutdown()``; the services' sandbox workers stop after."""
        try:
            await self._worker.run()
        finally:
            self.close()

    async def shutdown(self) -> None:
        """Stop polling, let the steps that run finish (or be cancelled), and stop."""
        await self._worker.shutdown()

    async def __aenter__(self) -> TemporalWorker:
        self._serving = asyncio.ensure_future(self.run())
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.shutdown()
        if self._serving is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._serving

    def close(self) -> None:
        """Stop the services' sandbox workers and close the Store."""
        for service in self._services:
            service.close()
        self._services, self._idle = [], []
        self._store.close()

    # -- the activities ---------------------------------------------------------

    @activity.defn(name=STEP_ACTIVITY)
    async def run_step(self, request: dict[str, Any]) -> dict[str, Any]:
        """Run one step; ``{"result": StepResult dict, "route": the route its output takes}``
        or ``{"paused": message}``, with the attempt and this worker's identity.

        A retryable failure raises for Temporal to retry while attempts are left; the last
        attempt returns it, as the local engine would. A callable the registry lacks or an
        output the wire cannot carry fail the workflow (non-retryable).
        """
        info = activity.info()
        step = _plan_bug(lambda: step_from_dict(request["step"], self.registry))
        answer: dict[str, Any] = {"attempt": info.attempt, "worker": self.identity,
                                  "paused": None}
        async with self._service() as service:
            executor = ServiceExecutor(lambda: service, request.get("kit"))
            work = asyncio.ensure_future(
                executor.execute(step, request.get("task"), request.get("context")))
            await _beating(work, info.heartbeat_timeout)
        try:
            result = work.result()
        except PlanPaused as pause:
            return {**answer, "paused": pause.message}
        if result.error is not None and result.error.retryable \
                and info.attempt < request.get("attempts", 1):
            raise ApplicationError(result.error.message, type=result.error.type)
        route = _plan_bug(lambda: choose_route(step, result.output)) if result.ok \
            and step.routes and not step.parallel else None
        return {**answer, "result": _wire_result(step, result), "route": route}

    @activity.defn(name=COMMIT_ACTIVITY)
    async def commit(self, request: dict[str, Any]) -> bool:
        """Apply a band's writes to the Store, once: returns False when this band's writes
        were already applied (a retried commit)."""
        return await asyncio.to_thread(self._commit, request)

    def _commit(self, request: dict[str, Any]) -> bool:
        key = f"temporal:{request['key']}"
        marker = {"run": request["run"], "band": request["band"]}
        while True:
            current = self._store.read(key)
            if isinstance(current, dict) and current.get("run") == marker["run"] \
                    and current.get("band", 0) >= marker["band"]:
                return False
            if self._store.compare_and_swap(key, current, marker, writes=request["writes"]):
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


async def serve(address: str, *, namespace: str = "default", task_queue: str = "lackpy",
                workspace: str | os.PathLike[str] | None = None,
                registry: Mapping[str, Any] | None = None, concurrency: int = 4,
                config: LackpyConfig | None = None, store: str | os.PathLike[str] | None = None,
                on_ready: Callable[[TemporalWorker], None] | None = None) -> None:
    """Serve ``task_queue`` of the server at ``address`` until SIGINT or SIGTERM, then stop
    gracefully (``lackpy worker``); ``on_ready`` hears when it polls. Raises
    TemporalUnreachableError."""
    client = await connect(address, namespace)
    worker = TemporalWorker(client, task_queue=task_queue, workspace=workspace,
                            registry=registry, concurrency=concurrency, config=config,
                            store=store)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(number, stop.set)
    try:
        async with worker:
            if on_ready is not None:
                on_ready(worker)
            await stop.wait()
    finally:
        for number in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(number)


async def _beating(work: asyncio.Future[Any], timeout: Any) -> None:
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


def _wire_result(step: Step, result: StepResult) -> dict[str, Any]:
    data = result.to_dict()
    try:
        json.dumps(data["output"], allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise _failure(PlanRuntimeError(
            f"step {step.name!r} ({target_label(step.target)}) output a "
            f"{type(result.output).__name__}, which cannot travel to the workflow ({exc}); "
            f"return JSON data: str, numbers, bool, None, lists and dicts")) from None
    data["trace"] = jsonable(data["trace"])
    return data


def _plan_bug(work: Callable[[], _T]) -> _T:
    try:
        return work()
    except LackpyError as exc:
        raise _failure(exc) from None


def _failure(exc: LackpyError) -> ApplicationError:
    return ApplicationError(str(exc), type=type(exc).__name__, non_retryable=True)
