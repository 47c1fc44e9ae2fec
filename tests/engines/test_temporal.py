"""Plans on a real Temporal dev server: the same Envelopes as the local engine, a worker killed
mid-step, pauses and resume signals, key conflicts, run_many under a cap, clear errors.

The server is started once for the module (tests/support/temporal.py); each test has its own
task queue, served by a worker in this process or by `lackpy worker` processes.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
import uuid

import pytest
from temporalio.converter import DataConverter
from temporalio.worker import Replayer
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from lackpy_kernel.engines import (
    Approval,
    ConcurrentPlanRunError,
    ErrorInfo,
    Plan,
    PlanRegistryError,
    PlanRuntimeError,
    Program,
    Step,
    StepResult,
    Store,
    from_parallel_all,
    from_start,
)
from lackpy_kernel.engines.plans import PlanLibrary
from lackpy_kernel.engines.temporal import (
    CommitAnswer,
    CommitRequest,
    PlanManyWorkflow,
    PlanWorkflow,
    StepActivities,
    StepAnswer,
    StepPolicy,
    StepRequest,
    TemporalRunner,
    TemporalWorker,
    connect,
)
from lackpy_kernel.errors import TemporalError, TemporalUnreachableError, UsageError
from lackpy_kernel.run import TraceEntry
from lackpy_kernel.service import LackpyService
from tests.support.temporal import (
    GAUGE,
    REGISTRY,
    ROOT,
    WorkerProcess,
    free_port,
    journal,
    journal_pids,
    temporal_server,  # noqa: F401 - the module's server fixture
)

WRITE_KIT = ["read_file", "write_file"]
PATIENCE_S = 120.0
# A killed worker's step starts again elsewhere after `heartbeat` seconds of silence; the
# other tests leave room for a busy machine, so that no healthy step is taken for dead.
FAST = StepPolicy(heartbeat=3.0, attempts=3)
ROOMY = StepPolicy(heartbeat=20.0, attempts=3)


@pytest.fixture
def queue():
    return f"test-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def runner(temporal_server, queue):  # noqa: F811
    return TemporalRunner(temporal_server.address, task_queue=queue, policy=ROOMY)


@pytest.fixture
async def worker(temporal_server, queue, workspace, monkeypatch):  # noqa: F811
    """A worker in this process, serving the test's queue in the test's workspace."""
    monkeypatch.chdir(workspace)  # the registry's steps journal in the current directory
    client = await connect(temporal_server.address)
    async with TemporalWorker(client, task_queue=queue, workspace=workspace, registry=REGISTRY,
                              concurrency=8) as serving:
        yield serving


def band_plan(service) -> Plan:
    """read_file, a band (a program in the sandbox and a callable), then a report."""
    return Plan(
        Step("read_file", writes="text"),
        Step(Program("len(task.splitlines())"), name="lines", parallel=True, writes="lines"),
        Step(REGISTRY["upper"], parallel=True, writes="upper"),
        Step(Program("{'file': context, 'lines': task['lines'], 'upper': task['upper']}"),
             name="report", task=from_parallel_all("lines"), context=from_start),
        service=service)


def same(envelope):
    """What two runs of a plan share (not their timings)."""
    return (envelope.payload, envelope.error,
            [(r.name, r.output, r.program, r.error) for r in envelope.history],
            [(e.tool, e.args, e.result, e.success) for e in envelope.trace])


# -- the same results as the local engine ------------------------------------------------


async def test_a_plan_with_a_parallel_band_gives_the_envelope_of_the_local_engine(
        workspace, worker, runner):
    with LackpyService(workspace) as service:
        local_store = Store()
        local = await Plan(*band_plan(service).steps, store=local_store,
                           service=service).arun("notes.txt")
        remote = await runner.run(band_plan(service), "notes.txt")
    assert local.ok and local.payload["upper"] == "ALPHA\nBETA\nGAMMA\n"
    assert same(remote) == same(local)
    assert [e.step for e in remote.trace] == list(range(len(local.trace)))
    written = PlanLibrary(workspace).store
    assert {key: written.read(key) for key in ("text", "lines", "upper")} == {
        key: local_store.read(key) for key in ("text", "lines", "upper")}


async def test_a_failing_step_ends_the_run_with_the_error_the_local_engine_gives(
        workspace, worker, runner):
    with LackpyService(workspace) as service:
        plan = Plan(Step("read_file"), Step(REGISTRY["upper"]), service=service)
        local = await plan.arun("missing.txt")
        remote = await runner.run(plan, "missing.txt")
    assert remote.error.type == "LackpyRuntimeError" and "missing.txt" in remote.error.message
    assert same(remote) == same(local)


async def test_routes_and_loops_are_evaluated_in_the_workflow_as_on_this_machine(
        workspace, worker, runner):
    # the route predicate is the worker's (its registry); the local plan uses the same one
    plan = Plan(Step(Program("task + '.'"), name="grow", routes={"grow": REGISTRY["is_short"]}),
                Step(Program("len(task)"), name="size"), max_iterations=20)
    local = await plan.arun("abc")
    remote = await runner.run(plan, "abc")
    assert same(remote) == same(local)
    assert [r.name for r in remote.history] == ["grow"] * 7 + ["size"]

    looping = Plan(Step(Program("task + '.'"), name="grow",
                        routes={"grow": REGISTRY["is_short"]}), max_iterations=3)
    exhausted = await runner.run(looping, "a")
    assert exhausted.error == (await looping.arun("a")).error
    assert exhausted.error.type == "MaxIterationsExceeded"


async def test_a_finished_run_replays_deterministically_from_its_history(
        workspace, worker, runner, temporal_server):  # noqa: F811
    plan = Plan(Step(Program("task + '.'"), name="grow", routes={"grow": REGISTRY["is_short"]}),
                Step(Approval("go on?"), name="gate"), Step(REGISTRY["upper"]))
    key = await runner.start(plan, "abc")
    assert (await runner.wait(key)).error.type == "PlanPaused"
    await runner.resume(key)
    client = await connect(temporal_server.address)
    history = await client.get_workflow_handle(key).fetch_history()
    restrictions = SandboxRestrictions.default.with_passthrough_modules("lackpy_kernel")
    replayer = Replayer(workflows=[PlanWorkflow, PlanManyWorkflow],
                        workflow_runner=SandboxedWorkflowRunner(restrictions=restrictions))
    replayed = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert replayed.replay_failure is None


async def test_a_retryable_failure_is_tried_again_while_the_step_has_attempts_left(
        workspace, worker, runner, temporal_server):  # noqa: F811
    plan = Plan(Step(REGISTRY["flaky"]))
    local = await plan.arun("x")
    assert local.error == ErrorInfo("ConnectionError", "the service was down", retryable=True)

    (workspace / "flaky.txt").unlink()
    retried = await runner.run(plan, "x", workflow_id="flaky-retried")
    assert retried.payload == "reached x"
    assert (await runner.status("flaky-retried")).attempts == {"flaky": 2}

    (workspace / "flaky.txt").unlink()
    once = TemporalRunner(temporal_server.address, task_queue=runner.task_queue, policy=ROOMY,
                          policies={"flaky": StepPolicy(attempts=1)})
    assert same(await once.run(plan, "x")) == same(local)


def test_a_step_policy_refuses_what_cannot_be_a_timeout_or_a_count():
    with pytest.raises(UsageError, match="heartbeat=0"):
        StepPolicy(heartbeat=0)
    with pytest.raises(UsageError, match="attempts=1.5"):
        StepPolicy(attempts=1.5)


# -- the activities' dataclasses ------------------------------------------------------------


async def test_a_step_answer_reaches_the_workflow_as_the_dataclass_the_worker_sent():
    call = TraceEntry(0, "read_file", {"path": "a.txt"}, "text", 1.5, True, None, "builtin")
    answer = StepAnswer(2, "host:1", StepResult("read", {"n": [1, 2]}, "read_file(path)", 3.0,
                                                [call], ErrorInfo("ProviderError", "down", True)),
                        route="again")
    converter = DataConverter.default
    assert await converter.decode(await converter.encode([answer]), [StepAnswer]) == [answer]


async def test_a_step_request_reads_the_fields_that_earlier_histories_hold():
    """Histories recorded before the activities took dataclasses hold the same fields."""
    step = {"name": "n", "target": {"kind": "program", "kit": None, "source": "task"}}
    recorded = {"step": step, "kit": ["read_file"], "task": "t", "context": None, "attempts": 3}
    converter = DataConverter.default
    (request,) = await converter.decode(await converter.encode([recorded]), [StepRequest])
    assert request == StepRequest(step, ["read_file"], "t", None, 3)


async def test_a_band_s_writes_land_once_however_often_its_commit_is_retried(tmp_path):
    store = Store()
    activities = StepActivities(workspace=tmp_path, registry={}, config=None, store=store,
                                identity="here:1")
    commit = CommitRequest("key", "run-1", 1, {"count": 1})
    assert await activities.commit(commit) == CommitAnswer(applied=True)
    store.write("count", 2)  # a later band's write, which a retried commit must not undo
    assert await activities.commit(commit) == CommitAnswer(applied=False)
    assert store.read("count") == 2
    activities.close()


# -- a worker dies in the middle of a step -------------------------------------------------


@pytest.fixture
def audited(workspace):
    """The workspace's plan Store, logging every write (a trigger in SQLite itself)."""
    database = workspace / ".lackpy" / "plans.sqlite"
    Store(database).close()
    with sqlite3.connect(database) as raw:
        raw.executescript("""
            CREATE TABLE audit (key TEXT, value TEXT);
            CREATE TRIGGER logged_insert AFTER INSERT ON store
                BEGIN INSERT INTO audit VALUES (new.key, new.value); END;
            CREATE TRIGGER logged_update AFTER UPDATE ON store
                BEGIN INSERT INTO audit VALUES (new.key, new.value); END;
        """)
    (workspace / "spin.txt").write_text("0")
    return database


