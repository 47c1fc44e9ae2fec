"""The sandbox worker: a single-threaded process that runs each program in a fresh forked child.

Run as ``python -m lackpy_kernel.run.worker``. It reads requests from stdin and
writes replies to stdout (frames, see ``wire``); its first frame says it is ready.
It holds the session's variables. While it waits for a request it already holds
the next child, forked with the session as it is and waiting on its own pipe, so
a program only has to be sent. The child runs it under a memory limit and is
killed at its deadline, so a program that fails or is stopped leaves the session
as it was; a program that succeeds sends back only the variables it may have
changed (see ``commit``). After a program that changed nothing a held twin takes over;
after one that changed the session the next child is forked, off the critical path. The
rest waits for a quiet moment (``Worker.tidy``). The worker ignores SIGINT and exits when
its parent closes stdin, taking its children with it.

Requests: ``run`` (replies ``{"result", "commit"}``), ``cancel`` (stops the running
program; ignored between programs), ``reset`` and ``restore`` (reply ``{"ok": True}``).
While a program runs, the worker passes each call of a tool that runs in the kernel up
as ``{"call": ...}`` and the kernel's ``answer`` down to the child (see ``forward``);
a late answer is dropped.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import gc
import os
import resource
import selectors
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from lackpy_kernel.kit import FileToolsProvider, ResolvedKit, Workspace, builtin_toolbox, resolve_kit
from lackpy_kernel.kit.builtin_tools import PACKAGE_ROOT

from . import wire
from .commit import Commit, UnitLog, changed_names, load_unit, make_commit, names_in
from .context import describe_variables
from .forward import ChildChannel, PythonTools, checked_call, child_tools
from .plain import display_problem, find_non_plain
from .runner import ExecutionResult, RestrictedRunner, signature_of
from .trace import summarize
from .walls import WallPlan

STDIN, STDOUT, STDERR = 0, 1, 2
READ_CHUNK = 1 << 16
CHILD_FAILED = 3
PR_SET_PDEATHSIG = 1
# Seconds without a request before the worker tidies up after a program: longer than a
# kernel takes from one cell's reply to the next cell of a run of them (3 to 5 ms).
QUIET = 0.010
# The most twins held at once. A fork and its warm-up right after a reply compete with
# the kernel and the front end for the cores while they handle that reply; held twins
# let a run of cells that change nothing start one after another without a fork, and
# the forks wait for a quiet moment. The worker holds one, and one more each time a run
# of such cells used them all up (each costs a process of about 3 MB).
MAX_TWINS = 3
INTERRUPTED = "interrupted: the program was stopped before it finished"
Frame = dict[str, Any]  # a message on a pipe: a request, an event, a reply (plain data)


def main() -> None:
    """Serve requests until stdin closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    widen_pipe(STDIN)
    widen_pipe(STDOUT)
    Worker().serve()


PIPE_SIZE = 1 << 20  # Linux's default /proc/sys/fs/pipe-max-size


def widen_pipe(fd: int) -> None:
    """Give the pipe ``fd`` a 1 MiB buffer (from 64 KiB): a large value then crosses in a
    few writes, not in thousands of turns of the two processes."""
    with contextlib.suppress(OSError, AttributeError):  # not Linux, or a lower maximum
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)


