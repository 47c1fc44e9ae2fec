"""The worker's handle on a forked child: fork it, read what it did with stdin, release a
held one, kill and reap it."""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal

from lackpy_kernel.kit.staging import discard_stage, stage_folder

from .. import wire
from ..child import Snapshot, child_main
from ..protocol import Go, RunRequest, Taken, read_taken

PIPE_SIZE = 1 << 20  # Linux's default /proc/sys/fs/pipe-max-size
PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 2**20


def resident_mb(pid: int) -> float:
    """The resident memory of process ``pid`` in MB (0 where /proc does not say)."""
    try:
        fd = os.open(f"/proc/{pid}/statm", os.O_RDONLY)
        try:
            return int(os.read(fd, 256).split()[1]) * PAGE_MB
        finally:
            os.close(fd)
    except (OSError, IndexError, ValueError):
        return 0.0


def stage_is_empty(folder: str) -> bool:
    """Whether the staging folder ``folder`` is there and holds nothing (what a program left
    there is never handed to the next)."""
    try:
        with os.scandir(folder) as entries:
            return next(entries, None) is None
    except OSError:
        return False


def widen_pipe(fd: int) -> None:
    """Give the pipe ``fd`` a 1 MiB buffer (from 64 KiB): a large value then crosses in a
    few writes, not in thousands of turns of the two processes."""
    with contextlib.suppress(OSError, AttributeError):  # not Linux, or a lower maximum
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_SIZE)


class Child:
    """A forked child that runs one program: its pid, its two pipes, and what it sent."""

    def __init__(self, pid: int, to_child: int, from_child: int, like: RunRequest,
                 stage: str) -> None:
        self.pid, self.to_child, self.from_child = pid, to_child, from_child
        self.stage = stage  # the staging folder it makes, removed when it is reaped
        self.frames = wire.FrameReader()
        self.reaped = False
        self.like = like  # the programs it was warmed up for, then those it ran
        self.runs = 0  # the programs it was handed
        self.nonce = 0  # the one the frames of its current program carry
        self.first_size = 0.0  # its resident MB after its first program

    @classmethod
    def fork(cls, snapshot: Snapshot) -> Child:
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
            child_main(up_write, down_read, worker_pid, snapshot)
        os.close(down_read)
        os.close(up_write)
        return cls(pid, down_write, up_read, snapshot.like,
                   stage_folder(snapshot.walled_for[0], pid))

    def first_frame(self) -> Taken | None:
        """What the child did with stdin, or None if it died first. Raises WireError for a
        frame that does not say."""
        while (frame := self.frames.next_frame()) is None:
            data = os.read(self.from_child, wire.READ_CHUNK)
            if not data:
                return None
            self.frames.feed(data)
        return read_taken(frame)

    def release(self, pending: bytes) -> None:
        """Let a held child read stdin, after ``pending`` (what the worker read of it)."""
        wire.write_frame(self.to_child, Go(pending).to_frame())

    def kill(self, *, wait: bool = True) -> None:
        """Kill the child (if it still runs) and, with ``wait``, reap it."""
        if not self.reaped:
            os.kill(self.pid, signal.SIGKILL)
        if wait:
            self.reap()

    def ended(self) -> bool:
        """Whether the child has ended (it is then reaped), without waiting."""
        if not self.reaped and os.waitid(os.P_PID, self.pid,
                                         os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
            return False
        self.reap()
        return True

    def reap(self) -> int | None:
        """Wait for the child to end; its wait status (None if already reaped). Closes the
        pipes, and removes its staging folder while its pid is still its own (a process that
        gets the pid next cannot have made a folder of that name)."""
        status = None
        if not self.reaped:
            os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)
            with contextlib.suppress(OSError):  # a workspace gone or no longer writable
                discard_stage(self.stage)
            _, status = os.waitpid(self.pid, 0)
            self.reaped = True
        for fd in (self.to_child, self.from_child):
            if fd >= 0:
                os.close(fd)
        self.to_child = self.from_child = -1
        return status
