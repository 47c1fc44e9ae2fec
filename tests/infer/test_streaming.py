"""Streamed answers: the idle timeout turns a stall into StreamStallError, which the policy retries."""

from __future__ import annotations

import asyncio
import time

import pytest

from lackpy_kernel.errors import StreamStallError
from lackpy_kernel.infer.models import RetryPolicy, iter_with_idle_timeout


async def _chunks(*delays: float):
    for n, delay in enumerate(delays):
        await asyncio.sleep(delay)
        yield n


async def test_idle_timeout_passes_a_steady_stream():
    steady = [n async for n in iter_with_idle_timeout(_chunks(0, 0.01, 0.01), 0.5)]
    assert steady == [0, 1, 2]
    assert [n async for n in iter_with_idle_timeout(_chunks(0, 0), None)] == [0, 1]


async def test_a_stalled_stream_raises_stream_stall_error_naming_the_gap():
    closed = False

    async def stalls():
        nonlocal closed
        try:
            yield "a"
            await asyncio.sleep(10)
            yield "b"
        finally:
            closed = True

    start = time.monotonic()
    got = []
    with pytest.raises(StreamStallError, match=r"the test stream stalled: no data for 0\.2 s") as caught:
        async for chunk in iter_with_idle_timeout(stalls(), 0.2, what="the test stream"):
            got.append(chunk)
    assert got == ["a"] and caught.value.gap == 0.2 and closed
    assert 0.15 < time.monotonic() - start < 1.5


async def test_stalls_are_retried_and_the_final_error_stays_a_stall():
    calls = 0

    async def attempt():
        nonlocal calls
        calls += 1
        return [n async for n in iter_with_idle_timeout(_chunks(0, 5), 0.05)]

    with pytest.raises(StreamStallError, match="after 2 attempts") as caught:
        await RetryPolicy(max_retries=1, retry_delay=0.001).run(attempt, lambda e: False)
    assert calls == 2 and caught.value.gap == 0.05