class Worker:
    """The worker's state: the session's variables, their units, and the waiting child.

    While the worker waits, its child reads the parent's next request itself (one
    process less to wake on the critical path) and tells the worker what it took:
    a program it starts (the worker then watches it), or another request it hands
    back. While a program runs the worker reads stdin, where only ``cancel`` comes.
    """

    def __init__(self) -> None:
        self.session: dict[str, Any] = {}
        self.log = UnitLog(keep_blobs=False)
        self.requests = wire.FrameReader()  # stdin, while no child is reading it
        self.spare: Child | None = None
        self.twins: list[Child] = []  # held, with the same session: the next spares while it stays
        self.twins_wanted = 1  # how many to hold: more after a run of programs used them up
        self.wants_twin = False  # a program ran since the last twin was used or let go
        self.killed: list[Child] = []  # not yet reaped
        self.walls: WallPlan | None = None
        self.walls_key: tuple[str, list[str]] | None = None
        self.python_tools = PythonTools()  # the tool modules the children inherit
        self.like: Frame = {  # the last program's request, less its program: the next warm-up's
            "op": "run", "kit": [], "workspace": os.getcwd(), "kits_dir": None, "keep": True,
            "timeout": 120.0, "memory_mb": 512, "max_result_bytes": 64_000_000}

    def serve(self) -> NoReturn:
        """Fork the first child, say so, then answer requests until the parent goes."""
        self.spare = self.fork_spare()
        try:
            wire.write_frame(STDOUT, {"ready": os.getpid()})
            while True:
                self.next_event()
        except BrokenPipeError:
            pass  # the parent went away while we answered
        self.exit()

    def fork_spare(self, *, held: bool = False) -> Child:
        """A child with the session as it is now, and the Python tools of programs like the
        last; it reads stdin from where we stopped, or, when ``held``, once it is released
        (``Child.release``)."""
        pending = b""
        if not held:
            pending, self.requests = bytes(self.requests.buffer), wire.FrameReader()
        self.python_tools.load(self.like)
        preresolve(self.like)
        walls = self.walls_for(self.like)
        assert self.walls_key is not None
        return Child.fork(_Snapshot(self.session, self.log, self.like, pending, walls,
                                    self.walls_key, self.python_tools, held=held))

    def release(self, child: Child) -> Child:
        """``child`` (held) as the spare: it reads stdin from where we stopped. A child that
        died meanwhile is replaced."""
        try:
            child.release(bytes(self.requests.buffer))
        except OSError:
            child.kill()
            return self.fork_spare()
        self.requests = wire.FrameReader()
        return child

    def walls_for(self, like: Frame) -> WallPlan:
        """The walls for programs like ``like``, built once per workspace and kits folder."""
        key = _walled_for(like)
        if self.walls_key != key:
            if self.walls is not None:
                self.walls.close()
            self.walls, self.walls_key = wall_plan(like), key
        assert self.walls is not None
        return self.walls

    def next_event(self) -> None:
        """Wait for the child to take a request from stdin, and act on it."""
        child = self.spare
        assert child is not None
        self.killed = [each for each in self.killed if not each.ended()]
        if (self.killed or self.wants_twin) and not _readable_within(child.from_child, QUIET):
            self.tidy()
        event = child.first_frame()
        if event is None:  # it died before it took a request (it was killed, or ran out of memory)
            child.reap()
            self.spare = self.fork_spare()
            return
        self.spare = None
        self.requests.feed(event["leftover"])
        if event["kind"] == "closed":
            child.kill()
            self.exit()
        if event["kind"] == "started":
            changed = self.run(child, event["request"])
            self.let_go(child)
            if self.twins and not changed and self.twins[0].like == _program_kind(self.like):
                self.spare = self.release(self.twins.pop(0))
            else:
                if not changed and child.was_twin and not self.twins:  # a run used them up
                    self.twins_wanted = min(self.twins_wanted + 1, MAX_TWINS)
                self.spare = self.fork_spare()
                self.drop_twins()
            self.wants_twin = True
        else:
            child.kill()
            if self.handle(event["request"]):
                self.drop_twins()
            self.spare = self.fork_spare()

    def drop_twins(self) -> None:
        """Let the held twins go: the session or the kind of program changed."""
        for twin in self.twins:
            self.let_go(twin)
        self.twins = []

    def let_go(self, child: Child) -> None:
        """Kill ``child``; it is reaped when the worker is next idle."""
        child.kill(wait=False)
        self.killed.append(child)

    def tidy(self) -> None:
        """What follows a program: reaping the children let go, and forking the twins.
        It waits until no request has come for a moment (``QUIET``): on a machine with few
        cores, a fork and a warm-up competing with the cells of a run of them would slow
        each down more than a held twin saves."""
        for child in self.killed:
            child.reap()
        self.killed.clear()
        if self.wants_twin:
            while len(self.twins) < self.twins_wanted:
                self.twins.append(self.fork_spare(held=True))
        self.wants_twin = False

    def handle(self, request: Frame) -> bool:
        """Answer a request a child handed back; returns whether a child forked before it
        could no longer run the next program (the session or the kind of program changed)."""
        op = request.get("op")
        if op == "run":  # for a child walled for its workspace: the next one reads it again
            self.like = _program_kind(request)
            self.requests.buffer[0:0] = wire.dumps(request)
            return True
        if op == "describe":  # for a prompt: described here, so the caller never loads them
            text = describe_variables(self.session, previews=bool(request.get("previews", True)))
            wire.write_frame(STDOUT, {"ok": True, "description": text})
            return False
        if op == "reset":
            self.replace_session({}, [])
        elif op == "restore":
            units = [(list(names), blob) for names, blob in request["units"]]
            self.replace_session(restored(units), units)
        else:
            raise wire.WireError(f"unknown request {str(op)[:40]!r}")
        wire.write_frame(STDOUT, {"ok": True})
        return True

    def run(self, child: Child, request: Frame) -> bool:
        """Watch the child run its program; reply, and keep what it changed. Returns whether
        the session changed."""
        self.like = request
        outcome = watch(child, request, self.requests)
        if outcome is STDIN_CLOSED:
            self.exit()
        sent = outcome.get("commit") if request.get("keep", True) else None
        outcome = {**outcome, "commit": None}
        commit: Commit | None = None
        loaded: dict[str, Any] = {}
        if sent is not None:
            try:
                commit, loaded = _read_commit(sent)
                outcome["commit"] = commit.to_dict()
            except wire.WireError as exc:
                outcome = _failure("SandboxError", f"the program's process sent a bad reply: {exc}")
        wire.write_frame(STDOUT, outcome)
        if commit is None or commit.empty:
            return False
        self.apply(commit, loaded)
        return True

    def apply(self, commit: Commit, loaded: dict[str, Any]) -> None:
        for name in commit.deleted:
            self.session.pop(name, None)
        self.session.update(loaded)
        self.log.apply(commit)

    def replace_session(self, session: dict[str, Any], units: list[tuple[list[str], bytes]]
                        ) -> None:
        self.session = session
        self.log.clear()
        for names, blob in units:
            self.log.add(names, blob)

    def exit(self) -> NoReturn:
        for child in (self.spare, *self.twins, *self.killed):
            if child is not None:
                child.kill()
        os._exit(0)