def logged_writes(database) -> dict[str, list]:
    with sqlite3.connect(database) as raw:
        rows = raw.execute("SELECT key, value FROM audit WHERE key NOT LIKE 'temporal:%'").fetchall()
    found: dict[str, list] = {}
    for key, value in rows:
        found.setdefault(key, []).append(json.loads(value))
    return found


def pipeline() -> Plan:
    """read, a band (a spinning program in the sandbox and a callable), a callable, a program."""
    spinning = Program("rounds = int(read_file('spin.txt'))\nwrite_file('inside-count.txt', 'x')\n"
                       "total = sum(range(rounds))\nlen(task.splitlines())", kit=WRITE_KIT)
    return Plan(
        Step(Program("read_file(task)"), name="fetch", writes="fetched"),
        Step(spinning, name="count", parallel=True, writes="count"),
        Step(REGISTRY["upper"], parallel=True, writes="upper"),
        Step(REGISTRY["mark"], writes="marked"),
        Step(Program("write_file('out.txt', task)\ntask", kit=WRITE_KIT), name="save",
             writes="saved"),
        kit=WRITE_KIT)


PIPELINE_WRITES = {
    "fetched": ["alpha\nbeta\ngamma\n"], "count": [3], "upper": ["ALPHA\nBETA\nGAMMA\n"],
    "marked": ["marked 17"], "saved": ["marked 17"],
}


