"""A plan's steps as spans: each step is ``lackpy.step NAME`` over its run, on this machine and
on Temporal, where temporalio's OpenTelemetry interceptor links the client's span, the
workflow's and each activity's into the one trace (the worker's spans reach it through the
workflow's headers, not this process's context)."""

from __future__ import annotations

import uuid

import pytest

from lackpy_kernel import telemetry
from lackpy_kernel.engines import Plan, Program, Step
from lackpy_kernel.engines.temporal import TemporalRunner, TemporalWorker, connect
from lackpy_kernel.service import LackpyService
from tests.support.kernel import make_workspace
from tests.support.spans import tree
from tests.support.temporal import temporal_server  # noqa: F401 - the module's server fixture


def plan(*, broken: bool = True) -> Plan:
    """Read a file, count its lines, and (``broken``) index the count, which fails."""
    steps = [Step("read_file"), Step(Program("len(task.splitlines())"), name="lines")]
    return Plan(*steps, *([Step(Program("task['x']"), name="broken")] if broken else []))


@pytest.fixture
def workspace(tmp_path):
    return make_workspace(tmp_path, '[sandbox]\napprove = "never"\n[kibitzer]\nenabled = false\n')


def by_name(finished):
    return {span.name: span for span in finished}


async def test_each_step_of_a_local_plan_is_a_span_over_its_run(workspace, tracing):
    steps = plan()
    with LackpyService(workspace) as service, telemetry.span("test.plan"):
        envelope = await steps.arun("notes.txt", service=service)
    assert envelope.error is not None and [r.name for r in envelope.history][:2] == [
        "read_file", "lines"]
    finished = tracing[1].get_finished_spans()
    assert tree(finished)["test.plan"] == [
        "lackpy.step read_file", "lackpy.step lines", "lackpy.step broken"]
    assert "lackpy.run" in tree(finished)["lackpy.step lines"]
    spans = by_name(finished)
    lines, broken = spans["lackpy.step lines"], spans["lackpy.step broken"]
    assert (lines.attributes["lackpy.ok"], lines.attributes["lackpy.step"]) == (True, "lines")
    assert lines.attributes["lackpy.ms"] >= 0
    assert broken.attributes["lackpy.ok"] is False and broken.status.status_code.name == "ERROR"
    # values are off: the step's error is told by its type, its message stays with the caller
    assert broken.status.description == (
        "LackpyRuntimeError (its message is left out: [telemetry] include_values = false)")
    assert "not subscriptable" in envelope.error.message


async def test_a_plan_on_temporal_is_one_trace_from_the_client_through_each_step(
        temporal_server, workspace, tracing):  # noqa: F811
    queue = f"test-{uuid.uuid4().hex[:10]}"
    client = await connect(temporal_server.address)  # spans are on: with the interceptor
    async with TemporalWorker(client, task_queue=queue, workspace=workspace):
        runner = TemporalRunner(temporal_server.address, task_queue=queue)
        steps = plan(broken=False)
        with telemetry.span("test.plan"):
            envelope = await runner.run(steps, "notes.txt")
    assert envelope.error is None and envelope.payload == 3
    root = by_name(tracing[1].get_finished_spans())["test.plan"]
    finished = [span for span in tracing[1].get_finished_spans()
                if span.context.trace_id == root.context.trace_id]
    children = tree(finished)
    assert children["test.plan"][0] == "StartWorkflow:lackpy.plan", children
    workflow = children["StartWorkflow:lackpy.plan"]  # the workflow's spans, under the client's
    assert "RunWorkflow:lackpy.plan" in workflow and workflow.count("StartActivity:lackpy.step") == 2
    assert children["StartActivity:lackpy.step"] == ["RunActivity:lackpy.step"] * 2
    assert sorted(children["RunActivity:lackpy.step"]) == [
        "lackpy.step lines", "lackpy.step read_file"]
    assert children["lackpy.step lines"] == ["lackpy.run"]
    assert "execute_tool read_file" in children["lackpy.run"]
