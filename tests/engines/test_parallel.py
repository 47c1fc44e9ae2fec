"""Parallel means parallel: ``run_many`` and a ``parallel=True`` band of Program steps run
their programs side by side in the real sandbox, each in a worker of its own, up to
``concurrency`` and ``[sandbox] workers``.

Overlap is proven by order, never by time: each program waits in a kernel-side tool on a
barrier that opens only once all of them are inside it (run one after another, the first
would wait there alone until the barrier's generous timeout broke it)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from lackpy_kernel.config import LackpyConfig
from lackpy_kernel.engines import Plan, Program, Step, Store
from lackpy_kernel.kit import ToolSpec
from lackpy_kernel.kit.builtin_specs import READ_GRADE
from lackpy_kernel.run import Sandbox, SandboxLimits, sandbox_supported
from lackpy_kernel.run.kernel_side import SandboxPool
from lackpy_kernel.service import LackpyService
from tests.support.processes import gone, gone_within

pytestmark = pytest.mark.skipif(not sandbox_supported(), reason="the worker needs Linux")

WAIT = 60.0  # seconds a barrier waits before it breaks: far past any busy machine's start-up


class Meeting:
    """Kernel-side tools: ``meet(task)`` returns once ``parties`` programs are inside it at
    the same time, and counts how many were inside at most."""

    def __init__(self, parties: int) -> None:
        self.barrier = threading.Barrier(parties, timeout=WAIT)
        self.lock = threading.Lock()
        self.inside = 0
        self.most = 0

    def register(self, service: LackpyService) -> None:
        service.toolbox.register_tool(ToolSpec("meet", "custom", **READ_GRADE), self.meet)

    def meet(self, task):
        with self.lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
        try:
            self.barrier.wait()
        finally:
            with self.lock:
                self.inside -= 1
        return task


def sandboxed_service(workspace) -> LackpyService:
    return LackpyService(workspace, LackpyConfig(sandbox_timeout=WAIT + 30,
                                                 sandbox_approve="never"))


def test_run_many_runs_its_programs_side_by_side(workspace):
    meeting = Meeting(4)
    with sandboxed_service(workspace) as service:
        meeting.register(service)
        plan = Plan(Step(Program("[meet(task), read_file('notes.txt').split()[0]]")),
                    kit=["meet", "read_file"], service=service)
        envelopes = plan.run_many([1, 2, 3, 4], concurrency=4)
        assert [envelope.error for envelope in envelopes] == [None] * 4
        assert [envelope.payload for envelope in envelopes] == [[n, "alpha"] for n in (1, 2, 3, 4)]
        assert meeting.most == 4
        assert len(service.sandbox_worker_pids) == 4  # one worker each


def test_a_parallel_band_runs_its_program_steps_side_by_side(workspace):
    meeting = Meeting(3)
    with sandboxed_service(workspace) as service:
        meeting.register(service)
        plan = Plan(*(Step(Program(f"meet('{name}')"), name=name, parallel=True)
                      for name in ("a", "b", "c")),
                    Step(lambda task: "after", name="after"),
                    kit=["meet"], service=service)
        envelope = plan.run(None)
        assert envelope.error is None
        assert [(result.name, result.output) for result in envelope.history] == [
            ("a", "a"), ("b", "b"), ("c", "c"), ("after", "after")]
        assert meeting.most == 3


def test_concurrency_caps_how_many_programs_run_at_once(workspace):
    meeting = Meeting(2)  # opens for each pair: the cap must let two in, and no more
    with sandboxed_service(workspace) as service:
        meeting.register(service)
        plan = Plan(Step(Program("meet(task)")), kit=["meet"], service=service)
        envelopes = plan.run_many(list(range(6)), concurrency=2)
        assert [envelope.payload for envelope in envelopes] == list(range(6))
        assert meeting.most == 2


def test_the_workers_setting_bounds_the_workers_whatever_the_concurrency(workspace):
    meeting = Meeting(2)
    (workspace / ".lackpy" / "config.toml").write_text(
        f'[sandbox]\napprove = "never"\ntimeout = {WAIT + 30}\nworkers = 2\n')
    with LackpyService(workspace) as service:
        meeting.register(service)
        plan = Plan(Step(Program("meet(task)")), kit=["meet"], service=service)
        envelopes = plan.run_many(list(range(6)))  # no cap of its own: six at once
        assert [envelope.payload for envelope in envelopes] == list(range(6))
        assert meeting.most == 2
        assert len(service.sandbox_worker_pids) == 2


def test_each_programs_file_changes_land_whole_when_they_run_side_by_side(workspace):
    meeting = Meeting(3)
    with sandboxed_service(workspace) as service:
        meeting.register(service)
        plan = Plan(*(Step(Program(f"write_file('{name}.txt', '{name}')\n"
                                   f"write_file('out/{name}.txt', meet('{name}'))\n'{name}'"),
                           name=name, parallel=True) for name in ("a", "b", "c")),
                    kit=["meet", "write_file"], service=service)
        envelope = plan.run(None)
        assert envelope.error is None
        for name in ("a", "b", "c"):
            assert (workspace / f"{name}.txt").read_text() == name
            assert (workspace / "out" / f"{name}.txt").read_text() == name


# -- the pool itself ---------------------------------------------------------------------


@pytest.fixture
def pool_parts(workspace):
    meeting = Meeting(2)
    with sandboxed_service(workspace) as service:
        meeting.register(service)
        yield meeting, service


def make_pool(service: LackpyService, **options) -> SandboxPool:
    def make() -> Sandbox:
        return Sandbox(service.workspace, SandboxLimits(timeout=WAIT + 30),
                       toolbox=service.toolbox, approve_writes=False)
    return SandboxPool(make, **options)


async def test_extra_workers_stop_once_idle_and_the_first_stays(pool_parts):
    meeting, service = pool_parts
    pool = make_pool(service, size=4, idle_seconds=0.01)
    meeting.barrier = threading.Barrier(3, timeout=WAIT)  # this test is the third party
    try:
        running = asyncio.gather(*(pool.run_async("meet(n)", ["meet"], {"n": n})
                                   for n in (1, 2)))
        while meeting.inside < 2 and not running.done():
            await asyncio.sleep(0.01)
        # both programs wait inside their call: neither worker can be idle yet (read after
        # the run, a loaded machine had already stopped the extra one)
        first, busy = pool.worker_pid, pool.worker_pids
        await asyncio.to_thread(meeting.barrier.wait)
        results = await running
        assert [result.output for result in results] == [1, 2]
        extra = [pid for pid in busy if pid != first]
        assert len(extra) == 1
        assert gone_within(extra[0], WAIT)
        assert pool.size == 1 and not gone(first)
        again = await pool.run_async("n + 1", [], {"n": 3})
        assert again.output == 4 and pool.worker_pid == first
    finally:
        pool.close()
    assert gone_within(first, WAIT)


async def test_a_program_waiting_for_a_worker_can_be_cancelled_and_the_worker_still_serves(
        pool_parts):
    meeting, service = pool_parts
    pool = make_pool(service, size=1)
    try:
        holder = asyncio.ensure_future(pool.run_async("meet(1)", ["meet"]))
        waiting = asyncio.ensure_future(pool.run_async("2", []))
        while meeting.inside == 0:  # the holder is inside its call: the pool is full
            await asyncio.sleep(0.01)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        meeting.barrier.wait()  # the second party: lets the holder go on
        assert (await holder).output == 1
        assert (await pool.run_async("3", [])).output == 3
        assert pool.size == 1
    finally:
        pool.close()


async def test_a_program_waiting_for_a_worker_when_the_pool_closes_fails_having_run_nothing(
        pool_parts):
    meeting, service = pool_parts
    pool = make_pool(service, size=1)
    holder = asyncio.ensure_future(pool.run_async("meet(1)", ["meet"]))
    waiting = asyncio.ensure_future(pool.run_async("2", []))
    while meeting.inside == 0:
        await asyncio.sleep(0.01)
    pool.close()
    result = await waiting
    assert (result.success, result.error_type) == (False, "SandboxError")
    assert "nothing ran" in result.error
    await asyncio.to_thread(meeting.barrier.wait)
    assert not (await holder).success  # its worker was stopped under it
    assert pool.size == 0 and pool.worker_pids == []


def test_a_pool_needs_room_for_one_worker(pool_parts):
    with pytest.raises(ValueError, match="size >= 1"):
        make_pool(pool_parts[1], size=0)


def test_a_band_of_writers_side_by_side_lands_each_change_only_once_approved(workspace):
    meeting = Meeting(2)
    store = Store(workspace / "plans.sqlite")
    with LackpyService(workspace, LackpyConfig(sandbox_timeout=WAIT + 30,
                                               sandbox_approve="write")) as service:
        meeting.register(service)

        def plan(resume: bool) -> Plan:
            return Plan(*(Step(Program(f"meet('{name}')\nwrite_file('{name}.txt', task)"),
                               name=name, parallel=True) for name in ("a", "b")),
                        kit=["meet", "write_file"], store=store, checkpoint_key="writers",
                        resume=resume, service=service)

        paused = plan(False).run("v1")
        assert paused.error.type == "PlanPaused"
        assert not (workspace / "a.txt").exists() and not (workspace / "b.txt").exists()
        assert "paused at step 'a'" in paused.error.message
        again = plan(True).run(None, approve=True)  # a's change lands; b's is asked for
        assert "paused at step 'b'" in again.error.message
        assert (workspace / "a.txt").read_text() == "v1" and not (workspace / "b.txt").exists()
        (workspace / "a.txt").write_text("changed since")  # a ran dry: not written again
        done = plan(True).run(None, approve=True)
        assert done.error is None
        assert [(workspace / name).read_text() for name in ("a.txt", "b.txt")] == [
            "changed since", "v1"]
