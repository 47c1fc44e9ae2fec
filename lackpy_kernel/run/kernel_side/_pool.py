"""Sandbox workers for programs that run side by side: each program on an empty namespace
gets a worker no other program is using, so N programs that wait (a tool call, a slow read)
take about the time of one, each still in a forked child of its own, under its own limits.

One ``Sandbox`` is one worker, which serves one request at a time; the pool holds up to
``size`` of them. The first stays until ``close`` (a service's usual one), the others are
stopped once idle for ``idle_seconds``. A program that finds every worker busy and the
pool full waits for one, on its own event loop (runs may come from several loops)."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from ..runner import ExecutionResult
from ._sandbox import KitArgument, Sandbox

# Seconds an extra worker stays idle before it is stopped (the first one stays).
IDLE_SECONDS = 30.0
_Waiter = tuple[asyncio.AbstractEventLoop, "asyncio.Future[Sandbox | None]"]
_CLOSED = ("the sandbox workers were stopped (the service closed) before this program could "
           "start; nothing ran")


class SandboxPool:
    """Up to ``size`` workers made by ``make`` (None: no bound), for programs run with
    ``keep=False``; extra workers idle for ``idle_seconds`` are stopped (None: kept until
    ``close``)."""

    def __init__(self, make: Callable[[], Sandbox], *, size: int | None,
                 idle_seconds: float | None = IDLE_SECONDS) -> None:
        if size is not None and size < 1:
            raise ValueError(f"a pool of sandbox workers needs size >= 1, not {size}")
        self._make = make
        self.limit = size
        self.idle_seconds = idle_seconds
        self._all: list[Sandbox] = []
        self._free: list[Sandbox] = []
        self._idle_since: dict[Sandbox, float] = {}
        self._waiters: collections.deque[_Waiter] = collections.deque()
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None

    async def run_async(self, program: str, kit: KitArgument,
                        params: dict[str, Any] | None = None, **options: Any) -> ExecutionResult:
        """``Sandbox.run_async(program, kit, params, keep=False, **options)`` on a worker no
        other program is using; waits for one while the pool is full. A program still
        waiting when the pool closes fails, having run nothing."""
        box = await self._take()
        if box is None:
            return ExecutionResult(False, error=_CLOSED, error_type="SandboxError")
        try:
            return await box.run_async(program, kit, params, keep=False, **options)
        finally:
            self._give(box)

    @property
    def size(self) -> int:
        """How many workers the pool holds (running or not yet started)."""
        return len(self._all)

    @property
    def worker_pid(self) -> int | None:
        """The process id of the first worker while it runs, else None."""
        first = self._all[0] if self._all else None
        return first.worker_pid if first is not None else None

    @property
    def worker_pids(self) -> list[int]:
        """The process ids of the pool's workers that run."""
        return [pid for box in list(self._all) if (pid := box.worker_pid) is not None]

    def close(self) -> None:
        """Stop every worker (a program that waits for one fails); the pool makes new ones
        if used again."""
        with self._lock:
            boxes, self._all, self._free = self._all, [], []
            self._idle_since.clear()
            timer, self._timer = self._timer, None
            waiters, self._waiters = self._waiters, collections.deque()
        if timer is not None:
            timer.cancel()
        for loop, waiter in waiters:
            with contextlib.suppress(RuntimeError):  # its loop has closed
                loop.call_soon_threadsafe(_settle, waiter, None)
        for box in boxes:
            box.close()

    # -- internals --------------------------------------------------------------------

    async def _take(self) -> Sandbox | None:
        """A worker for one program: a free one (the oldest first, so extras go idle), a
        new one while the pool is not full, else the next one given back (None: the pool
        closed meanwhile)."""
        with self._lock:
            if self._free:
                box = min(self._free, key=self._all.index)
                self._free.remove(box)
                return box
            if self.limit is None or len(self._all) < self.limit:
                box = self._make()
                self._all.append(box)
                return box
            loop = asyncio.get_running_loop()
            waiter: asyncio.Future[Sandbox | None] = loop.create_future()
            self._waiters.append((loop, waiter))
        try:
            return await waiter
        except asyncio.CancelledError:
            handed = waiter.result() if waiter.done() and not waiter.cancelled() else None
            if handed is not None:
                self._give(handed)  # handed over as the cancel came
            raise

    def _give(self, box: Sandbox) -> None:
        """Hand ``box`` to the next program waiting (on that program's loop), or keep it
        free; a box of a pool closed meanwhile is stopped."""
        with self._lock:
            closed = box not in self._all
            while self._waiters and not closed:
                loop, waiter = self._waiters.popleft()
                if waiter.done():
                    continue
                try:
                    loop.call_soon_threadsafe(self._hand, waiter, box)
                except RuntimeError:  # its loop has closed
                    continue
                return
            if not closed:
                self._free.append(box)
                self._idle_since[box] = time.monotonic()
                self._schedule_reap()
        if closed:
            box.close()

    def _hand(self, waiter: asyncio.Future[Sandbox | None], box: Sandbox) -> None:
        if not _settle(waiter, box):  # cancelled meanwhile: to the next one
            self._give(box)

    def _schedule_reap(self) -> None:
        """Look for idle extra workers in ``idle_seconds`` (called holding the lock)."""
        if self.idle_seconds is None or self._timer is not None or len(self._all) < 2:
            return
        self._timer = threading.Timer(self.idle_seconds, self._reap)
        self._timer.daemon = True
        self._timer.start()

    def _reap(self) -> None:
        """Stop the extra workers idle for ``idle_seconds``; look again later for the rest."""
        now = time.monotonic()
        assert self.idle_seconds is not None
        with self._lock:
            self._timer = None
            first = self._all[0] if self._all else None
            idle = [box for box in self._free if box is not first
                    and now - self._idle_since[box] >= self.idle_seconds]
            for box in idle:
                self._free.remove(box)
                self._all.remove(box)
                del self._idle_since[box]
            if any(box is not first for box in self._free):
                self._schedule_reap()
        for box in idle:
            box.close()


def _settle(waiter: asyncio.Future[Sandbox | None], box: Sandbox | None) -> bool:
    """Give ``waiter`` its worker (None: none will come); whether it still waited."""
    if waiter.done():
        return False
    waiter.set_result(box)
    return True