def _read_commit(data: Any) -> tuple[Commit, dict[str, Any]]:
    """The child's commit and the values it carries, read back before anyone relies on them.
    Raises WireError when it is malformed."""
    try:
        commit = Commit.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise wire.WireError(f"malformed commit: {type(exc).__name__}") from None
    loaded: dict[str, Any] = {}
    for names, blob in commit.units:
        loaded.update(load_unit(names, blob))
    return commit, loaded


def restored(units: list[tuple[list[str], bytes]]) -> dict[str, Any]:
    """The session held by ``units`` (read with the plain-data unpickler)."""
    session: dict[str, Any] = {}
    for names, blob in units:
        session.update(load_unit(names, blob))
    return session


class Child:
    """A forked child that runs one program: its pid, its two pipes, and what it sent."""

    def __init__(self, pid: int, to_child: int, from_child: int) -> None:
        self.pid, self.to_child, self.from_child = pid, to_child, from_child
        self.frames = wire.FrameReader()
        self.reaped = False
        self.like: Frame = {}  # the programs it was warmed up for
        self.was_twin = False  # held, then released to take the next request

    @classmethod
    def fork(cls, snapshot: _Snapshot) -> Child:
        """Fork a child with the session as it is now, warmed up with a request like the
        next one; it reads its request from stdin, after the bytes the worker read."""
        down_read, down_write = os.pipe()
        up_read, up_write = os.pipe()
        widen_pipe(up_read)
        worker_pid = os.getpid()
        pid = os.fork()
        if pid == 0:
            os.close(down_write)
            os.close(up_read)
            _child_main(up_write, down_read, worker_pid, snapshot)
        os.close(down_read)
        os.close(up_write)
        child = cls(pid, down_write, up_read)
        child.like = _program_kind(snapshot.like)
        return child

    def first_frame(self) -> Frame | None:
        """What the child did with stdin (``started``, ``handoff`` or ``closed``), or None
        if it died first."""
        while (frame := self.frames.next_frame()) is None:
            data = os.read(self.from_child, READ_CHUNK)
            if not data:
                return None
            self.frames.feed(data)
        if (type(frame) is not dict or frame.get("kind") not in ("started", "handoff", "closed")
                or type(frame.get("leftover")) is not bytes):
            raise wire.WireError(f"the waiting child said {str(frame)[:80]!r}")
        return frame

    def release(self, pending: bytes) -> None:
        """Let a held child read stdin, after ``pending`` (what the worker read of it)."""
        wire.write_frame(self.to_child, {"go": pending})
        self.was_twin = True

    def kill(self, *, wait: bool = True) -> None:
        """Kill the child (if it still runs) and, with ``wait``, reap it."""
        if not self.reaped:
            os.kill(self.pid, signal.SIGKILL)
        if wait:
            self.reap()

    def ended(self) -> bool:
        """Whether the child has ended (it is then reaped), without waiting."""
        if not self.reaped and os.waitpid(self.pid, os.WNOHANG)[0] == 0:
            return False
        self.reaped = True
        self.reap()
        return True

    def reap(self) -> int | None:
        """Wait for the child to end; its wait status (None if already reaped). Closes the pipes."""
        status = None
        if not self.reaped:
            _, status = os.waitpid(self.pid, 0)
            self.reaped = True
        for fd in (self.to_child, self.from_child):
            if fd >= 0:
                os.close(fd)
        self.to_child = self.from_child = -1
        return status


STDIN_CLOSED: Frame = {"exit": "stdin-closed"}


def _readable_within(fd: int, seconds: float) -> bool:
    """Whether ``fd`` has something to read within ``seconds``."""
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        return bool(selector.select(seconds))


