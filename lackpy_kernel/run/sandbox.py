"""The kernel's side of the sandbox worker: start it, send programs, answer the tool calls
they forward, survive its death."""

from __future__ import annotations

import asyncio
import os
import selectors
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from lackpy_kernel.errors import KitError
from lackpy_kernel.kit import ResolvedKit, Toolbox, builtin_toolbox, resolve_kit

from . import wire
from .commit import Commit, UnitLog
from .forward import HostedRun, KitPlan, ToolHost, plan_kit
from .plain import find_non_plain
from .runner import KIT_ERROR, ExecutionResult
from .spawn import adopt_early, spawn_worker, stop_worker

# How long past a program's own deadline we wait before deciding the worker hangs.
GRACE_SECONDS = 10.0
READ_CHUNK = 1 << 16


@dataclass(frozen=True)
class SandboxLimits:
    """Per-program limits: wall-clock seconds, address-space MB, reply MB, tool calls."""

    timeout: float = 120.0
    memory_mb: int = 512
    max_result_mb: int = 64
    max_tool_calls: int = 10_000


def sandbox_supported() -> bool:
    """Whether this platform has the worker (Linux: fork, RLIMIT_AS, PDEATHSIG)."""
    return sys.platform.startswith("linux")


class Sandbox:
    """A session in a worker process; programs run in forked children under limits.

    ``start`` launches the worker in the background (a program sent before it is
    ready waits for it); otherwise the first ``run`` starts it. ``run`` is
    thread-safe with ``interrupt``: call ``interrupt`` from another thread (or a
    signal handler) to stop the running program. If the worker dies it is
    restarted with the session's last good variables, of which this side keeps
    a pickled copy (only what each program changed crosses the pipe).

    Kits resolve against ``toolbox`` (default: the built-in tools). A tool that
    runs in the kernel (``ToolSpec.where``) is called here, on a thread of its
    own, each time the program calls it (see ``forward``). The write tools refuse
    the files in ``protected`` (``ToolSources.protected``), in the program's
    process as here.
    """

    def __init__(
        self,
        workspace: str | os.PathLike[str],
        limits: SandboxLimits | None = None,
        kits_dir: str | os.PathLike[str] | None = None,
        *,
        toolbox: Toolbox | None = None,
        protected: Collection[str] = (),
    ) -> None:
        self.workspace = Path(workspace).resolve()
        self.limits = limits or SandboxLimits()
        self.kits_dir = str(kits_dir) if kits_dir is not None else None
        self.protected = protected
        self.toolbox = toolbox if toolbox is not None else builtin_toolbox(self.workspace,
                                                                           protected)
        self.variable_types: dict[str, str] = {}  # the session's variables: name -> type name
        self._host = ToolHost()
        self._process: subprocess.Popen[bytes] | None = None
        self._reader = wire.FrameReader()
        self._preamble = 0  # frames the worker sends before its next reply (ready, restored)
        self._restore_pending = False
        self._copy = UnitLog(keep_blobs=True)
        self._start_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._run_lock = threading.Lock()

    # -- public -------------------------------------------------------------

    def start(self) -> None:
        """Start the worker in the background, unless it runs; returns at once."""
        with self._start_lock:
            if not self._alive():
                self._spawn()

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Start the worker if needed and wait until it has said it is ready (at most
        ``timeout`` seconds); whether it is."""
        with self._run_lock:
            try:
                self._settle(GRACE_SECONDS if timeout is None else timeout)
            except TimeoutError:
                return False
            except (OSError, EOFError, wire.WireError):
                self._kill_worker()
                return False
        return True

    @property
    def ready(self) -> bool:
        """Whether the worker runs and has said it is ready (this does not wait)."""
        return self._alive() and self._preamble == 0 and not self._restore_pending

    def run(
        self,
        program: str,
        kit: Any,
        params: dict[str, Any] | None = None,
        *,
        keep: bool = True,
        return_variables: bool = False,
    ) -> ExecutionResult:
        """Run ``program`` with ``kit`` (a ResolvedKit, or a kit name, tool list or alias
        dict to resolve against the toolbox).

        ``keep=True`` runs in the session and keeps its variables on success;
        ``keep=False`` runs on an empty namespace and leaves the session alone.
        """
        bad = find_non_plain(params or {})
        if bad is not None:
            return ExecutionResult(False, error=f"parameters must be plain data, not {bad.__name__}",
                                   error_type="TypeError")
        try:
            plan = self._plan(kit)
        except (KitError, NotImplementedError) as exc:
            return ExecutionResult(False, error=f"{type(exc).__name__}: {exc}", error_type=KIT_ERROR)
        request = self._request(program, plan, params, keep, return_variables)
        with self._run_lock:
            hosted = self._hosted(plan)
            try:
                reply = self._exchange(request, self.limits.timeout + GRACE_SECONDS, hosted)
            finally:
                _close(hosted)
        return self._result_of(reply, keep)

    async def run_async(
        self,
        program: str,
        kit: Any,
        params: dict[str, Any] | None = None,
        *,
        keep: bool = True,
        return_variables: bool = False,
    ) -> ExecutionResult:
        """``run`` for an event loop: the reply is awaited on the loop itself (no thread to
        wake) once the worker is ready. Cancelling the await stops the program (the session
        stays as it was) and raises CancelledError, unless the result came first."""
        bad = find_non_plain(params or {})
        if bad is not None or not self.ready or not self._run_lock.acquire(blocking=False):
            return await in_thread(self.run, self.interrupt, program, kit, params, keep=keep,
                                    return_variables=return_variables)
        hosted = None
        try:
            plan = self._plan(kit)
            request = self._request(program, plan, params, keep, return_variables)
            hosted = self._hosted(plan)
            reply = await self._exchange_async(request, self.limits.timeout + GRACE_SECONDS,
                                               hosted)
        except (KitError, NotImplementedError) as exc:
            return ExecutionResult(False, error=f"{type(exc).__name__}: {exc}", error_type=KIT_ERROR)
        finally:
            _close(hosted)
            self._run_lock.release()
        return self._result_of(reply, keep)

    def interrupt(self) -> None:
        """Stop the program that is running, if any; the session stays as it was."""
        if not self._alive():
            return
        try:
            self._send({"op": "cancel"})
        except OSError:
            pass

    def describe_variables(self, *, previews: bool = True) -> str:
        """The session's variables described for a prompt (see ``describe_variables``), by
        the worker that holds them; "" when there are none or the worker cannot answer."""
        if not self.variable_types or not self._alive():
            return ""
        with self._run_lock:
            reply = self._exchange({"op": "describe", "previews": previews}, GRACE_SECONDS)
        description = reply.get("description")
        return description if isinstance(description, str) else ""

    def reset(self) -> None:
        """Forget the session's variables."""
        self._copy.clear()
        self.variable_types = {}
        if self._alive():
            with self._run_lock:
                self._exchange({"op": "reset"}, GRACE_SECONDS)

    @property
    def worker_pid(self) -> int | None:
        """The worker's process id while it runs."""
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    def close(self) -> None:
        """Stop the worker and its child, and wait until both are gone."""
        process, self._process = self._process, None
        if process is not None:
            stop_worker(process)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- internals ----------------------------------------------------------

    def _plan(self, kit: Any) -> KitPlan:
        """Where each of the kit's tools runs; raises KitError for a kit that does not resolve."""
        if not isinstance(kit, ResolvedKit):
            kit = resolve_kit(kit, self.toolbox, self.kits_dir)
        return plan_kit(kit)

    def _hosted(self, plan: KitPlan) -> HostedRun | None:
        """The run's forwarded calls, when its kit has tools that run here."""
        if not plan.kernel:
            return None
        return self._host.start(plan, deadline=time.monotonic() + self.limits.timeout,
                                send=self._send_bytes,
                                max_bytes=self.limits.max_result_mb * 1_000_000)

    def _request(self, program: str, plan: KitPlan, params: dict[str, Any] | None, keep: bool,
                 return_variables: bool) -> dict[str, Any]:
        return {
            "op": "run",
            "program": program,
            "kit": plan.builtins,
            "tools": plan.tools,
            "import_path": plan.import_path,
            "protected": sorted(self.protected),
            "params": dict(params or {}),
            "keep": keep,
            "return_variables": return_variables,
            "workspace": str(self.workspace),
            "kits_dir": self.kits_dir,
            "timeout": self.limits.timeout,
            "memory_mb": self.limits.memory_mb,
            "max_result_bytes": self.limits.max_result_mb * 1_000_000,
            "max_tool_calls": self.limits.max_tool_calls,
        }

    def _result_of(self, reply: dict[str, Any], keep: bool) -> ExecutionResult:
        if "error" in reply:
            return ExecutionResult(False, error=reply["error"], error_type="SandboxError")
        if keep and reply.get("commit") is not None:
            self._remember(Commit.from_dict(reply["commit"]))
        return ExecutionResult.from_dict(reply["result"])

    async def _exchange_async(self, request: dict[str, Any], wait: float,
                              hosted: HostedRun | None) -> dict[str, Any]:
        """``_exchange`` on the running loop: send, then await the reply's bytes (starting the
        tool calls that come first)."""
        loop = asyncio.get_running_loop()
        process = self._process
        assert process is not None and process.stdout is not None
        fd = process.stdout.fileno()
        reply: asyncio.Future[dict[str, Any] | BaseException] = loop.create_future()

        def readable() -> None:
            try:
                data = os.read(fd, max(READ_CHUNK, min(self._reader.missing(), 1 << 24)))
                if not data:
                    raise EOFError("the worker exited")
                self._reader.feed(data)
                while (frame := self._reader.next_frame()) is not None and _is_call(frame):
                    _call(hosted, frame)
            except (OSError, EOFError, wire.WireError) as exc:
                frame = exc
            if frame is not None and not reply.done():
                reply.set_result(frame)

        loop.add_reader(fd, readable)
        try:
            self._send(request)
            frame = await self._await_reply(reply, wait)
        except (OSError, EOFError, wire.WireError, TimeoutError) as exc:
            failure: BaseException | None = exc
        except asyncio.CancelledError:
            loop.remove_reader(fd)
            if not reply.done() or isinstance(reply.result(), BaseException):
                self._kill_worker()  # it did not answer the cancel: the next run restarts it
            raise
        else:
            failure = None
        loop.remove_reader(fd)
        if failure is not None:
            self._kill_worker()
            return self._failed_worker(failure)
        return frame

    async def _await_reply(self, reply: asyncio.Future[dict[str, Any] | BaseException],
                           wait: float) -> dict[str, Any]:
        """The reply frame within ``wait`` seconds. Cancelled, it stops the program and
        re-raises; a result that came first stands."""
        try:
            frame = await asyncio.wait_for(asyncio.shield(reply), wait)
        except asyncio.CancelledError:
            if not reply.done():
                self.interrupt()
                await asyncio.wait([reply], timeout=GRACE_SECONDS)
            if not reply.done():
                raise
            frame = reply.result()
            if isinstance(frame, BaseException) or \
                    frame.get("result", {}).get("error_type") == "KeyboardInterrupt":
                raise
        if isinstance(frame, BaseException):
            raise frame
        return frame

    def _failed_worker(self, exc: BaseException) -> dict[str, Any]:
        kept = "kept" if self._copy.units else "empty (nothing was kept yet)"
        return {"error": (f"the sandbox worker failed ({exc}); it will be restarted on the next "
                          f"program and the session's variables are {kept}")}

    def _remember(self, commit: Commit) -> None:
        self._copy.apply(commit)
        for name in commit.deleted:
            self.variable_types.pop(name, None)
        self.variable_types.update(commit.types)

    def _exchange(self, request: dict[str, Any], wait: float, hosted: HostedRun | None = None
                  ) -> dict[str, Any]:
        """Send a request and read its reply (starting the tool calls that come first),
        restarting the worker if it died."""
        try:
            self._settle(wait)
            self._send(request)
            deadline = time.monotonic() + wait
            while _is_call(frame := self._receive(deadline - time.monotonic())):
                _call(hosted, frame)
            reply: dict[str, Any] = frame  # the worker answers each request with a dict
            return reply
        except (OSError, EOFError, wire.WireError, TimeoutError) as exc:
            self._kill_worker()
            return self._failed_worker(exc)

    def _settle(self, wait: float) -> None:
        """Start the worker if needed, restore the session into a new one, and read what it
        says before its first reply."""
        self.start()
        if self._restore_pending:
            self._restore_pending = False
            self._preamble += 1
            self._send({"op": "restore", "units": self._copy.live_units()})
        while self._preamble:
            frame = self._receive(wait)
            if not isinstance(frame, dict) or not frame.keys() & {"ready", "ok"}:
                raise wire.WireError(f"the worker said {str(frame)[:80]!r} instead of ready")
            self._preamble -= 1

    def _alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _spawn(self) -> None:
        self._kill_worker()
        self._process = adopt_early(self.workspace) or spawn_worker(self.workspace)
        self._reader = wire.FrameReader()
        self._preamble = 1
        self._restore_pending = bool(self._copy.units)

    def _send(self, message: dict[str, Any]) -> None:
        self._send_bytes(wire.dumps(message))

    def _send_bytes(self, data: bytes) -> None:
        process = self._process
        if process is None or process.stdin is None:
            raise EOFError("the worker is not running")
        with self._write_lock:
            wire.write_all(process.stdin.fileno(), data)

    def _receive(self, wait: float) -> Any:
        process = self._process
        if process is None or process.stdout is None:
            raise EOFError("the worker is not running")
        fd = process.stdout.fileno()
        deadline = time.monotonic() + wait
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while True:
                frame = self._reader.next_frame()
                if frame is not None:
                    return frame
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not selector.select(remaining):
                    raise TimeoutError(f"no reply within {wait:g} s")
                data = os.read(fd, max(READ_CHUNK, min(self._reader.missing(), 1 << 24)))
                if not data:
                    raise EOFError("the worker exited")
                self._reader.feed(data)

    def _kill_worker(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if process.poll() is None:
            process.kill()
        process.wait()
        for pipe in (process.stdin, process.stdout):
            if pipe:
                pipe.close()


def _is_call(frame: Any) -> bool:
    """Whether a frame from the worker is a program's tool call (``{"call": ...}``)."""
    return type(frame) is dict and "call" in frame


def _call(hosted: HostedRun | None, frame: dict[str, Any]) -> None:
    if hosted is None:  # the worker passes on only calls of the kit's kernel tools
        raise wire.WireError("the worker passed on a tool call, but no tool runs here")
    hosted.call(frame["call"])


def _close(hosted: HostedRun | None) -> None:
    if hosted is not None:
        hosted.close()


_P = ParamSpec("_P")
_T = TypeVar("_T")


async def in_thread(call: Callable[_P, _T], interrupt: Callable[[], None], *args: _P.args,
                    **kwargs: _P.kwargs) -> _T:
    """Run a blocking sandbox call in a thread; cancelling the await stops the program."""
    task = asyncio.ensure_future(asyncio.to_thread(call, *args, **kwargs))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        if task.done() and not task.cancelled() and task.exception() is None:
            return task.result()  # it finished as the interrupt came: its result stands
        interrupt()
        await asyncio.wait([task], timeout=GRACE_SECONDS)
        raise
