"""Checkpoints: the seed's v2 shape, resume where a run stopped, refusals, and who holds a key."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time

import pytest

from lackpy_kernel.engines import (
    Approval,
    ConcurrentPlanRunError,
    Plan,
    PlanPaused,
    PlanResumeError,
    PlanRuntimeError,
    PlanState,
    Program,
    Step,
    Store,
)
from lackpy_kernel.engines.plans import STALE_AFTER_SECONDS, Checkpointer, owner_alive


class Calls:
    """Callables that count their runs; ``gate`` pauses until it is opened."""

    def __init__(self) -> None:
        self.count: dict[str, int] = {}
        self.open = False

    def mark(self, name: str) -> None:
        self.count[name] = self.count.get(name, 0) + 1

    def fetch(self, task):
        self.mark("fetch")
        return f"fetched {task}"

    def gate(self, task):
        self.mark("gate")
        if not self.open:
            raise PlanPaused("waiting for approval")
        return f"approved {task}"

    def publish(self, task):
        self.mark("publish")
        return f"published {task}"


def approved() -> Calls:
    calls = Calls()
    calls.open = True
    return calls


def three_steps(calls: Calls, store: Store, **options) -> Plan:
    return Plan(Step(calls.fetch, writes="fetched"), Step(calls.gate, writes="approved"),
                Step(calls.publish, writes="published"), store=store, checkpoint_key="run",
                **options)


def test_a_finished_run_leaves_a_done_checkpoint_in_the_seeds_shape():
    store = Store()
    three_steps(approved(), store).run("report")
    saved = store.read("run")
    assert {"next_step", "kv", "completed_steps", "status", "run_uid", "history"} <= set(saved)
    assert saved["status"] == "done" and saved["next_step"] is None
    assert saved["completed_steps"] == ["fetch", "gate", "publish"]
    assert saved["kv"] == {"fetched": "fetched report", "approved": "approved fetched report",
                           "published": "published approved fetched report"}
    assert set(saved["step_hashes"]) == {"fetch", "gate", "publish"}
    assert [item["name"] for item in saved["history"]] == ["fetch", "gate", "publish"]


def test_a_paused_run_resumes_at_the_paused_step_and_runs_nothing_twice():
    store, calls = Store(), Calls()
    paused = three_steps(calls, store).run("report")
    assert paused.error.type == "PlanPaused" and paused.error.retryable
    saved = store.read("run")
    assert (saved["status"], saved["next_step"]) == ("paused", "gate")
    assert store.read("approved") is None

    calls.open = True
    finished = three_steps(calls, store, resume=True).run()
    assert finished.ok and finished.payload == "published approved fetched report"
    assert calls.count == {"fetch": 1, "gate": 2, "publish": 1}
    assert [r.name for r in finished.history] == ["fetch", "gate", "publish"]
    assert store.read("published") == finished.payload and store.read("run")["status"] == "done"


def test_a_failed_run_resumes_at_the_failed_step():
    store, attempts = Store(), []

    def flaky(task):
        attempts.append(task)
        if attempts.count(task) == 1:
            raise ConnectionError("the service hung up")
        return "ok"

    def first(task):
        attempts.append("first")
        return task

    def plan(**options):
        return Plan(Step(first), Step(flaky), store=store, checkpoint_key="k", **options)

    failed = plan().run("t")
    assert failed.error.type == "ConnectionError" and failed.error.retryable
    assert (store.read("k")["status"], store.read("k")["next_step"]) == ("failed", "flaky")
    assert plan(resume=True).run().payload == "ok"
    assert attempts == ["first", "t", "t"]


def test_resume_of_a_done_run_runs_nothing_and_returns_its_result():
    store, calls = Store(), approved()
    first = three_steps(calls, store).run("report")
    again = three_steps(calls, store, resume=True).run("report")
    assert again.payload == first.payload and calls.count == {"fetch": 1, "gate": 1, "publish": 1}


def test_resume_without_a_checkpoint_starts_fresh():
    envelope = three_steps(approved(), Store(), resume=True).run("report")
    assert envelope.ok and len(envelope.history) == 3


def test_a_new_run_over_a_done_checkpoint_starts_over():
    store, calls = Store(), approved()
    three_steps(calls, store).run("a")
    assert three_steps(calls, store).run("b").payload == "published approved fetched b"


def test_a_new_run_will_not_overwrite_a_paused_one():
    store = Store()
    three_steps(Calls(), store).run("report")
    with pytest.raises(ConcurrentPlanRunError, match="holds a paused run at step 'gate'; pass "
                                                     "resume=True to continue it, or restart"):
        three_steps(Calls(), store).run("report")


def test_resume_is_refused_when_a_completed_steps_program_changed(service):
    store = Store()

    def hold(task):
        raise PlanPaused("later")

    def plan(source, **options):
        return Plan(Step(Program(source), name="count", writes="n"), Step(hold), store=store,
                    checkpoint_key="k", service=service, **options)

    plan("len(read_file(task))").run("notes.txt")
    with pytest.raises(PlanResumeError, match="the completed step\\(s\\) 'count' changed since "
                                              "the checkpoint"):
        plan("len(read_file(task)) + 1", resume=True).run()
    assert store.read("k")["status"] == "paused"  # the refusal changed nothing


def test_editing_a_step_that_has_not_run_yet_does_not_stop_a_resume(service):
    store = Store()

    def plan(second, **options):
        def hold(task):
            raise PlanPaused("later")

        return Plan(Step(Program("len(read_file(task))"), name="count"),
                    Step(hold if second is None else Program(second), name="next"),
                    store=store, checkpoint_key="k", service=service, **options)

    plan(None).run("notes.txt")
    assert plan("task * 2", resume=True).run().payload == 34


def test_restart_starts_over_with_the_checkpoints_task(service):
    store = Store()

    def hold(task):
        raise PlanPaused("later")

    Plan(Step(Program("len(task)"), name="n"), Step(hold), store=store, checkpoint_key="k",
         service=service).run("abc")
    fresh = Plan(Step(Program("len(task) * 10"), name="n"), store=store, checkpoint_key="k",
                 service=service)
    envelope = fresh.restart()
    assert envelope.payload == 30 and store.read("k")["status"] == "done"


def test_resume_with_another_task_is_refused():
    store = Store()
    three_steps(Calls(), store).run("report")
    with pytest.raises(PlanResumeError, match="a run of the task 'report', not 'other'"):
        three_steps(approved(), store, resume=True).run("other")


def test_a_key_holding_something_else_is_never_overwritten():
    store = Store()
    store.write("run", {"mine": True})
    with pytest.raises(ConcurrentPlanRunError, match="not a plan checkpoint; refusing"):
        three_steps(approved(), store).run("x")
    assert store.read("run") == {"mine": True}


async def test_a_second_run_on_a_key_a_live_run_holds_fails():
    store, release, started = Store(), asyncio.Event(), asyncio.Event()

    async def slow(task):
        started.set()
        await release.wait()
        return task

    plan = Plan(Step(slow), store=store, checkpoint_key="k")
    first = asyncio.ensure_future(plan.arun("one"))
    await started.wait()
    with pytest.raises(ConcurrentPlanRunError, match="is held by a live run"):
        await plan.arun("two")
    with pytest.raises(ConcurrentPlanRunError, match="is held by a live run"):
        await Plan(Step(slow), store=store, checkpoint_key="k", resume=True).arun("one")
    release.set()
    assert (await first).payload == "one"


async def test_fork_gives_each_run_its_own_key():
    store, release = Store(), asyncio.Event()

    async def slow(task):
        await release.wait()
        return task

    plan = Plan(Step(slow), store=store, checkpoint_key="k", on_concurrent="fork")
    runs = [asyncio.ensure_future(plan.arun(n)) for n in range(3)]
    await asyncio.sleep(0.05)
    release.set()
    assert [(await run).payload for run in runs] == [0, 1, 2]
    keys = store.keys("k:")
    assert len(keys) == 3 and {store.read(k)["task"] for k in keys} == {0, 1, 2}


async def test_an_interrupt_checkpoints_the_run_as_paused_and_resume_continues():
    store, started = Store(), asyncio.Event()
    calls = []

    async def forever(task):
        calls.append(task)
        started.set()
        if len(calls) == 1:
            await asyncio.sleep(3600)
        return "done"

    def first(task):
        return task

    def plan(**options):
        return Plan(Step(first, writes="first"), Step(forever), store=store,
                    checkpoint_key="k", **options)

    running = asyncio.ensure_future(plan().arun("t"))
    await started.wait()
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    saved = store.read("k")
    assert (saved["status"], saved["next_step"]) == ("paused", "forever")
    assert saved["error"]["type"] == "CancelledError" and store.read("first") == "t"
    assert (await plan(resume=True).arun()).payload == "done"


def _dead_pid() -> int:
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    return finished.pid


def _held_by(store: Store, key: str = "run", **owner) -> None:
    """Make the paused checkpoint look as if a run that is 'running' under ``owner`` holds it."""
    saved = store.read(key)
    base = {"host": socket.gethostname(), "pid": os.getpid(), "started": None,
            "heartbeat": time.time()}
    store.write(key, {**saved, "status": "running", "owner": {**base, **owner}})


def test_a_run_whose_process_died_is_taken_over_with_resume():
    store = Store()
    three_steps(Calls(), store).run("report")
    _held_by(store, pid=_dead_pid())
    with pytest.raises(ConcurrentPlanRunError, match="holds a run whose process died at step"):
        three_steps(approved(), store).run("report")
    assert three_steps(approved(), store, resume=True).run().ok


def test_a_run_this_process_abandoned_is_taken_over_with_resume():
    store = Store()
    three_steps(Calls(), store).run("report")
    _held_by(store)  # this process's pid, but no run of it is going on
    assert three_steps(approved(), store, resume=True).run().ok


def test_a_run_on_another_host_holds_its_key_while_it_beats():
    store = Store()
    three_steps(Calls(), store).run("report")
    _held_by(store, host="elsewhere", pid=1)
    with pytest.raises(ConcurrentPlanRunError, match="live run"):
        three_steps(approved(), store, resume=True).run()
    _held_by(store, host="elsewhere", pid=1, heartbeat=time.time() - STALE_AFTER_SECONDS - 1)
    assert three_steps(approved(), store, resume=True).run().ok


def test_a_heartbeat_refreshes_the_owner_and_notices_a_takeover():
    store = Store()
    holder = Checkpointer(store, "k", "run-a", step_hashes={"s": "h"})
    try:
        holder.claim(PlanState("t", "s"), resume=False)
        before = store.read("k")["owner"]["heartbeat"]
        assert holder.beat() and store.read("k")["owner"]["heartbeat"] >= before
        assert owner_alive(store.read("k"))
        store.write("k", {**store.read("k"), "run_uid": "run-b"})
        assert holder.beat() is False
    finally:
        holder.release()
    assert not owner_alive(store.read("k"))  # run-b is not running in this process


def test_an_output_a_checkpoint_cannot_hold_is_a_plan_bug_and_the_run_is_marked_failed():
    store = Store()

    def make_set(task):
        return {1, 2}

    with pytest.raises(PlanRuntimeError, match="step 'make_set' .* output a set, which a Store "
                                               "cannot hold"):
        Plan(Step(make_set), store=store, checkpoint_key="k").run(None)
    assert store.read("k")["status"] == "failed"


def test_a_program_cannot_touch_the_plan_store(service, workspace):
    store = Store(workspace / ".lackpy" / "plans.sqlite")
    plan = Plan(Step(Program("write_file('.lackpy/plans.sqlite', 'gone')", kit=["write_file"]),
                     name="vandal"), store=store, checkpoint_key="k", service=service)
    envelope = plan.run(None)
    assert envelope.error.type == "LackpyRuntimeError" and ".lackpy" in envelope.error.message
    assert store.read("k")["status"] == "failed"


def test_an_approval_pauses_the_run_and_resuming_it_is_the_approval():
    store, calls = Store(), Calls()

    def plan(**options):
        return Plan(Step(calls.fetch), Step(Approval("publish the report?"), name="review"),
                    Step(calls.publish), store=store, checkpoint_key="k", **options)

    paused = plan().run("report")
    assert paused.error.type == "PlanPaused"
    assert "paused at step 'review': publish the report?" in paused.error.message
    assert store.read("k")["paused_step"] == "review"
    finished = plan(resume=True).run()
    assert finished.payload == "published fetched report"
    assert [r.name for r in finished.history] == ["fetch", "review", "publish"]
    assert calls.count == {"fetch": 1, "publish": 1}


def test_an_approval_is_asked_again_in_a_new_run_and_after_a_crash():
    store = Store()

    def plan(**options):
        return Plan(Step(Approval(), name="ok?"), store=store, checkpoint_key="k", **options)

    plan().run(1)
    plan(resume=True).run()
    assert plan().run(2).error.type == "PlanPaused"  # a new run asks again
    _held_by(store, key="k", pid=_dead_pid())  # the paused run's process died at the gate
    assert plan(resume=True).run().error.type == "PlanPaused"  # not a pause: no approval


def test_an_approval_in_a_band_lets_the_band_run_when_resumed():
    store = Store()

    def plan(**options):
        return Plan(Step(shout_step, parallel=True), Step(Approval(), name="gate", parallel=True),
                    store=store, checkpoint_key="k", **options)

    assert plan().run("x").error.type == "PlanPaused"
    saved = store.read("k")
    assert (saved["next_step"], saved["paused_step"], saved["kv"]) == ("shout_step", "gate", {})
    assert [r.output for r in plan(resume=True).run().history] == ["X", "x"]


def shout_step(task):
    return task.upper()


def test_a_checkpoint_that_cannot_be_read_refuses_resume_and_restart_still_works():
    store = Store()
    three_steps(Calls(), store).run("report")
    store.write("run", {**store.read("run"), "history": [{"no": "name"}]})
    with pytest.raises(PlanResumeError, match="its checkpoint cannot be read .*restart the run"):
        three_steps(approved(), store, resume=True).run()
    assert three_steps(approved(), store).restart().ok