def watch(child: Child, request: Frame, requests: wire.FrameReader) -> Frame:
    """The started child's reply, or a failure at the deadline, on a cancel or if it dies.
    Meanwhile its calls of tools that run in the kernel go up, and their answers down."""
    frames = _ChildFrames(child.frames, request)
    relay = _CallRelay(child)
    timeout = float(request["timeout"])
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(child.from_child, selectors.EVENT_READ, "child")
        selector.register(STDIN, selectors.EVENT_READ, "parent")
        try:
            frames.feed(b"")  # what came with "started"
            relay.pass_up(frames)
        except wire.WireError as exc:
            return _stop(child, frames.bad(exc, request))
        while frames.final is None:
            while (message := requests.next_frame()) is not None:
                if not relay.pass_down(message):  # not an answer: only "cancel" comes else
                    return _stop(child, frames.failed("KeyboardInterrupt", INTERRUPTED))
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return _stop(child, frames.failed("TimeoutError", _timeout_message(timeout)))
            relay.watch_writes(selector)
            for key, _ in selector.select(remaining):
                if key.data == "down":
                    relay.flush()
                    continue
                if key.data == "parent":
                    data = os.read(STDIN, READ_CHUNK)
                    if not data:
                        return _stop(child, STDIN_CLOSED)
                    requests.feed(data)
                    continue
                data = os.read(child.from_child, frames.wanted())
                if not data:
                    return _collect(child, frames, request)
                try:
                    frames.feed(data)
                    relay.pass_up(frames)
                except wire.WireError as exc:
                    return _stop(child, frames.bad(exc, request))
    return frames.final


class _CallRelay:
    """The tool calls of a running child: each goes up to the parent, one at a time, and
    its answer goes down the child's second pipe, written without blocking (a child that
    does not read cannot stall the worker past the deadline)."""

    def __init__(self, child: Child) -> None:
        self.child = child
        self.waiting: int | None = None  # the id of the call the parent has not answered
        self.out = bytearray()
        self.watching = False
        os.set_blocking(child.to_child, False)

    def pass_up(self, frames: _ChildFrames) -> None:
        """Send the parent the calls the child made; WireError for a second call at once."""
        while frames.calls:
            call = frames.calls.pop(0)
            if self.waiting is not None:
                raise wire.WireError("a tool call before the last one was answered")
            self.waiting = call["id"]
            wire.write_frame(STDOUT, {"call": call})

    def pass_down(self, message: Any) -> bool:
        """Send an answer to the child if it answers the call it waits on (a late one is
        dropped); False for a message that is not an answer."""
        if type(message) is not dict or message.get("op") != "answer":
            return False
        if message.get("id") == self.waiting and self.waiting is not None:
            self.waiting = None
            self.out += wire.dumps(message)
            self.flush()
        return True

    def flush(self) -> None:
        """Write what the pipe takes now; the rest when it has room."""
        try:
            while self.out:
                del self.out[:os.write(self.child.to_child, self.out)]
        except BlockingIOError:
            pass
        except OSError:  # the child died: its end of the run comes from the other pipe
            self.out.clear()

    def watch_writes(self, selector: selectors.BaseSelector) -> None:
        """Have ``selector`` wake when the child's pipe has room, while answers wait."""
        if bool(self.out) != self.watching:
            if self.out:
                selector.register(self.child.to_child, selectors.EVENT_WRITE, "down")
            else:
                selector.unregister(self.child.to_child)
            self.watching = bool(self.out)


class _ChildFrames:
    """What the child sent: the files it modified and the tools it called as it went, then
    its result frame."""

    def __init__(self, reader: wire.FrameReader, request: Frame) -> None:
        self.reader = reader
        self.reader.max_body = int(request["max_result_bytes"]) + READ_CHUNK
        self.request = request
        self.modified: list[str] = []
        self.calls: list[Frame] = []
        self.calls_made = 0
        self.final: Frame | None = None

    def wanted(self) -> int:
        """How much to read next: the rest of a big frame at once, else a chunk."""
        return max(READ_CHUNK, min(self.reader.missing(), 1 << 24))

    def feed(self, data: bytes) -> None:
        self.reader.feed(data)
        while self.final is None and (frame := self.reader.next_frame()) is not None:
            kind = frame.get("kind") if type(frame) is dict else None
            if kind == "modified" and type(frame.get("path")) is str:
                if frame["path"] not in self.modified:
                    self.modified.append(frame["path"])
            elif kind == "call":
                self.calls.append(checked_call(frame, self.request, self.calls_made))
                self.calls_made += 1
            elif kind == "done":
                self.final = _checked(frame)
            else:
                raise wire.WireError(f"unexpected frame {str(kind)[:40]!r}")

    def failed(self, error_type: str, message: str) -> Frame:
        """A failure that still lists the files the program changed before it stopped."""
        outcome = _failure(error_type, message)
        outcome["result"]["trace"]["files_modified"] = list(self.modified)
        return outcome

    def bad(self, exc: wire.WireError, request: Frame) -> Frame:
        """The failure for a frame too large or malformed, or a call it may not make."""
        if isinstance(exc, wire.FrameTooLarge):
            return self.failed("ResultTooLarge", _too_big_message(request))
        return self.failed("SandboxError", f"the program's process sent a bad reply: {exc}; "
                           "it was stopped")


