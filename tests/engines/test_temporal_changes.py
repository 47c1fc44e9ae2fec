"""A Program step's file change on Temporal: the workflow pauses carrying the change, the
status shows it, a plain resume pauses again, and ``resume(key, approve=True)`` lets exactly
that change land, once."""

from __future__ import annotations

import uuid

import pytest

from lackpy_kernel.config import LackpyConfig
from lackpy_kernel.engines import Plan, Program, Step
from lackpy_kernel.engines.temporal import TemporalRunner, TemporalWorker, connect
from tests.support.temporal import (
    REGISTRY,
    temporal_server,  # noqa: F401 - the module's server fixture
)

APPEND = "write_file('notes.txt', read_file('notes.txt') + task + '\\n')\n'appended'"


@pytest.fixture
def queue():
    return f"test-{uuid.uuid4().hex[:10]}"


@pytest.fixture
async def asking_worker(temporal_server, queue, workspace):  # noqa: F811
    """A worker whose steps' file changes wait for approval."""
    client = await connect(temporal_server.address)
    config = LackpyConfig(sandbox_enabled=False, sandbox_approve="write")
    async with TemporalWorker(client, task_queue=queue, workspace=workspace, registry=REGISTRY,
                              config=config) as serving:
        yield serving


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
