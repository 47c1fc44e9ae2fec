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


def cpu_ticks(pid: int) -> int:
    """The CPU time ``pid`` has used, user and system, in clock ticks (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return 0
    return int(fields[11]) + int(fields[12])  # utime and stime: fields 14 and 15 of stat


def gone(pid: int) -> bool:
    """Whether ``pid`` no longer runs (exited, or a zombie waiting to be reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except (FileNotFoundError, ProcessLookupError):  # reaped before the open, or before the read
        return True


def gone_within(pid: int, seconds: float) -> bool:
    """Whether ``pid`` is gone within ``seconds`` (polled)."""
    deadline = time.monotonic() + seconds
    while not gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True