def _checked(frame: Frame) -> Frame:
    """The child's final frame as the parent will read it; WireError if it is malformed."""
    try:
        result = ExecutionResult.from_dict(frame["result"]).to_dict()
    except (KeyError, TypeError, ValueError) as exc:
        raise wire.WireError(f"malformed result: {type(exc).__name__}") from None
    return {"result": result, "commit": frame.get("commit")}


def _collect(child: Child, frames: _ChildFrames, request: Frame) -> Frame:
    """The failure for a child that ended without its result frame."""
    status = child.reap()
    if status is not None and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGSEGV:
        return frames.failed("SandboxError", "the program's process crashed (segmentation "
                             "fault); a value is probably nested too deeply. Flatten it.")
    if status is not None and os.WIFSIGNALED(status):
        how = f"was killed by signal {os.WTERMSIG(status)}"
    elif status is not None:
        how = f"exited with status {os.WEXITSTATUS(status)}"
    else:
        how = "ended"
    return frames.failed(
        "SandboxError",
        f"the program's process {how} before it replied; it probably ran out of memory "
        f"(limit {request['memory_mb']} MB). Work on smaller pieces of data.",
    )


def _stop(child: Child, outcome: Frame) -> Frame:
    child.kill()
    return outcome


def _failure(error_type: str, message: str) -> Frame:
    result = ExecutionResult(False, error=message, error_type=error_type)
    return {"result": result.to_dict(), "commit": None}


def _timeout_message(timeout: float) -> str:
    return (f"the program ran longer than the {timeout:g} s limit and was stopped; "
            "work on less data or raise [sandbox] timeout in .lackpy/config.toml")


def _too_big_message(request: Frame) -> str:
    limit = int(request["max_result_bytes"]) / 1_000_000
    return (f"the program's result and variables are over the {limit:g} MB limit; "
            "return a smaller value (a slice, a count) or set big variables to None")


# --- the child -------------------------------------------------------------


@dataclass
class _Snapshot:
    """What a child starts from: the session as it was when it was forked."""

    session: dict[str, Any]
    log: UnitLog
    like: Frame  # the last program's request, for the warm-up
    pending: bytes  # stdin the worker read but did not use
    walls: WallPlan  # built for like's workspace
    walled_for: tuple[str, list[str]]  # what they are built for (``_walled_for``)
    python_tools: PythonTools  # the tool modules the worker imported
    channel: ChildChannel = field(default_factory=ChildChannel)  # calls to the kernel's tools
    walls_up: bool = False
    held: bool = False  # waits for the worker's go before it reads stdin


def _child_main(up: int, down: int, worker_pid: int, snapshot: _Snapshot) -> NoReturn:
    """Take one request from stdin, run it and write its frames up; never returns."""
    request: Frame = {}
    try:
        _die_with_parent(worker_pid)
        _close_inherited({STDIN, STDOUT, STDERR, up, down, snapshot.walls.ruleset})
        gc.freeze()  # the session's objects stay shared: collections here never touch them
        if snapshot.held or not _request_waiting(snapshot):
            _warm_up(snapshot)
        null = os.open(os.devnull, os.O_RDWR)
        snapshot.walls_up = bool(snapshot.walls.put_up())
        if snapshot.held:
            snapshot.pending = _wait_for_release(down)
        request = _take_request(snapshot, up)
        _detach_standard_streams(null)
        _confine(request)
        snapshot.channel.connect(up, down, int(request["max_result_bytes"]))
        frame = _run_request(request, snapshot, lambda path: wire.write_frame(
            up, {"kind": "modified", "path": path}))
        wire.write_all(up, _encode(frame, request))
    except MemoryError:  # the program's own MemoryError is its result: this came after it
        _send_failure(up, "MemoryError", _reply_memory_message(request))
    except BaseException as exc:
        _send_failure(up, "SandboxError",
                      f"the sandbox could not finish the program: {type(exc).__name__}: {exc}")
    # Wait to be killed: tearing this process down now would hold up the worker's reply.
    while os.read(down, READ_CHUNK):
        pass
    os._exit(0)


def _close_inherited(keep: set[int]) -> None:
    """Close every descriptor the worker had open but ``keep``: among them the pipes of its
    other children, through which a program's process could send a held twin its go or
    another child its answers, or read what they send."""
    try:
        inherited = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:  # no /proc: every number a descriptor can have
        inherited = list(range(os.sysconf("SC_OPEN_MAX")))
    for fd in inherited:
        if fd not in keep:
            with contextlib.suppress(OSError):  # the listing's own, closed already
                os.close(fd)


