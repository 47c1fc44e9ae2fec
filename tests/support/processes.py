"""Processes as /proc shows them: the sandbox workers of a process, their children, and
whether a process is gone."""

from __future__ import annotations

import time
from pathlib import Path

WORKER_MODULE = b"lackpy_kernel.run.worker"


def children_of(pid: int) -> list[int]:
    """The process ids of ``pid``'s children (every thread's)."""
    children = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            children += [int(child) for child in (task / "children").read_text().split()]
        except FileNotFoundError:
            continue  # the thread ended meanwhile
    return children


def workers_of(pid: int) -> list[int]:
    """The sandbox worker processes ``pid`` started that still run."""
    return [child for child in children_of(pid) if WORKER_MODULE in command_line(child)]


def command_line(pid: int, *, wait: float = 5.0) -> bytes:
    """``pid``'s command line (empty once it is gone). A process still inside ``execve``
    shows an empty one for a moment; this waits that out."""
    deadline = time.monotonic() + wait
    while True:
        try:
            line = Path(f"/proc/{pid}/cmdline").read_bytes()
        except FileNotFoundError:
            return b""
        if line or gone(pid) or time.monotonic() > deadline:
            return line
        time.sleep(0.005)


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command's name (its state first), or None
    once ``pid`` is gone (reaped before the open, or before the read)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None


def cpu_ticks(pid: int) -> int:
    """The CPU time ``pid`` has used, user and system, in clock ticks (0 once it is gone)."""
    fields = _stat(pid)
    return 0 if fields is None else int(fields[11]) + int(fields[12])  # stat's 14th and 15th


def gone(pid: int) -> bool:
    """Whether ``pid`` no longer runs (exited, or a zombie waiting to be reaped)."""
    fields = _stat(pid)
    return fields is None or fields[0] == "Z"


def gone_within(pid: int, seconds: float) -> bool:
    """Whether ``pid`` is gone within ``seconds`` (polled)."""
    deadline = time.monotonic() + seconds
    while not gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True
