"""A Program step's file change on Temporal: the workflow pauses carrying the change, the
status shows it, a plain resume pauses again, and ``resume(key, approve=True)`` lets exactly
that change land, once; a call of a write tool allowed so is not asked for again when the
step runs again after a later pause. The records of the changes that landed and of the
calls allowed (the ledger's, in the workers' plan Store) are removed when the workflow
ends."""

from __future__ import annotations

import uuid

import pytest

from lackpy_kernel.config import LackpyConfig, load_config
from lackpy_kernel.engines import Plan, Program, Step
from lackpy_kernel.engines.plans import PlanLibrary
from lackpy_kernel.engines.temporal import TemporalRunner, TemporalWorker, connect
from lackpy_kernel.service import LackpyService
from tests.support.kernel import add_outbox
from tests.support.temporal import (
    REGISTRY,
    temporal_server,  # noqa: F401 - the module's server fixture
)

APPEND = "write_file('notes.txt', read_file('notes.txt') + task + '\\n')\n'appended'"


@pytest.fixture
def queue():
    return f"test-{uuid.uuid4().hex[:10]}"


async def serving(address: str, queue: str, workspace, approve: str,
                  registry=REGISTRY) -> TemporalWorker:
    client = await connect(address)
    config = LackpyConfig(sandbox_enabled=False, sandbox_approve=approve)
    return TemporalWorker(client, task_queue=queue, workspace=workspace, registry=registry,
                          config=config)


@pytest.fixture
async def asking_worker(temporal_server, queue, workspace):  # noqa: F811
    """A worker whose steps' file changes wait for approval."""
    async with await serving(temporal_server.address, queue, workspace, "write") as worker:
        yield worker


def ledger_records(workspace, key: str) -> list[str]:
    """The keys of the commit records the workflow ``key``'s steps left in the Store."""
    store = PlanLibrary(workspace).store
    try:
        return [name for name in store.keys(f"temporal:{key}:") if ":commit:" in name]
    finally:
        store.close()


async def test_a_change_pauses_the_workflow_until_resume_approves_exactly_it(
        temporal_server, queue, workspace, asking_worker):  # noqa: F811
    notes = workspace / "notes.txt"
    before = notes.read_text()
    runner = TemporalRunner(temporal_server.address, task_queue=queue)
    plan = Plan(Step(Program(APPEND, kit=["read_file", "write_file"]), name="append"))

    paused = await runner.run(plan, "delta", workflow_id="appending")
    assert paused.error.type == "PlanPaused" and "+delta" in paused.error.message
    run = await runner.status("appending")
    assert run.status == "paused" and run.change is not None
    assert [file["path"] for file in run.change["files"]] == ["notes.txt"]
    assert notes.read_text() == before

    again = await runner.resume("appending")  # not approved: the same change waits again
    assert again.error.type == "PlanPaused" and notes.read_text() == before

    done = await runner.resume("appending", approve=True)
    assert done.ok and done.payload == "appended"
    assert notes.read_text() == before + "delta\n"
    assert (await runner.status("appending")).change is None
    assert ledger_records(workspace, "appending") == []


async def test_unasked_changes_are_recorded_and_their_records_removed_when_the_workflow_ends(
        temporal_server, queue, workspace):  # noqa: F811
    """Under ``approve = "never"`` each step's commit is recorded before it lands (a retried
    attempt reads it); once the workflow has ended nothing reads them, and none is left."""
    notes = workspace / "notes.txt"
    before = notes.read_text()
    plan = Plan(Step(Program(APPEND, kit=["read_file", "write_file"]), name="first"),
                Step(Program(APPEND, kit=["read_file", "write_file"]), name="second"))
    seen: list[list[str]] = []

    def commits(task):  # a callable step between the two: the first's record is there
        seen.append(ledger_records(workspace, "unasked"))
        return "delta"

    plan = Plan(plan.steps[0], Step(commits, name="look"), plan.steps[1])
    async with await serving(temporal_server.address, queue, workspace, "never",
                             {**REGISTRY, "commits": commits}):
        runner = TemporalRunner(temporal_server.address, task_queue=queue)
        done = await runner.run(plan, "delta", workflow_id="unasked")
    assert done.ok, done.error
    assert notes.read_text() == before + "delta\ndelta\n"
    assert seen == [["temporal:unasked:first#1:commit:first"]]
    assert ledger_records(workspace, "unasked") == []


async def test_a_calls_approval_holds_while_its_step_pauses_again_on_its_file_change(
        temporal_server, queue, workspace, tmp_path_factory):  # noqa: F811
    """As on this machine: the call approved, the step runs it and pauses on its file
    change; approving that, the step runs again and is not asked for the call a second
    time (it makes it again: a call cannot be staged). Before, the two pauses alternated
    for ever, the call made at each turn."""
    outbox = tmp_path_factory.mktemp("out") / "outbox.txt"
    add_outbox(workspace, '[sandbox]\napprove = "write"\nenabled = false\n')
    config = load_config(workspace)
    program = f"post({str(outbox)!r}, task)\nwrite_file('log.txt', task)\n'done'"
    client = await connect(temporal_server.address)
    with LackpyService(workspace, config) as service:
        plan = Plan(Step(Program(program, kit=["post", "write_file"]), name="send"),
                    service=service)
        async with TemporalWorker(client, task_queue=queue, workspace=workspace,
                                  registry=REGISTRY, config=config):
            runner = TemporalRunner(temporal_server.address, task_queue=queue)
            first = await runner.run(plan, "hi", workflow_id="sending")
            assert "would call post(" in first.error.message and not outbox.exists()
            second = await runner.resume("sending", approve=True)
            assert "would change files" in second.error.message, second.error
            assert outbox.read_text() == "hi\n"
            assert ledger_records(workspace, "sending"), "the allowed call is not kept"
            done = await runner.resume("sending", approve=True)
    assert done.error is None, done.error
    assert done.payload == "done" and (workspace / "log.txt").read_text() == "hi"
    assert outbox.read_text() == "hi\nhi\n"  # the step ran again: its call acted again
    assert ledger_records(workspace, "sending") == []