async def running_on(runner, key, step, ready) -> str:
    """The identity of the worker running ``step`` once ``ready()``."""
    deadline = asyncio.get_running_loop().time() + PATIENCE_S
    while True:
        run = await runner.status(key)
        holders = [item["worker"] for item in run.pending if item["step"] == step and item["worker"]]
        if holders and ready():
            return holders[0]
        assert run.status == "running", f"the run ended before the kill point: {run}"
        assert asyncio.get_running_loop().time() < deadline, "the step never started"
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("kill_in", ["upper", "count"])
async def test_a_worker_killed_mid_step_leaves_the_step_to_another_and_every_write_lands_once(
        temporal_server, queue, workspace, audited, kill_in):  # noqa: F811
    if kill_in == "count":  # a program spinning in the killed worker's sandbox
        (workspace / "spin.txt").write_text("100000000000")

        def ready():
            return any(workspace.glob(".lackpy/staging/*/inside-count.txt"))  # staged
    else:  # a Python step, blocked until release.txt exists
        (workspace / "block.txt").write_text(kill_in)

        def ready():
            return journal(workspace)[kill_in] >= 1

    workers = [WorkerProcess(temporal_server.address, queue, workspace) for _ in range(2)]
    runner = TemporalRunner(temporal_server.address, task_queue=queue, policy=FAST)
    try:
        key = await runner.start(pipeline(), "notes.txt", workflow_id=f"nightly-{kill_in}")
        holder = await running_on(runner, key, kill_in, ready)
        (victim,) = [w for w in workers if w.identity == holder]
        (survivor,) = [w for w in workers if w is not victim]
        victim.kill()
        (workspace / "spin.txt").write_text("0")
        (workspace / "release.txt").touch()
        envelope = await asyncio.wait_for(runner.wait(key), PATIENCE_S)
        run = await runner.status(key)
    finally:
        outcomes = [w.stop() for w in workers]
    assert envelope.ok, (envelope.error, outcomes)
    assert envelope.payload == "marked 17"
    assert [r.name for r in envelope.history] == ["fetch", "count", "upper", "mark", "save"]
    assert logged_writes(audited) == PIPELINE_WRITES
    assert (workspace / "out.txt").read_text() == "marked 17"
    assert run.attempts[kill_in] == 2 and run.workers[kill_in] == survivor.identity
    if kill_in == "upper":
        assert journal_pids(workspace, "upper") == [victim.pid, survivor.pid]
    assert journal(workspace)["mark"] == 1
    code, out, _ = outcomes[workers.index(survivor)]
    assert code == 0 and "stopped" in out  # SIGTERM stops a worker gracefully


