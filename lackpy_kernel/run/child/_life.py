"""A child's life, from the worker's fork to its kill: it puts up its walls, waits (for the
worker's go, when held), warms up unless its request comes at once, takes the next request
from stdin, runs it under its limits, writes its frames up its pipe, and waits to be killed."""

from __future__ import annotations

import contextlib
import gc
import os
import resource
from dataclasses import replace
from typing import NoReturn

from lackpy_kernel.kit import Workspace
from lackpy_kernel.kit.staging import make_stage, stage_folder

from .. import wire
from ..commit import apply_commit, load_units
from ..failures import failure
from ..protocol import (
    LATE,
    Answer,
    Closed,
    Go,
    HandedBack,
    Modified,
    Next,
    Reply,
    RunRequest,
    Started,
    read_request,
    sealed,
)
from ..walls import die_with_parent
from ._program import WARM_UP_PROGRAM, encode, run_request
from ._snapshot import Snapshot, fits

STDIN, STDOUT, STDERR = 0, 1, 2
CHILD_FAILED = 3  # the exit status of a child that could not even report its failure
# Seconds a ready child waits for its request before it warms up: longer than a kernel takes
# from one cell's reply to the next cell of a run of them (3 to 5 ms), which then runs cold
# rather than wait for a warm-up; a person typing the next cell leaves it time to warm up.
QUIET = 0.010
MAX_FD = 2**31 - 1  # past the highest descriptor a process can have


def child_main(up: int, down: int, worker_pid: int, snapshot: Snapshot) -> NoReturn:
    """Take a request from stdin, run it and write its frames up; then, while the worker hands
    it the next program of the same key (``Next``, at most ``request.reuse`` in all), run
    that. Never returns."""
    request: RunRequest | None = None
    try:
        _die_with_parent(worker_pid)
        _close_inherited({STDIN, STDOUT, STDERR, up, down, snapshot.walls.ruleset})
        gc.freeze()  # the session's objects stay shared: collections here never touch them
        null = os.open(os.devnull, os.O_RDWR)
        snapshot.stage = _own_stage(snapshot)
        snapshot.walls_up = bool(snapshot.walls.put_up(snapshot.stage))
        if snapshot.held:
            snapshot.pending = _wait_for_release(down)
        if not request_waiting(snapshot, wait=QUIET):
            _warm_up(snapshot)
        request = _take_request(snapshot, up)
        _detach_standard_streams(null)
        _confine(request)
    except BaseException as exc:
        _send_failure(up, "SandboxError",
                      f"the sandbox could not start the program: {type(exc).__name__}: {exc}")
        request = None
    runs, nonce = 0, 0
    while request is not None:
        runs += 1
        reply = _run_one(request, snapshot, up, down, runs, nonce)
        if reply is None or runs >= request.reuse:
            break
        request, nonce = _next_request(snapshot, reply)
    # Wait to be killed: tearing this process down now would hold up the worker's reply.
    while os.read(down, wire.READ_CHUNK):
        pass
    os._exit(0)


def _run_one(request: RunRequest, snapshot: Snapshot, up: int, down: int,
             runs: int, nonce: int) -> Reply | None:
    """Run ``request`` (the ``runs``-th program of this process) and send its reply up, each
    frame sealed with ``nonce``; the reply, or None when it could not be sent whole or the
    run failed outside the program."""
    try:
        _limit_cpu(request, first=runs == 1)
        snapshot.channel.connect(up, down, request.max_result_bytes, nonce)
        reply = run_request(request, snapshot, lambda path: wire.write_frame(
            up, sealed(Modified(path).to_frame(), nonce)))
        wire.write_all(up, encode(reply, request, nonce))
        return reply
    except MemoryError:  # the program's own MemoryError is its result: this came after it
        _send_failure(up, "MemoryError", _reply_memory_message(request), nonce)
    except BaseException as exc:
        _send_failure(up, "SandboxError",
                      f"the sandbox could not finish the program: {type(exc).__name__}: {exc}",
                      nonce)
    return None


def _next_request(snapshot: Snapshot, last: Reply) -> tuple[RunRequest | None, int]:
    """The next program the worker hands this process (``Next``) and its nonce, with the
    session as the last program's reply left it; None when the worker lets it go instead.
    (The worker hands one on only after a reply that went well, whose commit it kept.)"""
    try:
        while (frame := snapshot.channel.next_frame()) is not None:
            if type(frame) is dict and frame.get("kind") == Next.KIND:
                given = Next.from_frame(frame)
                if last.result.success and (commit := last.commit) is not None:
                    apply_commit(snapshot.session, snapshot.log, commit, load_units(commit.units))
                return given.request, given.nonce
            if type(frame) is not dict or frame.get("op") != Answer.OP:
                break  # only a late answer to a call may come before it
    except (wire.WireError, MemoryError):
        pass
    return None, 0


def request_waiting(snapshot: Snapshot, requests: int = STDIN, *, wait: float = 0) -> bool:
    """Whether the next request has come, on ``requests`` within ``wait`` seconds or among the
    bytes the worker read (programs sent back to back): the warm-up would then make it wait
    longer than it saves."""
    return bool(snapshot.pending) or wire.readable_within(requests, wait)


def _close_inherited(keep: set[int]) -> None:
    """Close every descriptor the worker had open but ``keep``: among them the pipes of its
    other children, through which a program's process could send a held twin its go or
    another child its answers, or read what they send. (One ``close_range`` call per gap
    between the kept ones, where Linux has it.)"""
    low = 0
    for fd in sorted(fd for fd in keep if fd >= 0):
        if fd > low:
            os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, MAX_FD)


