"""LoopThread: coroutines run to completion from synchronous code inside another loop."""

import asyncio
import threading

import pytest

from lackpy_kernel.engines.loop import LoopThread


def test_a_timeout_cancels_the_coroutine_and_the_loop_goes_on():
    loop = LoopThread()
    cancelled = threading.Event()

    async def slow():
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    try:
        with pytest.raises(TimeoutError):
            loop.run(slow(), timeout=0.2)
        assert cancelled.is_set()
        assert loop.run(asyncio.sleep(0, "ok")) == "ok"
    finally:
        loop.close()
    assert not loop.alive


def test_a_stopped_loop_says_so():
    loop = LoopThread()
    loop.close()

    async def never() -> None:
        raise AssertionError("ran on a stopped loop")

    with pytest.raises(RuntimeError, match="event-loop thread has stopped"):
        loop.run(never())
