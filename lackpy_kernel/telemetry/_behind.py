"""Writes off the critical path: what the usage record and the ratchet's intent log keep is
handed to :func:`write_behind` and written by one daemon thread per process.

The thread writes what is pending within :data:`FLUSH_EVERY_S` of the first item handed
to it, everything pending at once, so a killed process loses at most about the last
second. :func:`flush_writes` writes everything pending now (readers call it first, so they
see everything this process handed over), and runs at a clean exit. A forked child
starts with nothing pending: its parent writes what it had.

A ``write(path, items)`` function never raises for a file that cannot be written (it
logs); it is called for one path at a time, never at once with another write.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
Write = Callable[[Path, list[T]], None]

FLUSH_EVERY_S = 0.5


class _Writer:
    """The process's pending writes, by (write function, path), and the thread that makes them."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        """Nothing pending, no thread, fresh locks (also what a forked child starts with: a
        lock another thread held at the fork would stay held in the child)."""
        self._lock = threading.Lock()  # guards _pending, _writing and _thread
        self._woken = threading.Condition(self._lock)
        self._turn = threading.Lock()  # held while a batch is written: one writer at a time
        self._pending: dict[tuple[Write[Any], Path], list[Any]] = {}
        self._writing: dict[tuple[Write[Any], Path], list[Any]] = {}
        self._thread: threading.Thread | None = None

    def add(self, write: Write[T], path: Path, item: T) -> None:
        with self._lock:
            if not self._pending:
                self._woken.notify()
            self._pending.setdefault((write, path), []).append(item)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="lackpy-write-behind",
                                                daemon=True)
                self._thread.start()

    def unwritten(self, write: Write[T], path: Path) -> list[T]:
        with self._lock:
            return [*self._writing.get((write, path), ()), *self._pending.get((write, path), ())]

    def flush(self) -> None:
        with self._turn:
            with self._lock:
                taken, self._pending = self._pending, {}
                self._writing = taken
            try:
                for (write, where), items in taken.items():
                    write(where, items)
            finally:
                with self._lock:
                    self._writing = {}

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._pending:
                    self._woken.wait()
            time.sleep(FLUSH_EVERY_S)  # gathering what comes meanwhile into one write
            self.flush()


_WRITER = _Writer()
atexit.register(_WRITER.flush)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_WRITER.reset)


def write_behind(write: Write[T], path: Path, item: T) -> None:
    """Have ``write(path, [item, ...])`` called soon, on the writer thread, with ``item``
    and whatever else was handed over for the same ``write`` and ``path`` meanwhile."""
    _WRITER.add(write, path, item)


def unwritten(write: Write[T], path: Path) -> list[T]:
    """The items handed to ``write`` for ``path`` that it has not finished writing, oldest
    first. (Read this before the file: an item leaves this list only once written.)"""
    return _WRITER.unwritten(write, path)


def flush_writes() -> None:
    """Write everything this process has pending now, in this thread (after the write in
    progress, if any)."""
    _WRITER.flush()