# -- pauses and the resume signal ------------------------------------------------------------


async def test_an_approval_pauses_the_workflow_until_a_resume_signal(workspace, worker, runner):
    steps = [Step("read_file"), Step(Approval("publish these?"), name="approve"),
             Step(Program("len(task)"), name="size")]
    with LackpyService(workspace) as service:
        local = await Plan(*steps, store=Store(), checkpoint_key="k", service=service
                           ).arun("notes.txt")
        paused = await runner.run(Plan(*steps, service=service), "notes.txt", workflow_id="k1")
    assert paused.error == local.error
    assert paused.error.message == "paused at step 'approve': publish these?"
    assert [r.name for r in paused.history] == ["read_file"]
    run = await runner.status("k1")
    assert (run.status, run.next_step, run.pauses) == ("paused", "approve", 1)
    assert ["approve", "paused"] == run.rows()[1][:2]

    done = await runner.resume("k1")
    assert done.ok and done.payload == 17
    assert [r.name for r in done.history] == ["read_file", "approve", "size"]
    with pytest.raises(TemporalError, match="is done, not paused"):
        await runner.resume("k1")


async def test_a_step_raising_plan_paused_runs_again_on_each_resume(workspace, worker, runner):
    plan = Plan(Step(REGISTRY["approve_file"]), Step(REGISTRY["upper"]))
    first = await runner.run(plan, "go", workflow_id="gate")
    assert first.error.type == "PlanPaused" and "waiting for approved.txt" in first.error.message
    again = await runner.resume("gate")  # still no approved.txt: the step pauses again
    assert again.error.type == "PlanPaused"
    assert (await runner.status("gate")).pauses == 2
    (workspace / "approved.txt").touch()
    assert (await runner.resume("gate")).payload == "GO"


# -- keys: fail and fork ----------------------------------------------------------------------


async def test_a_second_run_on_a_live_key_is_refused_and_fork_gives_each_run_its_own(
        workspace, worker, runner):
    (workspace / "block.txt").write_text("upper")
    plan = Plan(Step(REGISTRY["upper"]), store=Store(), checkpoint_key="nightly")
    key = await runner.start(plan, "a")
    assert key == "nightly"
    with pytest.raises(ConcurrentPlanRunError, match="'nightly' is live on Temporal"):
        await runner.run(plan, "b")

    forked = Plan(Step(REGISTRY["upper"]), store=Store(), checkpoint_key="nightly",
                  on_concurrent="fork")
    keys = [await runner.start(forked, task) for task in ("c", "d")]
    assert len(set(keys)) == 2 and all(k.startswith("nightly:") for k in keys)
    (workspace / "release.txt").touch()
    assert [(await runner.wait(k)).payload for k in [key, *keys]] == ["A", "C", "D"]
    assert (await runner.run(plan, "e")).payload == "E"  # the key is free once its run is done


# -- run_many --------------------------------------------------------------------------------


async def test_run_many_over_fifty_inputs_keeps_to_its_concurrency_cap(
        workspace, worker, runner, temporal_server):  # noqa: F811
    GAUGE.reset()
    plan = Plan(Step(REGISTRY["in_flight_gauge"]))
    local = await plan.arun_many(range(50), concurrency=4)
    GAUGE.reset()
    envelopes = await runner.run_many([(plan, task) for task in range(50)], concurrency=4,
                                      workflow_id="fifty")
    assert [(e.payload, e.error) for e in envelopes] == [(e.payload, e.error) for e in local]
    assert [e.error.message for e in envelopes if e.error][:2] == [
        "0 is a multiple of seven", "7 is a multiple of seven"]
    assert GAUGE.calls == 50 and 2 <= GAUGE.most <= 4
    client = await connect(temporal_server.address)
    parent = await client.get_workflow_handle("fifty").query("status")
    assert parent == {"kind": "many", "total": 50, "finished": 50, "failed": 8, "in_flight": 0,
                      "most_in_flight": 4}
    with pytest.raises(TemporalError, match="run-many of 50 runs"):
        await runner.status("fifty")
    assert (await runner.status("fifty/3")).history[0].output == 30