def _send_failure(up: int, error_type: str, message: str, nonce: int = 0) -> None:
    """Write a failed result as the child's last frame (sealed with ``nonce``); exit at once
    where even that fails."""
    try:
        wire.write_all(up, wire.dumps(sealed(failure(error_type, message).to_frame(), nonce)))
    except BaseException:
        os._exit(CHILD_FAILED)


def _reply_memory_message(request: RunRequest | None) -> str:
    limit = f"the {request.memory_mb} MB limit" if request is not None else "its limit"
    return (f"the program ran, but its result and variables ran past {limit} while they were "
            "made ready to send back and keep (big ints and repeated values take far more "
            "room there than in the program); set big variables to None, return a smaller "
            "value, or raise [sandbox] memory_mb in .lackpy/config.toml")


def _wait_for_release(down: int) -> bytes:
    """Wait for the worker's go (``Child.release``); what it read of stdin. Exits if the
    worker lets this child go instead."""
    reader = wire.FrameReader(trusted=True)
    while (frame := reader.next_frame()) is None:
        wanted = reader.missing() or wire.HEADER_SIZE - len(reader.buffer)
        data = os.read(down, wanted)  # exactly the go frame: calls' answers come after it
        if not data:
            os._exit(0)
        reader.feed(data)
    try:
        return Go.from_frame(frame).pending
    except wire.WireError:
        os._exit(CHILD_FAILED)


def _take_request(snapshot: Snapshot, up: int) -> RunRequest:
    """Read stdin up to the next program and tell the worker it started. Any other request,
    a program for another workspace or kits folder than this child's walls were built for,
    one whose Python tools the worker has not imported, or stdin closing, is handed back to
    the worker, and this child exits. Raises WireError for a frame that is no request."""
    reader = wire.FrameReader(trusted=True)
    reader.feed(snapshot.pending)
    while True:
        frame = reader.next_frame()
        if frame is None:
            data = os.read(STDIN, reader.wanted())
            if not data:
                _hand_back(up, Closed(bytes(reader.buffer)))
            reader.feed(data)
            continue
        request = read_request(frame)
        if isinstance(request, LATE):
            continue  # late, for a program that already finished
        if not isinstance(request, RunRequest) or not fits(request, snapshot):
            _hand_back(up, HandedBack(request, bytes(reader.buffer)))
        wire.write_frame(up, _started(request, reader).to_frame())
        return request


def _started(request: RunRequest, reader: wire.FrameReader) -> Started:
    """What the child tells the worker when it takes ``request``: the request less its
    program and values, and what it read of stdin after it."""
    return Started(request.without_program(), bytes(reader.buffer))


def _hand_back(up: int, taken: HandedBack | Closed) -> NoReturn:
    wire.write_frame(up, taken.to_frame())
    os._exit(0)


def _warm_up(snapshot: Snapshot) -> None:
    """Run a tiny program the way the next one will run (like the last request), before
    that one arrives.

    A forked child copies each memory page it first writes to (reference counts
    are writes), and maps each page of code it first runs; doing that here for what
    every program touches (kit resolution, the validator, the compiler, the runner,
    the commit, pickling) takes it off the critical path.
    """
    request = replace(snapshot.like, program=WARM_UP_PROGRAM)
    with contextlib.suppress(Exception):  # what taking a request from stdin does
        reader = wire.FrameReader(trusted=True)
        reader.feed(wire.dumps(request.to_frame()))
        taken = read_request(reader.next_frame())
        if isinstance(taken, RunRequest) and fits(taken, snapshot):
            wire.dumps(_started(taken, reader).to_frame())
    with contextlib.suppress(Exception):
        encode(run_request(request, snapshot, lambda path: None, warming_up=True), request)
    with contextlib.suppress(Exception):  # what the file tools do with each path they get
        Workspace(request.workspace).warm_up()


def _own_stage(snapshot: Snapshot) -> str | None:
    """This child's staging folder, made fresh: the one folder its walls let it write (None
    when it cannot be made: it then writes nothing)."""
    folder = stage_folder(snapshot.walled_for[0], os.getpid())
    try:
        make_stage(folder)
    except OSError:
        return None
    return folder


def _detach_standard_streams(null: int) -> None:
    """Point stdin and stdout at ``null`` (/dev/null, opened before the walls went up): the
    program's process talks to the worker only, on its own pipe."""
    os.dup2(null, STDIN)
    os.dup2(null, STDOUT)
    os.close(null)


def _confine(request: RunRequest) -> None:
    memory = int(request.memory_mb) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.chdir(request.workspace)


def _limit_cpu(request: RunRequest, *, first: bool) -> None:
    """Give the program ``request.timeout`` + 2 seconds of CPU from now (RLIMIT_CPU counts
    the whole life of the process); the first program also fixes the most all of this
    process's programs may take."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    used = int(usage.ru_utime + usage.ru_stime)
    each = int(float(request.timeout)) + 2
    hard = used + each * int(request.reuse) if first else resource.getrlimit(resource.RLIMIT_CPU)[1]
    resource.setrlimit(resource.RLIMIT_CPU, (min(used + each, hard), hard))


def _die_with_parent(worker_pid: int) -> None:
    die_with_parent()  # not Linux: the worker still kills its children at their deadline
    if os.getppid() != worker_pid:
        os._exit(0)  # the worker died before the line above took effect
