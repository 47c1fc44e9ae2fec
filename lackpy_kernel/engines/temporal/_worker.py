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
import os
import signal
import socket
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from lackpy_kernel import telemetry
from lackpy_kernel.config import LackpyConfig, load_config
from lackpy_kernel.errors import LackpyError, UsageError

from ..plans import PlanLibrary, Store
from ._activities import StepActivities
from ._runner import connect
from ._workflows import PlanManyWorkflow, PlanWorkflow

__all__ = ["TemporalWorker", "serve", "worker_identity"]


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
        self._activities = StepActivities(
            workspace=self.workspace, registry=self.registry, config=config,
            store=Store(store) if store is not None else PlanLibrary(self.workspace).store,
            identity=self.identity)
        restrictions = SandboxRestrictions.default.with_passthrough_modules("lackpy_kernel")
        self._worker = Worker(
            client, task_queue=task_queue, workflows=[PlanWorkflow, PlanManyWorkflow],
            activities=[self._activities.run_step, self._activities.commit,
                        self._activities.forget],
            max_concurrent_activities=concurrency,
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
        self._activities.close()


async def serve(address: str, *, namespace: str = "default", task_queue: str = "lackpy",
                workspace: str | os.PathLike[str] | None = None,
                registry: Mapping[str, Any] | None = None, concurrency: int = 4,
                config: LackpyConfig | None = None, store: str | os.PathLike[str] | None = None,
                on_ready: Callable[[TemporalWorker], None] | None = None) -> None:
    """Serve ``task_queue`` of the server at ``address`` until SIGINT or SIGTERM, then stop
    gracefully (``lackpy worker``); ``on_ready`` hears when it polls. Raises
    TemporalUnreachableError."""
    with contextlib.suppress(LackpyError):  # a bad config, no otel extra: the steps say so
        settings = config if config is not None else load_config(workspace)
        telemetry.configure(settings.telemetry_exporter,
                            include_values=settings.telemetry_include_values)
    client = await connect(address, namespace)  # spans on: linked to the plans' clients
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

