"""The one run pipeline: every validated program runs through :meth:`RunPipeline.run`.

A caller (the service, a session, an agent's tools, a plan step, a Temporal activity)
describes a run as a :class:`RunSpec` and picks a :class:`Place`; ``run(spec, place)``
validates the program, asks the hooks, runs it in the place, settles its staged writes and
gathers the notes. So every gate (validation, the limits, the call cap, per-call approval,
Kibitzer) holds on every path, and nothing outside this module builds a runner or a stage.

The places:

* :class:`PoolPlace`: sandbox workers, a program each, on an empty namespace (the
  service's pool, or an agent's own);
* :class:`WorkerPlace`: a session's own sandbox worker, which keeps its variables;
* :class:`HerePlace`: this process (the sandbox off or missing), staged as in the sandbox,
  under the call cap, a write-graded tool asked at its call; keeps variables when given.

Hooks (:class:`RunHooks`) watch runs without being call sites, each outside the program's
process: ``refusal`` judges the validated program before it runs; ``wrap`` gives the kit
the place runs (its tools that run in this process asking first); ``change_refusal``
judges the files the program staged, by path, whatever tool staged them, at the commit
(the approver the place asks is wrapped, so it is asked even where no person is);
``after`` hears of the run from its trace and adds notes. Nothing a hook judges is left
to the program's process.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import sys
import time
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from lackpy_kernel import telemetry
from lackpy_kernel.errors import ChangeRefusedError
from lackpy_kernel.kibitzer import Watch, watched_kit
from lackpy_kernel.kit import ResolvedKit, Toolbox
from lackpy_kernel.kit.changes import Change
from lackpy_kernel.lang import Rule, ValidationResult, validate
from lackpy_kernel.run import (
    ExecutionResult,
    RestrictedRunner,
    Sandbox,
    SandboxLimits,
    sandbox_supported,
    validation_failure,
)
from lackpy_kernel.run.here import HereStage
from lackpy_kernel.run.kernel_side import (
    NO_ONE_TO_ASK,
    Approver,
    SandboxPool,
    asked_first,
    blocking,
    is_async_approver,
)

__all__ = ["HerePlace", "KibitzerHooks", "Place", "PoolPlace", "RunHooks", "RunPipeline",
           "RunSpec", "WorkerPlace", "trace_sources", "validate_for"]

# The most time validating one program may take in the caller (a 1 MB program takes ~3 s).
VALIDATION_SECONDS = 30.0
OnThread = Callable[[Callable[[], ExecutionResult]], Awaitable[ExecutionResult]]


@dataclass(frozen=True, kw_only=True)
class RunSpec:
    """One run: the ``program``, the resolved ``kit``, its ``params``, extra ``rules``, the
    ``names`` its place already holds (a session's variables), whether it is ``dry`` (its
    file changes dropped, unasked), who approves (``approve``), whether its file changes and
    write-graded calls wait for that approval (``ask``), the ``max_tool_calls`` cap, and
    whether a model wrote it and nobody has seen it run (``unseen``: it runs in a walled
    process of its own, never shared with the person's programs), and the caller's
    ``session`` (one-shot runs share a walled process only within one; None: none), and
    the hooks' ``path_guard`` (set when no person is asked: see ``RunRequest``)."""

    program: str
    kit: ResolvedKit
    params: Mapping[str, Any] = field(default_factory=dict)
    rules: tuple[Rule, ...] = ()
    names: frozenset[str] = frozenset()
    dry: bool = False
    approve: Approver | None = None
    ask: bool = False
    max_tool_calls: int | None = None
    unseen: bool = False
    session: str | None = None
    path_guard: dict[str, Any] | None = None


class RunHooks(Protocol):
    """What watches runs: see the module docstring for where each part runs."""

    def refusal(self, check: ValidationResult, kit: ResolvedKit) -> str | None:
        """Why a valid program may not run (None: it may)."""

    def wrap(self, kit: ResolvedKit) -> ResolvedKit:
        """``kit`` as the places run it."""

    def change_refusal(self, paths: list[str]) -> str | None:
        """Why the program's staged writes of ``paths`` may not land (None: they may)."""

    def path_guard(self) -> dict[str, Any] | None:
        """What the process that commits may apply to staged paths itself (see
        ``RunRequest.path_guard``): paths it allows need no ``change_refusal``; None: ask
        it about every commit."""

    def after(self, result: ExecutionResult) -> None:
        """Hear of a finished run; may add to ``result.notes``."""


class Place(Protocol):
    """Where a validated program runs."""

    def guard(self) -> AbstractContextManager[None]:
        """Around the work done on the caller's thread (validation, a program run here)."""

    async def execute(self, spec: RunSpec, check: ValidationResult) -> ExecutionResult:
        """Run ``spec`` (its kit already wrapped by the hooks) and settle its writes."""


class PoolPlace:
    """Sandbox workers, a program each on an empty namespace; the variables it set come
    back in the result. ``close`` stops the workers."""

    def __init__(self, pool: SandboxPool) -> None:
        self.pool = pool

    def guard(self) -> AbstractContextManager[None]:
        return nullcontext()

    async def execute(self, spec: RunSpec, check: ValidationResult) -> ExecutionResult:
        return await self.pool.run_async(spec.program, spec.kit, dict(spec.params),
                                         return_variables=True, dry=spec.dry,
                                         approve=spec.approve, ask=spec.ask, unseen=spec.unseen,
                                         session=spec.session, path_guard=spec.path_guard)

    @property
    def size(self) -> int:
        """How many workers the pool holds now."""
        return self.pool.size

    @property
    def worker_pid(self) -> int | None:
        """The process id of the pool's first worker while it runs, else None."""
        return self.pool.worker_pid

    @property
    def worker_pids(self) -> list[int]:
        """The process ids of the pool's workers that run."""
        return self.pool.worker_pids

    def close(self) -> None:
        """Stop the pool's workers."""
        self.pool.close()


class WorkerPlace:
    """A session's own sandbox worker: it keeps the variables from one program to the next
    (a failed program leaves them as they were)."""

    def __init__(self, sandbox: Sandbox, guard: Callable[[], AbstractContextManager[None]]
                 = nullcontext) -> None:
        self.sandbox = sandbox
        self._guard = guard

    def guard(self) -> AbstractContextManager[None]:
        return self._guard()

    async def execute(self, spec: RunSpec, check: ValidationResult) -> ExecutionResult:
        return await self.sandbox.run_async(spec.program, spec.kit, dict(spec.params),
                                            dry=spec.dry, approve=spec.approve, ask=spec.ask,
                                            unseen=spec.unseen, path_guard=spec.path_guard)


class HerePlace:
    """This process: the program's writes staged as in the sandbox and settled after it,
    under the call cap, each write-graded tool asking ``approve`` at its call. With
    ``variables`` (not None) it keeps them from one program to the next, as a worker does.
    ``on_thread`` runs the program (default: on the caller's thread, inside ``guard``; on
    a thread of its own when an ``async`` approver is asked, which awaits on the caller's
    loop)."""

    def __init__(self, workspace: Path, protected: Collection[str], *,
                 variables: dict[str, Any] | None = None, on_thread: OnThread | None = None,
                 guard: Callable[[], AbstractContextManager[None]] = nullcontext) -> None:
        self.workspace = workspace
        self.protected = protected
        self.variables = variables
        self.on_thread = on_thread
        self._guard = guard

    def guard(self) -> AbstractContextManager[None]:
        return self._guard()

    async def execute(self, spec: RunSpec, check: ValidationResult) -> ExecutionResult:
        kept = self.variables
        scratch = None if kept is None else copy.deepcopy(kept)  # a failure changes nothing
        runner = RestrictedRunner(max_tool_calls=spec.max_tool_calls)
        # an async approver is awaited on this loop, which the program then may not block
        off_loop = spec.ask and spec.approve is not None and is_async_approver(spec.approve)
        callables = (asked_first(spec.kit, blocking(spec.approve, asyncio.get_running_loop()))
                     if spec.ask else spec.kit.callables)
        stage = HereStage(self.workspace, self.protected)

        def program_run() -> ExecutionResult:
            return stage.run(lambda: runner.run_validated(
                spec.program, check, callables, dict(spec.params), scratch,
                sources=trace_sources(spec.kit)))

        try:
            result = await self._call(program_run, off_loop)
            if not spec.dry:  # a dry run's staged files are dropped below, unasked
                result = await stage.settle(result, ask=spec.ask, approve=spec.approve)
        finally:
            stage.discard()
        if kept is not None and result.success:
            self.variables = result.variables
        return result

    async def _call(self, program_run: Callable[[], ExecutionResult],
                    off_loop: bool) -> ExecutionResult:
        if self.on_thread is not None:
            return await self.on_thread(program_run)
        if off_loop:
            return await asyncio.to_thread(program_run)
        with self.guard():
            return program_run()


class KibitzerHooks:
    """Kibitzer as run hooks: it refuses a program before it runs, is asked before each call
    of a tool that runs in this process and about every staged file at the commit, and
    hears of the calls afterwards; its fresh suggestions become notes."""

    def __init__(self, watch: Watch) -> None:
        self.watch = watch

    @classmethod
    def open(cls, workspace: Path, *, enabled: bool | None, mode: str | None,
             notice: Callable[[str], None]) -> KibitzerHooks | None:
        """Kibitzer's hooks for ``workspace``; None when it is off or not installed."""
        watch = Watch.open(workspace, enabled=enabled, mode=mode, notice=notice)
        return None if watch is None else cls(watch)

    def refusal(self, check: ValidationResult, kit: ResolvedKit) -> str | None:
        if not any(name in kit.tools for name in check.calls):
            return None  # it calls no tool: Kibitzer has no call to judge (its tree not walked)
        return self.watch.program_refusal(check.tree, kit)

    def wrap(self, kit: ResolvedKit) -> ResolvedKit:
        return watched_kit(kit, self.watch)

    def change_refusal(self, paths: list[str]) -> str | None:
        return self.watch.write_refusal(paths)

    def path_guard(self) -> dict[str, Any] | None:
        return self.watch.path_guard()

    def after(self, result: ExecutionResult) -> None:
        self.watch.after_run(result.trace.entries)
        result.notes.extend(self.watch.take_fresh())


@dataclass(frozen=True, kw_only=True)
class Settings:
    """What the pipeline needs of a workspace's config: where programs run and their limits."""

    workspace: Path
    kits_dir: Path
    limits: SandboxLimits
    sandbox: bool  # [sandbox] enabled
    asks_writes: bool  # [sandbox] approve = "write"
    workers: int  # [sandbox] workers: the service pool's size


class RunPipeline:
    """The runs of one workspace: builds specs and places, and runs a spec in a place.
    ``shared`` is the pool of workers for one-shot runs, up to ``[sandbox] workers``.

    ``toolbox`` resolves kits in the worker; ``protected`` is what a program may not write;
    ``hooks`` watch every run; ``notice`` hears what the pipeline says once (no sandbox).
    """

    def __init__(self, settings: Settings, toolbox: Toolbox, protected: Collection[str], *,
                 hooks: Sequence[RunHooks] = (), notice: Callable[[str], None] = print) -> None:
        self.settings = settings
        self.toolbox = toolbox
        self.protected = protected
        self.hooks = tuple(hooks)
        self._notice = notice
        self.shared = PoolPlace(SandboxPool(self._sandbox, size=settings.workers))

    @property
    def asks_writes(self) -> bool:
        """Whether a program's file changes wait for a person (``[sandbox] approve``)."""
        return self.settings.asks_writes

    def spec(self, program: str, kit: ResolvedKit, *, params: Mapping[str, Any] | None = None,
             rules: Sequence[Rule] | None = None, names: Collection[str] = (),
             dry: bool = False, approve: Approver | None = None,
             ask: bool | None = None, unseen: bool = False,
             session: str | None = None) -> RunSpec:
        """The spec of a run under this workspace's limits (``ask`` None: as configured)."""
        return RunSpec(program=program, kit=kit, params=dict(params or {}),
                       rules=tuple(rules or ()), names=frozenset(names), dry=dry,
                       approve=approve, ask=self.asks_writes if ask is None else ask,
                       max_tool_calls=self.settings.limits.max_tool_calls, unseen=unseen,
                       session=session)

    def sandboxed(self, requested: bool | None = None) -> bool:
        """Whether programs run in the sandbox (``requested`` overrides the config); says
        once why not when the platform rules it out."""
        wanted = self.settings.sandbox if requested is None else requested
        if wanted and not sandbox_supported():
            self._notice(f"no sandbox on {sys.platform}: programs run in this process, "
                         "without time or memory limits")
            return False
        return wanted

    def place(self, sandbox: bool | None = None) -> Place:
        """The place of a one-shot run: the shared pool of workers, or this process."""
        return self.shared if self.sandboxed(sandbox) else self.here()

    def new_pool(self) -> PoolPlace:
        """A pool of workers of its own, unbounded (the caller bounds its runs and closes it)."""
        return PoolPlace(SandboxPool(self._sandbox, size=None))

    def worker(self, guard: Callable[[], AbstractContextManager[None]] = nullcontext
               ) -> WorkerPlace:
        """A worker of its own that keeps variables (a session's); close its ``sandbox``."""
        return WorkerPlace(self._sandbox(), guard)

    def here(self, *, variables: dict[str, Any] | None = None, on_thread: OnThread | None = None,
             guard: Callable[[], AbstractContextManager[None]] = nullcontext) -> HerePlace:
        """This process, staged as in the sandbox (see ``HerePlace``)."""
        return HerePlace(self.settings.workspace, self.protected, variables=variables,
                         on_thread=on_thread, guard=guard)

    @telemetry.traced_run
    async def run(self, spec: RunSpec, place: Place) -> ExecutionResult:
        """Validate ``spec``'s program, ask the hooks, run it in ``place`` and settle its
        writes. Returns a failed result (never raises) for an invalid or refused program, a
        runtime error, a limit or a refused change; KeyboardInterrupt raised by the caller
        inside ``place.guard()`` propagates, nothing written."""
        with place.guard():
            check = validate_for(spec.program, spec.kit, {*spec.params, *spec.names},
                                 list(spec.rules))
        if not check.valid:
            return validation_failure(check.issues)
        for hook in self.hooks:
            reason = hook.refusal(check, spec.kit)
            if reason is not None:
                return ExecutionResult(False, error=reason, error_type="ToolCallError")
        kit = spec.kit
        for hook in self.hooks:
            kit = hook.wrap(kit)
        result = await place.execute(self._judged(replace(spec, kit=kit), check), check)
        for hook in self.hooks:
            hook.after(result)
        return result

    def close(self) -> None:
        """Stop the shared pool's workers."""
        self.shared.close()

    def _judged(self, spec: RunSpec, check: ValidationResult) -> RunSpec:
        """``spec`` whose staged writes the hooks judge at the commit: its approver asks them
        first, and is asked whether or not a person is (``ask``); with no person, the
        hook's path guard goes with it when the program (``check``) calls a tool."""
        if not self.hooks or spec.dry:
            return spec
        hooks, person, approve = self.hooks, spec.ask, spec.approve

        def judge(change: Change) -> None:
            if change.call is not None:
                return
            paths = change.paths
            for hook in hooks:
                reason = hook.change_refusal(paths)
                if reason is not None:
                    raise ChangeRefusedError(reason)

        def checked(change: Change) -> bool:
            judge(change)
            return _asked(approve, change) if person else True

        if not (person and approve is not None and is_async_approver(approve)):
            calls = not person and any(name in spec.kit.tools for name in check.calls)
            # a guard stands in for the one judge there is, never for several
            guard = hooks[0].path_guard() if calls and len(hooks) == 1 else None
            return replace(spec, ask=True, approve=checked, path_guard=guard)
        asynchronous = approve  # awaited on the caller's loop, where what it awaits lives

        async def checked_async(change: Change) -> bool:
            judge(change)
            verdict = asynchronous(change)
            return (await verdict if inspect.isawaitable(verdict) else verdict) is True

        return replace(spec, ask=True, approve=checked_async)

    def _sandbox(self) -> Sandbox:
        return Sandbox(self.settings.workspace, self.settings.limits, self.settings.kits_dir,
                       toolbox=self.toolbox, protected=self.protected,
                       approve_writes=self.asks_writes)


def validate_for(program: str, resolved: ResolvedKit, names: Collection[str],
                 rules: Sequence[Rule] | None) -> ValidationResult:
    """Validate against a kit's tools plus ``names``, refusing assignments to the tools,
    within ``VALIDATION_SECONDS`` (a program too large to check in time is invalid)."""
    with telemetry.span("lackpy.validate") as checking:
        checked = validate(program, {*resolved.callables, *names}, list(rules or ()),
                           protected_names=resolved.callables,
                           deadline=time.monotonic() + VALIDATION_SECONDS)
        checking.set({"lackpy.ok": checked.valid, "lackpy.issues": len(checked.errors)})
    return checked


def _asked(approve: Approver | None, change: Change) -> bool:
    """``approve``'s blocking answer about ``change``; a refusal when there is no one to ask."""
    if approve is None:
        raise ChangeRefusedError(NO_ONE_TO_ASK)
    return approve(change) is True


def trace_sources(resolved: ResolvedKit) -> dict[str, str]:
    """Alias -> where its tool comes from (``ToolSpec.source``), for the trace."""
    return {alias: spec.source for alias, spec in resolved.tools.items()}