def _request_waiting(snapshot: _Snapshot, requests: int = STDIN) -> bool:
    """Whether the next request has come already, on ``requests`` or among the bytes the
    worker read (programs sent back to back): the warm-up would then make it wait longer
    than it saves."""
    return bool(snapshot.pending) or _readable_within(requests, 0)


def _send_failure(up: int, error_type: str, message: str) -> None:
    """Write a failed result as the child's last frame; exit at once where even that fails."""
    try:
        wire.write_all(up, wire.dumps({"kind": "done", **_failure(error_type, message)}))
    except BaseException:
        os._exit(CHILD_FAILED)


def _reply_memory_message(request: Frame) -> str:
    limit = f"the {request['memory_mb']} MB limit" if "memory_mb" in request else "its limit"
    return (f"the program ran, but its result and variables ran past {limit} while they were "
            "made ready to send back and keep (big ints and repeated values take far more "
            "room there than in the program); set big variables to None, return a smaller "
            "value, or raise [sandbox] memory_mb in .lackpy/config.toml")


def _program_kind(request: Frame) -> Frame:
    """What a child is prepared for in a run request: all but the program and its values."""
    return {key: value for key, value in request.items()
            if key not in ("program", "params", "return_variables")}


def _wait_for_release(down: int) -> bytes:
    """Wait for the worker's go (``Child.release``); what it read of stdin. Exits if the
    worker lets this child go instead."""
    reader = wire.FrameReader()
    while (frame := reader.next_frame()) is None:
        wanted = reader.missing() or wire.HEADER_SIZE - len(reader.buffer)
        data = os.read(down, wanted)  # exactly the go frame: calls' answers come after it
        if not data:
            os._exit(0)
        reader.feed(data)
    if type(frame) is not dict or type(frame.get("go")) is not bytes:
        os._exit(CHILD_FAILED)
    go: bytes = frame["go"]
    return go


def _take_request(snapshot: _Snapshot, up: int) -> Frame:
    """Read stdin up to the next program and tell the worker it started. Any other request,
    a program for another workspace or kits folder than this child's walls were built for,
    one whose Python tools the worker has not imported, or stdin closing, is handed back to
    the worker, and this child exits."""
    reader = wire.FrameReader()
    reader.feed(snapshot.pending)
    while True:
        frame = reader.next_frame()
        if frame is None:
            data = os.read(STDIN, max(READ_CHUNK, min(reader.missing(), 1 << 24)))
            if not data:
                _hand_back(up, {"kind": "closed"}, reader)
            reader.feed(data)
            continue
        op = frame.get("op") if type(frame) is dict else None
        if op in ("cancel", "answer"):
            continue  # late, for a program that already finished
        if not _fits(frame, snapshot):
            _hand_back(up, {"kind": "handoff", "request": frame}, reader)
        request: Frame = frame  # a dict: its op is "run"
        wire.write_frame(up, _started(request, reader))
        return request


def _fits(frame: Any, snapshot: _Snapshot) -> bool:
    """Whether this child runs ``frame``: a program for the workspace and kits folder its
    walls were built for, whose Python tools the worker has imported."""
    return (type(frame) is dict and frame.get("op") == "run" and _walls_fit(frame, snapshot)
            and snapshot.python_tools.has_tried(frame))


def _walls_fit(request: Frame, snapshot: _Snapshot) -> bool:
    """Whether the walls were built for the folders ``request`` names: the same paths as
    the last request (what a session sends every time), else the same real paths."""
    like = snapshot.like
    if request.get("workspace") == like["workspace"] and \
            request.get("kits_dir") == like.get("kits_dir"):
        return True
    return _walled_for(request) == snapshot.walled_for


def _started(request: Frame, reader: wire.FrameReader) -> Frame:
    """What the child tells the worker when it takes ``request``: the request less its
    program and values, and what it read of stdin after it."""
    told = {key: value for key, value in request.items() if key not in ("program", "params")}
    return {"kind": "started", "request": told, "leftover": bytes(reader.buffer)}


def _hand_back(up: int, event: Frame, reader: wire.FrameReader) -> NoReturn:
    wire.write_frame(up, {**event, "leftover": bytes(reader.buffer)})
    os._exit(0)


WARM_UP_TOOL = "lackpy_warm_up"  # a tool only the warm-up has: it returns its argument
WARM_UP_READ = "lackpy_warm_up_read"  # and read_file, reading lackpy's own files
WARM_UP_SHIPPED = "kit/docs/read_file.md"  # what it reads: read_file's own page
WARM_UP_PROGRAM = f"{WARM_UP_TOOL}(sorted([len({WARM_UP_READ}({WARM_UP_SHIPPED!r})), 1 + 1]))"