# -- status: history and per-step traces ------------------------------------------------------


async def test_the_status_query_shows_history_attempts_workers_and_tool_calls(
        workspace, worker, runner):
    plan = band_plan(None)
    envelope = await runner.run(plan, "notes.txt", workflow_id="shown")
    run = await runner.status("shown")
    assert run.status == "done" and run.envelope().payload == envelope.payload
    assert [row[:4] for row in run.rows()] == [
        [name, "done", "1", worker.identity] for name in ("read_file", "lines", "upper", "report")]
    assert run.trace_rows()[0][:3] == ["read_file", "read_file", '{"path": "notes.txt"}']
    assert ("shown", "completed") in await runner.runs()


# -- errors ------------------------------------------------------------------------------------


async def test_an_unreachable_server_is_a_clear_error():
    runner = TemporalRunner(f"127.0.0.1:{free_port()}")
    with pytest.raises(TemporalUnreachableError, match="cannot reach the Temporal server at 127"):
        await runner.run(Plan(Step(Program("1"), name="one")), None)


async def test_a_bug_in_the_plan_raises_as_it_does_on_this_machine(workspace, worker, runner):
    broken = Plan(Step(Program("task"), name="first", routes={"first": REGISTRY["broken_route"]}),
                  Step(Program("task"), name="second"))
    with pytest.raises(PlanRuntimeError, match="route predicate for 'first' raised"):
        await broken.arun("x")
    with pytest.raises(PlanRuntimeError, match="route predicate for 'first' raised"):
        await runner.run(broken, "x")

    def unknown_to_the_worker(task):
        return task

    with pytest.raises(PlanRegistryError, match="'unknown_to_the_worker'"):
        await runner.run(Plan(Step(unknown_to_the_worker)), "x")

    with pytest.raises(PlanRuntimeError, match="output a set, which cannot travel"):
        await runner.run(Plan(Step(REGISTRY["as_set"])), "x")


async def test_a_hostile_plan_sent_straight_to_the_server_runs_nothing_unvalidated(
        workspace, worker, runner, temporal_server):  # noqa: F811
    """Anyone who can reach the server can start the workflow with any request: the worker
    still validates each program and resolves callables only through its registry."""
    client = await connect(temporal_server.address)
    program = {"name": "evil", "target": {"kind": "program", "kit": None,
                                          "source": "__import__('os').system('touch owned')"}}
    callable_ = {"name": "system", "target": {"kind": "callable", "name": "system"}}
    tool = {"name": "write", "target": {"kind": "tool", "tool": "write_file"}}
    outcomes = []
    for step, kit in ((program, None), (tool, ["read_file"]), (callable_, None)):
        request = {"plan": {"format": 1, "kit": kit, "max_iterations": 5, "steps": [step]},
                   "task": "owned", "policies": {"*": ROOMY.to_dict()}}
        handle = await client.start_workflow("lackpy.plan", request, id=f"evil-{step['name']}",
                                             task_queue=runner.task_queue)
        try:
            outcomes.append(await handle.result())
        except Exception as exc:  # noqa: BLE001 - the failure is what this test reads
            outcomes.append(exc.cause)
    evil, write, system = outcomes
    assert evil["error"]["type"] == "LackpyValidationError" and evil["history"] == []
    assert write["error"]["type"] == "LackpyValidationError"  # not a tool of the plan's kit
    assert "write_file" in write["error"]["message"]
    assert system.type == "PlanRegistryError" and "'system'" in system.message
    assert not (workspace / "owned").exists()


def test_without_temporalio_the_error_names_the_extra(tmp_path):
    blocked = ("import sys; sys.modules['temporalio'] = None\n"
               "from lackpy_kernel.cli import main\n"
               "sys.exit(main(['worker', '--temporal', 'localhost:7233']))")
    shell = subprocess.run([sys.executable, "-c", blocked], cwd=tmp_path, capture_output=True,
                           text=True, timeout=60, env={"PYTHONPATH": str(ROOT)})
    assert shell.returncode == 1
    assert "pip install 'lackpy-kernel[temporal]'" in shell.stderr
    assert "Traceback" not in shell.stderr
