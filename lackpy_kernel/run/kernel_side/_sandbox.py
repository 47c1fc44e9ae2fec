"""The kernel's side of the sandbox worker: start it, send programs, answer the tool calls
they forward, survive its death.

A request's frames are handled once (``_prepare``, ``_taken``, ``_result_of``); ``run`` waits
for the reply on a selector, ``run_async`` on the event loop."""

from __future__ import annotations

import asyncio
import contextlib
import os
import selectors
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from lackpy_kernel.errors import KitError
from lackpy_kernel.kit import ResolvedKit, Toolbox, builtin_toolbox, resolve_kit

from .. import wire
from ..commit import UnitLog
from ..failures import failure
from ..plain import find_non_plain
from ..protocol import (
    Ack,
    Cancel,
    Describe,
    Question,
    Ready,
    Reply,
    Request,
    Reset,
    Restore,
    RunRequest,
    SandboxLimits,
    ToolCall,
    Verdict,
    read_response,
)
from ..runner import KIT_ERROR, ExecutionResult
from ..spawn import adopt_early, spawn_worker, stop_worker
from ._approval import Approver, blocking, judge, judge_async
from ._tools import HostedRun, KitPlan, ToolHost, plan_kit

# How long past a program's own deadline we wait before deciding the worker hangs.
GRACE_SECONDS = 10.0
# How the worker fails: it exits, hangs or sends what it should not (restarted on the next run)
_WORKER_FAILED = (OSError, EOFError, wire.WireError, TimeoutError)
# A kit as ``Sandbox.run`` takes it: resolved, or anything ``resolve_kit`` resolves
KitArgument = ResolvedKit | str | list[str] | dict[str, Any] | None
_Final = Ready | Ack | Reply | Question  # what the worker says but for the calls it passes on
_Outcome = _Final | BaseException  # what the loop's reader hands the awaiting run
_Answer = TypeVar("_Answer", Reply, Ack)  # what a request waits for: a reply, or an ack


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
    own, each time the program calls it (see ``ToolHost``). The write tools refuse
    the files in ``protected`` (``ToolSources.protected``), in the program's
    process as here.

    With ``approve_writes`` (``[sandbox] approve = "write"``, the default) a program's
    file changes land, and each call of a tool graded write that runs here is made, only
    once the run's ``approve`` callback (see ``Approver``) says so; a run without one
    refuses them. False lets them land (and run) unseen; a run's ``ask`` overrides it.
    """

    def __init__(
        self,
        workspace: str | os.PathLike[str],
        limits: SandboxLimits | None = None,
        kits_dir: str | os.PathLike[str] | None = None,
        *,
        toolbox: Toolbox | None = None,
        protected: Collection[str] = (),
        approve_writes: bool = True,
    ) -> None:
        self.workspace = Path(workspace).resolve()
        self.approve_writes = approve_writes
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
            except _WORKER_FAILED:
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
        kit: KitArgument,
        params: dict[str, Any] | None = None,
        *,
        keep: bool = True,
        return_variables: bool = False,
        dry: bool = False,
        approve: Approver | None = None,
        ask: bool | None = None,
        unseen: bool = False,
        session: str | None = None,
        path_guard: dict[str, Any] | None = None,
    ) -> ExecutionResult:
        """Run ``program`` with ``kit`` (a ResolvedKit, or a kit name, tool list or alias
        dict to resolve against the toolbox).

        ``keep=True`` runs in the session and keeps its variables on success;
        ``keep=False`` runs on an empty namespace and leaves the session alone. ``dry``
        drops whatever the program staged (its file changes never land, nothing is asked).
        Programs of the session (``keep``) or of the caller's ``session`` share a walled
        process with the programs of their key, up to ``limits.reuse``; any other, and one
        ``unseen`` (a model wrote it and nobody has seen it run) or ``dry``, runs in a
        process of its own, replaced after it.
        ``approve`` is asked, on this thread, before the program's file changes land
        (``ask``, None for ``approve_writes``; not when no person is asked and
        ``path_guard`` allows them: see ``RunRequest``); its deadline does not run meanwhile.
        """
        ask = self.approve_writes if ask is None else ask
        prepared = self._prepare(program, kit, params, keep, return_variables, dry, ask,
                                 unseen or not (keep or session), session or "", path_guard)
        if isinstance(prepared, ExecutionResult):
            return prepared
        request, plan = prepared
        with self._run_lock, self._hosting(plan, approve, ask) as hosted:
            reply = self._exchange(request, Reply, self._run_wait, hosted, approve)
        return self._result_of(reply, keep)

    async def run_async(
        self,
        program: str,
        kit: KitArgument,
        params: dict[str, Any] | None = None,
        *,
        keep: bool = True,
        return_variables: bool = False,
        dry: bool = False,
        approve: Approver | None = None,
        ask: bool | None = None,
        unseen: bool = False,
        session: str | None = None,
        path_guard: dict[str, Any] | None = None,
    ) -> ExecutionResult:
        """``run`` for an event loop: the reply is awaited on the loop itself (no thread to
        wake) once the worker is ready. Cancelling the await stops the program (the session
        stays as it was) and raises CancelledError, unless the result came first.
        ``approve`` may be ``async`` (awaited on this loop) or blocking (run on a thread)."""
        if not self.ready or not self._run_lock.acquire(blocking=False):
            return await in_thread(self.run, self.interrupt, program, kit, params, keep=keep,
                                    return_variables=return_variables, dry=dry,
                                    approve=blocking(approve, asyncio.get_running_loop()),
                                    ask=ask, unseen=unseen, session=session,
                                    path_guard=path_guard)
        try:
            ask = self.approve_writes if ask is None else ask
            prepared = self._prepare(program, kit, params, keep, return_variables, dry, ask,
                                     unseen or not (keep or session), session or "", path_guard)
            if isinstance(prepared, ExecutionResult):
                return prepared
            request, plan = prepared
            with self._hosting(plan, blocking(approve, asyncio.get_running_loop()),
                               ask) as hosted:
                reply = await self._exchange_async(request, hosted, approve)
        finally:
            self._run_lock.release()
        return self._result_of(reply, keep)

    def interrupt(self) -> None:
        """Stop the program that is running, if any; the session stays as it was."""
        if not self._alive():
            return
        try:
            self._send(Cancel())
        except OSError:
            pass

    def describe_variables(self, *, previews: bool = True) -> str:
        """The session's variables described for a prompt (see ``describe_variables``), by
        the worker that holds them; "" when there are none or the worker cannot answer."""
        if not self.variable_types or not self._alive():
            return ""
        with self._run_lock:
            reply = self._exchange(Describe(previews), Ack, GRACE_SECONDS)
        return (reply.description if isinstance(reply, Ack) else None) or ""

    def reset(self) -> None:
        """Forget the session's variables."""
        self._copy.clear()
        self.variable_types = {}
        if self._alive():
            with self._run_lock:
                self._exchange(Reset(), Ack, GRACE_SECONDS)

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

    # -- internals: a request's frames, handled once for run and run_async -----------

    @property
    def _run_wait(self) -> float:
        """How long a program's reply may take before the worker is taken to hang."""
        return self.limits.timeout + GRACE_SECONDS

    def _prepare(self, program: str, kit: KitArgument, params: dict[str, Any] | None, keep: bool,
                 return_variables: bool, dry: bool, ask: bool, alone: bool, session: str,
                 path_guard: dict[str, Any] | None) -> tuple[RunRequest, KitPlan] | ExecutionResult:
        """The request for ``program`` and where its kit's tools run; or the failure of a
        program that cannot be sent (parameters not plain data, a kit that does not resolve)."""
        bad = find_non_plain(params or {})
        if bad is not None:
            return ExecutionResult(False, error=f"parameters must be plain data, not {bad.__name__}",
                                   error_type="TypeError")
        try:
            plan = self._plan(kit)
        except (KitError, NotImplementedError) as exc:
            return ExecutionResult(False, error=f"{type(exc).__name__}: {exc}", error_type=KIT_ERROR)
        limits = self.limits
        return RunRequest(program=program, workspace=str(self.workspace), kit=plan.builtins,
                          tools=plan.tools, import_path=plan.import_path,
                          protected=_protected(self.protected), params=dict(params or {}),
                          keep=keep, return_variables=return_variables, kits_dir=self.kits_dir,
                          timeout=limits.timeout, memory_mb=limits.memory_mb,
                          max_result_bytes=limits.max_result_bytes,
                          max_tool_calls=limits.max_tool_calls, dry=dry, approve=ask,
                          path_guard=path_guard,
                          reuse=1 if dry or alone else limits.reuse,
                          reuse_idle=limits.reuse_idle, session=session), plan

    def _plan(self, kit: KitArgument) -> KitPlan:
        """Where each of the kit's tools runs; raises KitError for a kit that does not resolve."""
        if not isinstance(kit, ResolvedKit):
            kit = resolve_kit(kit, self.toolbox, self.kits_dir)
        return plan_kit(kit)

    @contextlib.contextmanager
    def _hosting(self, plan: KitPlan, approve: Approver | None, ask: bool
                 ) -> Iterator[HostedRun | None]:
        """The run's forwarded calls while it runs, when its kit has tools that run here;
        with ``ask``, ``approve`` (blocking) is asked before each call of a tool graded
        write."""
        if not plan.kernel:
            yield None
            return
        hosted = self._host.start(plan, deadline=time.monotonic() + self.limits.timeout,
                                  send=self._send_bytes, max_bytes=self.limits.max_result_bytes,
                                  ask=ask, approve=approve)
        try:
            yield hosted
        finally:
            hosted.close()

    def _result_of(self, reply: Reply, keep: bool) -> ExecutionResult:
        """The program's result from the worker's reply (or this side's failure); its commit,
        when kept, is remembered."""
        if keep and reply.commit is not None:
            self._copy.apply(reply.commit)
            for name in reply.commit.deleted:
                self.variable_types.pop(name, None)
            self.variable_types.update(reply.commit.types)
        return reply.result

    def _exchange(self, request: Request, answer: type[_Answer], wait: float,
                  hosted: HostedRun | None = None, approve: Approver | None = None
                  ) -> _Answer | Reply:
        """Send a request and read its ``answer``, waiting on a selector (starting the tool
        calls that come first, asking ``approve`` when the worker asks); this side's failure,
        the worker stopped, if it does not answer."""
        try:
            self._settle(wait)
            self._send(request)
            deadline = time.monotonic() + wait
            while True:
                response = _taken(self._receive_by(deadline, hosted), hosted)
                if isinstance(response, Question):
                    self._send(judge(approve, response.change))
                    # the time asking took is not the program's
                    deadline = time.monotonic() + wait - _stood(hosted)
                elif response is not None:
                    return _answering(response, answer)
        except _WORKER_FAILED as exc:
            return self._failed_worker(exc)

    async def _exchange_async(self, request: RunRequest, hosted: HostedRun | None,
                              approve: Approver | None = None) -> Reply:
        """``_exchange`` on the running loop, for a worker that is ready: send, then await the
        reply's bytes (starting the tool calls that come first, and asking ``approve``
        without blocking the loop when the worker asks)."""
        loop = asyncio.get_running_loop()
        fd = self._stdout()
        pending: list[asyncio.Future[_Outcome]] = [loop.create_future()]

        def readable() -> None:
            outcome: _Outcome | None = None
            try:
                self._read_from(fd)
                while outcome is None and (frame := self._reader.next_frame()) is not None:
                    outcome = _taken(frame, hosted)
            except _WORKER_FAILED as exc:
                outcome = exc
            if outcome is not None and not pending[0].done():
                pending[0].set_result(outcome)

        loop.add_reader(fd, readable)
        try:
            self._send(request)
            while isinstance(frame := await self._await_reply(pending[0], self._run_wait,
                                                              hosted), Question):
                pending[0] = loop.create_future()
                self._send(await self._asked(approve, frame, pending[0]))
            reply = _answering(frame, Reply)
        except _WORKER_FAILED as exc:
            loop.remove_reader(fd)
            return self._failed_worker(exc)
        except asyncio.CancelledError:
            loop.remove_reader(fd)
            last = pending[0]
            if not last.done() or isinstance(last.result(), BaseException):
                self._kill_worker()  # it did not answer the cancel: the next run restarts it
            raise
        loop.remove_reader(fd)
        return reply

    async def _asked(self, approve: Approver | None, question: Question,
                     reply: asyncio.Future[_Outcome]) -> Verdict:
        """The verdict on the worker's question. Cancelled while asking, it stops the run
        (the change is refused) and waits for the worker's reply before re-raising."""
        try:
            return await judge_async(approve, question.change)
        except asyncio.CancelledError:
            self.interrupt()
            await asyncio.wait([reply], timeout=GRACE_SECONDS)
            raise

    async def _await_reply(self, reply: asyncio.Future[_Outcome], wait: float,
                           hosted: HostedRun | None = None) -> _Final:
        """The reply frame within ``wait`` seconds (more by the time a person was asked
        about a call meanwhile). Cancelled, it stops the program and re-raises; a program
        that ended well first stands (what it changed has landed), and a failure that comes
        meanwhile is the stop's (a failed program lands nothing): the stop that abandons
        a question about a call makes the call fail, and that failure may come back before
        the program is stopped."""
        deadline = time.monotonic() + wait - _stood(hosted)
        try:
            while True:
                try:
                    frame = await asyncio.wait_for(asyncio.shield(reply),
                                                   _left(deadline, hosted))
                    break
                except TimeoutError:
                    if _left(deadline, hosted) <= 0:
                        raise
        except asyncio.CancelledError:
            if not reply.done():
                self.interrupt()
                await asyncio.wait([reply], timeout=GRACE_SECONDS)
            if not reply.done():
                raise
            frame = reply.result()
            if not isinstance(frame, Reply) or not frame.result.success:
                raise
        if isinstance(frame, BaseException):
            raise frame
        return frame

    def _failed_worker(self, exc: BaseException) -> Reply:
        """Stop the worker that failed; this side's reply saying so."""
        self._kill_worker()
        kept = "kept" if self._copy.units else "empty (nothing was kept yet)"
        return failure("SandboxError", f"the sandbox worker failed ({exc}); it will be restarted "
                       f"on the next program and the session's variables are {kept}")

    def _settle(self, wait: float) -> None:
        """Start the worker if needed, restore the session into a new one, and read what it
        says before its first reply."""
        self.start()
        if self._restore_pending:
            self._restore_pending = False
            self._preamble += 1
            self._send(Restore(self._copy.live_units()))
        while self._preamble:
            frame = read_response(self._receive(wait))
            if not isinstance(frame, (Ready, Ack)):
                raise wire.WireError(f"the worker sent a {type(frame).__name__} instead of "
                                     "saying it is ready")
            self._preamble -= 1

    def _alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def _spawn(self) -> None:
        self._kill_worker()
        self._process = adopt_early(self.workspace) or spawn_worker(self.workspace)
        self._reader = wire.FrameReader()
        self._preamble = 1
        self._restore_pending = bool(self._copy.units)

    def _send(self, message: Request) -> None:
        self._send_bytes(wire.dumps(message.to_frame()))

    def _send_bytes(self, data: bytes) -> None:
        process = self._process
        if process is None or process.stdin is None:
            raise EOFError("the worker is not running")
        with self._write_lock:
            wire.write_all(process.stdin.fileno(), data)

    def _stdout(self) -> int:
        """The worker's stdout. Raises EOFError when it does not run."""
        process = self._process
        if process is None or process.stdout is None:
            raise EOFError("the worker is not running")
        return process.stdout.fileno()

    def _read_from(self, fd: int) -> None:
        """Read what the worker wrote (the rest of a big frame at once). Raises EOFError."""
        data = os.read(fd, self._reader.wanted())
        if not data:
            raise EOFError("the worker exited")
        self._reader.feed(data)

    def _receive_by(self, deadline: float, hosted: HostedRun | None) -> Any:
        """The worker's next frame by ``deadline``, moved by the time a person was asked
        about a call of ``hosted``'s. Raises TimeoutError, EOFError."""
        while True:
            try:
                return self._receive(_left(deadline, hosted))
            except TimeoutError:
                if _left(deadline, hosted) <= 0:
                    raise

    def _receive(self, wait: float) -> Any:
        """The worker's next frame within ``wait`` seconds. Raises TimeoutError, EOFError."""
        fd = self._stdout()
        deadline = time.monotonic() + wait
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while (frame := self._reader.next_frame()) is None:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not selector.select(remaining):
                    raise TimeoutError(f"no reply within {wait:g} s")
                self._read_from(fd)
            return frame

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


