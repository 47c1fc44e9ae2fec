"""Run a coroutine to completion from synchronous code, inside a running event loop or not."""

from __future__ import annotations

import asyncio
import concurrent.futures
import queue
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["LoopThread", "WaitingThread", "run_sync"]

T = TypeVar("T")
CANCEL_GRACE_S = 30.0  # how long a cancelled coroutine gets to checkpoint and wind down
CALL_POLL_S = 0.1  # how often a call handed to the waiting thread checks that it still waits


class WaitingThread:
    """The thread that waits in ``LoopThread.run(..., serve=this)``, as the coroutine's
    threads see it: ``call`` has it make a call, such as IPython's ``input()``, which only
    the main thread can stop."""

    def __init__(self) -> None:
        self.calls: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self.waiting = True  # until its run ends

    def call(self, fn: Callable[[], T]) -> T:
        """What ``fn()`` returned, made on the waiting thread. Raises what it raised, or
        KeyboardInterrupt when it was stopped there (the stop is raised on the waiting
        thread too, which stops its run) or when the run ended before the call was made."""
        made = threading.Event()
        outcome: dict[str, Any] = {}

        def on_the_waiting_thread() -> None:
            try:
                outcome["value"] = fn()
            except BaseException as exc:
                outcome["error"] = exc
                if not isinstance(exc, Exception):
                    raise  # the stop button: the run stops too
            finally:
                made.set()

        self.calls.put(on_the_waiting_thread)
        while not made.wait(CALL_POLL_S):
            if not self.waiting:
                raise KeyboardInterrupt("the cell ended before the question was asked")
        if "error" in outcome:
            error = outcome["error"]
            raise error if isinstance(error, Exception) else KeyboardInterrupt(str(error))
        value: T = outcome["value"]
        return value


class LoopThread:
    """A daemon thread running an asyncio loop, for callers that are inside another loop
    (a notebook cell runs inside ipykernel's), where ``asyncio.run`` cannot be used.

    ``grace`` is how long a cancelled coroutine gets to wind down (a plan checkpoints as
    paused, a sandboxed program stops) before ``run`` raises.
    """

    def __init__(self, name: str = "lackpy-engines-loop", *, grace: float = CANCEL_GRACE_S) -> None:
        self.grace = grace
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
        finally:
            try:
                self._loop.run_until_complete(self._loop.shutdown_asyncgens())
                self._loop.run_until_complete(self._loop.shutdown_default_executor())
            finally:
                self._loop.close()

    @property
    def alive(self) -> bool:
        """Whether the loop's thread still runs."""
        return self._thread.is_alive()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None, *,
            serve: WaitingThread | None = None) -> T:
        """Run ``coro`` on the thread's loop and wait for its result; meanwhile the calls
        other threads hand to ``serve`` (``WaitingThread.call``) are made here, on the
        waiting thread.

        A KeyboardInterrupt while waiting, or ``timeout`` passing (TimeoutError), cancels
        the coroutine, waits up to ``grace`` for it to wind down, and raises (a
        KeyboardInterrupt carries the message of the error the coroutine wound down with).
        Raises RuntimeError when the loop's thread has stopped.
        """
        if not self.alive:
            coro.close()
            raise RuntimeError("the lackpy event-loop thread has stopped; load lackpy again")
        finished = threading.Event()
        holder: dict[str, asyncio.Task[T]] = {}

        def start() -> None:
            task = self._loop.create_task(coro)
            task.add_done_callback(lambda _: finished.set())
            if serve is not None:
                task.add_done_callback(lambda _: serve.calls.put(_awake))
            holder["task"] = task

        self._loop.call_soon_threadsafe(start)
        try:
            if not _wait(finished, timeout, serve):
                self._cancel(holder, finished)
                raise TimeoutError(f"lackpy gave up waiting after {timeout} s")
        except KeyboardInterrupt:
            self._cancel(holder, finished)
            stopped = holder["task"]
            if stopped.done() and not stopped.cancelled() and stopped.exception() is not None:
                raise KeyboardInterrupt(str(stopped.exception())) from None
            raise
        finally:
            if serve is not None:
                serve.waiting = False
        task = holder["task"]
        if task.cancelled():
            raise asyncio.CancelledError("the lackpy task was cancelled")
        return task.result()

    def submit(self, coro: Coroutine[Any, Any, Any]) -> concurrent.futures.Future[Any]:
        """Start ``coro`` on the loop without waiting for it."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def close(self) -> None:
        """Stop the loop and wait (up to ``grace``) for its thread."""
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(self.grace)

    def _cancel(self, holder: dict[str, asyncio.Task[Any]], finished: threading.Event) -> None:
        # FIFO with ``start``: by the time this runs, the task exists.
        self._loop.call_soon_threadsafe(lambda: holder["task"].cancel())
        finished.wait(self.grace)


def _wait(finished: threading.Event, timeout: float | None, serve: WaitingThread | None) -> bool:
    """Wait for ``finished``, at most ``timeout`` seconds, making the calls handed to
    ``serve`` meanwhile; whether it is set."""
    if serve is None:
        return finished.wait(timeout)
    deadline = None if timeout is None else time.monotonic() + timeout
    while not finished.is_set():
        left = None if deadline is None else deadline - time.monotonic()
        if left is not None and left <= 0:
            return False
        try:
            call = serve.calls.get(timeout=left)
        except queue.Empty:
            continue
        call()
    return True


def _awake() -> None:
    """What wakes a waiting ``_wait`` when its coroutine is done."""


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