def _warm_up(snapshot: _Snapshot) -> None:
    """Run a tiny program the way the next one will run (like the last request), before
    that one arrives.

    A forked child copies each memory page it first writes to (reference counts
    are writes), and maps each page of code it first runs; doing that here for what
    every program touches (kit resolution, the validator, the compiler, the runner,
    the commit, pickling) takes it off the critical path.
    """
    request = {**snapshot.like, "program": WARM_UP_PROGRAM, "params": {},
               "return_variables": False}
    with contextlib.suppress(Exception):  # what taking a request from stdin does
        reader = wire.FrameReader()
        reader.feed(wire.dumps(request))
        _fits(reader.next_frame(), snapshot)
        wire.dumps(_started(request, reader))
    with contextlib.suppress(Exception):
        frame = _run_request(request, snapshot, lambda path: None, warming_up=True)
        _encode(frame, request)
    with contextlib.suppress(Exception):  # what the file tools do with each path they get
        Workspace(request["workspace"]).warm_up()


def wall_plan(like: Frame) -> WallPlan:
    """The OS walls (``walls``) for programs ``like`` this request: its workspace read-write,
    its kits folder readable."""
    return WallPlan.prepare(like["workspace"], _readable(like))


def _walled_for(request: Frame) -> tuple[str, list[str]]:
    """What a child's walls are built for: the workspace, and what it reads outside."""
    return os.path.realpath(request["workspace"]), _readable(request)


def _readable(request: Frame) -> list[str]:
    """What a program's process reads besides the workspace and Python: the kits folder,
    unless it is in the workspace (``.lackpy/kits``, as a service's is)."""
    kits = request.get("kits_dir")
    if not kits:
        return []
    workspace, kits = os.path.realpath(request["workspace"]), os.path.realpath(kits)
    return [] if os.path.commonpath([workspace, kits]) == workspace else [kits]


def _detach_standard_streams(null: int) -> None:
    """Point stdin and stdout at ``null`` (/dev/null, opened before the walls went up): the
    program's process talks to the worker only, on its own pipe."""
    os.dup2(null, STDIN)
    os.dup2(null, STDOUT)
    os.close(null)