def _stood(hosted: HostedRun | None) -> float:
    """The seconds the clock of ``hosted``'s program stood so far (0 without one)."""
    return hosted.stood() if hosted is not None else 0.0


def _left(deadline: float, hosted: HostedRun | None) -> float:
    """The seconds left until ``deadline``, moved by the time the clock stood; while a
    person is asked, at least ``GRACE_SECONDS`` (to look again then)."""
    left = deadline + _stood(hosted) - time.monotonic()
    return max(left, GRACE_SECONDS) if hosted is not None and hosted.asking else left


def _taken(frame: Any, hosted: HostedRun | None) -> _Final | None:
    """What the worker said in ``frame``; a program's tool call is started instead, and
    gives None. Raises WireError for a frame that is none of them."""
    response = read_response(frame)
    if not isinstance(response, ToolCall):
        return response
    if hosted is None:  # the worker passes on only calls of the kit's kernel tools
        raise wire.WireError("the worker passed on a tool call, but no tool runs here")
    hosted.call(response)
    return None


def _answering(response: _Final, answer: type[_Answer]) -> _Answer:
    """``response``, the answer to a request, when it is an ``answer``. Raises WireError."""
    if not isinstance(response, answer):
        raise wire.WireError(f"the worker sent a {type(response).__name__} where a "
                             f"{answer.__name__} was due")
    return response


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


def _protected(protected: Collection[str]) -> dict[str, str] | list[str]:
    """``protected`` as a request carries it: a copy, naming each file's source if it did."""
    return dict(protected) if isinstance(protected, Mapping) else sorted(protected)
