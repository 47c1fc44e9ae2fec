"""run_many: one Envelope per input, in input order, errors in their slots, a concurrency cap."""

from __future__ import annotations

import asyncio
import threading

import pytest

from lackpy_kernel.engines import Plan, Step, Store
from lackpy_kernel.errors import UsageError


class Gauge:
    """Counts how many calls are inside at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.inside = 0
        self.most = 0

    async def measure(self, task):
        with self.lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
        await asyncio.sleep(0.01)
        with self.lock:
            self.inside -= 1
        if task % 3 == 0:
            raise ValueError(f"{task} is a multiple of three")
        return task * 10


def test_results_come_in_input_order_with_errors_in_their_slots():
    gauge = Gauge()
    envelopes = Plan(Step(gauge.measure, name="measure")).run_many(range(1, 8), concurrency=2)
    assert [e.payload for e in envelopes] == [10, 20, None, 40, 50, None, 70]
    assert [e.error.message for e in envelopes if e.error] == [
        "3 is a multiple of three", "6 is a multiple of three"]
    assert gauge.most == 2


def test_without_a_cap_every_run_starts_at_once():
    gauge = Gauge()
    Plan(Step(gauge.measure, name="measure")).run_many([1, 2, 4, 5])
    assert gauge.most == 4


def test_fork_gives_each_input_its_own_checkpoint():
    store = Store()

    def double(task):
        return task * 2

    plan = Plan(Step(double, writes="last"), store=store, checkpoint_key="batch",
                on_concurrent="fork")
    envelopes = plan.run_many([1, 2, 3, 4, 5], concurrency=2)
    assert [e.payload for e in envelopes] == [2, 4, 6, 8, 10]
    checkpoints = [store.read(key) for key in store.keys("batch:")]
    assert sorted(c["task"] for c in checkpoints) == [1, 2, 3, 4, 5]
    assert {c["status"] for c in checkpoints} == {"done"}


async def test_one_key_in_fail_mode_lets_one_run_in_and_the_others_get_the_error():
    release = asyncio.Event()

    async def wait(task):
        await release.wait()
        return task

    plan = Plan(Step(wait), store=Store(), checkpoint_key="one")
    batch = asyncio.ensure_future(plan.arun_many([1, 2, 3]))
    await asyncio.sleep(0.05)
    release.set()
    envelopes = await batch
    assert sum(e.ok for e in envelopes) == 1
    assert {e.error.type for e in envelopes if e.error} == {"ConcurrentPlanRunError"}


def test_a_bad_concurrency_is_refused():
    def same(task):
        return task

    with pytest.raises(UsageError, match="concurrency must be a whole number"):
        Plan(Step(same)).run_many([1], concurrency=0)