def _encode(frame: Frame, request: Frame) -> bytes:
    """The frame's bytes, or a failure's when it cannot be sent whole."""
    try:
        data = wire.dumps(frame)
    except (RecursionError, MemoryError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else "too large"
        message = f"the program's result is {reason} to send back"
    else:
        if len(data) <= int(request["max_result_bytes"]):
            return data
        message = _too_big_message(request)
    return wire.dumps(_failed_after(frame["result"]["trace"], "ResultTooLarge", message))


def _failed_after(trace: dict[str, Any], error_type: str, message: str) -> Frame:
    """The final frame of a program that ran but cannot be kept: it still lists its files."""
    failure = _failure(error_type, message)
    failure["result"]["trace"].update(files_read=trace["files_read"],
                                      files_modified=trace["files_modified"])
    return {"kind": "done", **failure}


def _confine(request: Frame) -> None:
    memory = int(request["memory_mb"]) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    cpu = int(float(request["timeout"])) + 2
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    os.chdir(request["workspace"])


def _die_with_parent(worker_pid: int) -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # not Linux: the worker still kills its children at their deadline
    if os.getppid() != worker_pid:
        os._exit(0)  # the worker died before the line above took effect


def _run_request(request: Frame, snapshot: _Snapshot, on_modified: Callable[[str], None],
                 *, warming_up: bool = False) -> Frame:
    session, log = snapshot.session, snapshot.log
    try:
        tools, sources = _kit_for(request, snapshot)
        if warming_up:  # a traced tool call, the path every tool call takes after it
            tools, sources = {**tools, **_warm_up_tools()}, {**sources, **WARM_UP_SOURCES}
    except Exception as exc:
        failure = ExecutionResult(False, error=f"{type(exc).__name__}: {exc}", error_type="KitError")
        return {"kind": "done", "result": failure.to_dict(), "commit": None}
    keep = request.get("keep", True)
    result = RestrictedRunner(max_tool_calls=request.get("max_tool_calls")).run(
        request["program"], tools, request.get("params"),
        variables=session if keep else {}, on_file_modified=on_modified, sources=sources,
    )
    if result.error_type == "MemoryError" and result.error is not None:
        result.error += (f"; the limit is {request['memory_mb']} MB "
                         "([sandbox] memory_mb in .lackpy/config.toml)")
    return _reply(result, request, session if keep else {}, log)


def _echo(value: Any) -> Any:
    return value


def _warm_up_tools() -> dict[str, Callable[..., Any]]:
    """The warm-up's own tools: the probe, and read_file for the package's folder (the
    file tools' read path, which programs use most, then costs them no first use)."""
    return {WARM_UP_TOOL: _echo, WARM_UP_READ: FileToolsProvider(PACKAGE_ROOT).read_file}


WARM_UP_SOURCES = {WARM_UP_TOOL: "warm-up", WARM_UP_READ: "warm-up"}


Tools = tuple[dict[str, Callable[..., Any]], dict[str, str]]  # callables, and their sources
_named_kits: dict[str, ResolvedKit] = {}  # kits given as tool names, resolved in the worker
MAX_NAMED_KITS = 16


def _kit_for(request: Frame, snapshot: _Snapshot) -> Tools:
    """The request's tools (alias -> callable) and their sources: its kit's built-in tools
    (their writes refusing the request's protected files), then the tools it describes, in
    this process or forwarded to the kernel's."""
    kit = _named_kit(request) if isinstance(request["kit"], (list, dict)) else _resolve(request)
    sources = {alias: spec.source for alias, spec in kit.tools.items()}
    more, more_sources = child_tools(request.get("tools") or {}, request["workspace"],
                                     snapshot.python_tools, snapshot.channel,
                                     lambda: snapshot.walls_up)  # up after the warm-up
    return {**kit.callables, **more}, {**sources, **more_sources}


def _named_kit(request: Frame) -> ResolvedKit:
    """A kit given as tool names, resolved once in the worker (``preresolve``) or the child:
    a child that builds none of it writes to far fewer of the pages it shares with the
    worker. (A kit file's name is resolved for each program: the file may change.)"""
    key = repr((request["kit"], request.get("protected"), request["workspace"],
                request.get("kits_dir")))
    if key not in _named_kits:
        if len(_named_kits) >= MAX_NAMED_KITS:
            _named_kits.clear()
        _named_kits[key] = _resolve(request)
    return _named_kits[key]


def preresolve(like: Frame) -> None:
    """In the worker, before a fork: resolve the kit of programs ``like`` this one, and read
    its tools' signatures, when it names its tools. A kit that fails is left to the child,
    which reports it."""
    if isinstance(like["kit"], (list, dict)):
        with contextlib.suppress(Exception):
            for tool in _named_kit(like).callables.values():
                signature_of(tool)  # cached: the children find it read


def _resolve(request: Frame) -> ResolvedKit:
    toolbox = builtin_toolbox(Path(request["workspace"]), frozenset(request.get("protected") or ()))
    return resolve_kit(request["kit"], toolbox, kits_dir=request.get("kits_dir"))


def _reply(result: ExecutionResult, request: Frame, before: dict[str, Any], log: UnitLog) -> Frame:
    """The child's frame: the result in plain data, and what changed in the session when kept."""
    commit = None
    if result.success:
        named = names_in(request["program"])
        changed, deleted = changed_names(before, result.variables, named, log)
        kept, dropped = _plain_values({name: result.variables[name] for name in changed})
        if dropped:
            result.notes.append(
                "not kept (only plain data persists; wrap iterators in list(...)): "
                + ", ".join(f"{name} ({kind})" for name, kind in dropped)
            )
        deleted += [name for name, _ in dropped if name in before]
        if request.get("return_variables"):
            result.variables = _shown({name: value for name, value in result.variables.items()
                                       if name not in dict(dropped)})
        else:
            result.variables = {}
        if request.get("keep", True):
            trace = result.trace.to_dict()
            try:
                commit = make_commit(kept, deleted)
            except RecursionError:
                return _failed_after(trace, "RecursionError", "a variable is nested too deeply "
                                     "to keep between programs; flatten it or set it to None")
            if log.size_after(commit) > int(request["max_result_bytes"]):
                return _failed_after(trace, "ResultTooLarge", _session_too_big(request))
        if find_non_plain(result.output) is not None:
            result.notes.append(f"the output, of type {type(result.output).__name__}, is shown as text")
            result.output = summarize(result.output)
    return {"kind": "done", "result": result.to_dict(),
            "commit": commit.to_dict() if commit else None}


def _session_too_big(request: Frame) -> str:
    limit = int(request["max_result_bytes"]) / 1_000_000
    return (f"the session's variables would be over the {limit:g} MB limit; "
            "set big variables to None (or %reset) and keep smaller values")


def _shown(variables: dict[str, Any]) -> dict[str, Any]:
    """The variables, each that cannot be shown in full replaced by its summary."""
    return {name: value if display_problem(value) is None else summarize(value)
            for name, value in variables.items()}


def _plain_values(variables: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    kept, dropped = {}, []
    for name, value in variables.items():
        bad = find_non_plain(value)
        if bad is None:
            kept[name] = value
        else:
            dropped.append((name, bad.__name__))
    return kept, dropped


if __name__ == "__main__":
    main()
