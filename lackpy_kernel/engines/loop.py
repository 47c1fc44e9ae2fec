"""Run a coroutine to completion from synchronous code, inside a running event loop or not."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["LoopThread", "run_sync"]

T = TypeVar("T")
CANCEL_GRACE_S = 30.0  # how long a cancelled coroutine gets to checkpoint and wind down


class LoopThread:
    """A daemon thread running an asyncio loop, for callers that are inside another loop
    (a notebook cell runs inside ipykernel's), where ``asyncio.run`` cannot be used."""

    def __init__(self, name: str = "lackpy-engines-loop") -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the thread's loop and wait for its result.

        A KeyboardInterrupt while waiting cancels the coroutine (a plan then checkpoints as
        paused), waits for it to wind down, and is raised again.
        """
        finished = threading.Event()
        holder: dict[str, asyncio.Task[T]] = {}

        def start() -> None:
            task = self._loop.create_task(coro)
            task.add_done_callback(lambda _: finished.set())
            holder["task"] = task

        self._loop.call_soon_threadsafe(start)
        try:
            finished.wait()
        except KeyboardInterrupt:
            # FIFO with ``start``: by the time this runs, the task exists.
            self._loop.call_soon_threadsafe(lambda: holder["task"].cancel())
            finished.wait(CANCEL_GRACE_S)
            raise
        return holder["task"].result()


_shared: LoopThread | None = None
_shared_lock = threading.Lock()


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """``coro``'s result: with ``asyncio.run`` where no loop runs in this thread, else on a
    shared background loop thread (never ``asyncio.run`` inside a running loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = LoopThread()
    return _shared.run(coro)
