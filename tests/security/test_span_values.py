"""With ``[telemetry] include_values = false`` no value a tool returned reaches a span: not as
an attribute (a file's content passed on as the next call's path), not in a status (a
``ValueError`` quoting it), not in an exception event. The spans keep the tool's name, the
types and sizes of its arguments, counts and ``lackpy.ok``. With values on, the same
programs put the secret in the spans, so each case below can fail.

Programs run through ``LackpyService.run_program`` (here and in the sandbox), a plan's step
(here and on Temporal, with temporalio's interceptor) and a kernel cell. Every span is
exported by the OpenTelemetry SDK's own in-memory exporter (a kernel cell's over OTLP/HTTP to
a receiver on loopback) and searched whole: name, attributes, events, links, status and
resource."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest

from lackpy_kernel import telemetry
from lackpy_kernel.engines import Plan, Program, Step
from lackpy_kernel.engines.temporal import TemporalRunner, TemporalWorker, connect
from lackpy_kernel.service import LackpyService
from tests.support.kernel import Kernel, make_workspace
from tests.support.spans import exported_spans, otlp_receiver
from tests.support.temporal import temporal_server  # noqa: F401 - the module's server fixture

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

SECRET = "TOKEN-7f3a9c is what secret.txt holds"
KIT = ["read_file", "find_files"]
# Programs that carry the secret file's content into a tool's argument, an error or both.
LEAKY_PROGRAMS = {
    "the content as the next call's path": "read_file(read_file('secret.txt'))",
    "the content in a ValueError": "int(read_file('secret.txt'))",
    "the content as a pattern": "find_files(read_file('secret.txt'))",
    "the content in a KeyError": "{'a': 1}[read_file('secret.txt')]",
    "the content kept, then used": "text = read_file('secret.txt')\nread_file(text + '.txt')",
}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "secret.txt").write_text(SECRET)
    return tmp_path


@pytest.fixture
def exported():
    """``exported(include_values)``: spans turned on with the SDK's in-memory exporter, which
    it returns; spans are turned off again after the test."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    def turn_on(include_values: bool) -> InMemorySpanExporter:
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        telemetry.use_tracer_provider(provider, include_values=include_values)
        return exporter

    yield turn_on
    telemetry.use_tracer_provider(None)


def everything(finished) -> str:
    """All that the spans carry, as the SDK writes them out (attributes, events, links,
    status, resource)."""
    return "\n".join(span.to_json() for span in finished)


def named(finished, name: str):
    return [span for span in finished if span.name == name]


@pytest.mark.parametrize("sandbox", [False, True], ids=["here", "sandbox"])
@pytest.mark.parametrize("program", LEAKY_PROGRAMS.values(), ids=LEAKY_PROGRAMS.keys())
async def test_with_values_off_no_span_carries_what_a_tool_read(workspace, exported, program,
                                                                 sandbox):
    spans = exported(False)
    with LackpyService(workspace) as service:
        result = await service.run_program(program, KIT, sandbox=sandbox)
    finished = spans.get_finished_spans()
    assert named(finished, "lackpy.run") and named(finished, "execute_tool read_file")
    assert "TOKEN-7f3a9c" not in everything(finished)
    run = named(finished, "lackpy.run")[0]
    assert run.attributes["lackpy.ok"] is result.success
    if not result.success:  # the error's type is kept, its message is not
        assert SECRET in (result.error or "")  # the caller still has it
        assert run.attributes["error.type"] == result.error_type
        assert run.status.description.startswith(f"{result.error_type} (its message is left out")


@pytest.mark.parametrize("program", LEAKY_PROGRAMS.values(), ids=LEAKY_PROGRAMS.keys())
async def test_with_values_on_the_same_programs_put_the_secret_in_a_span(workspace, exported,
                                                                         program):
    spans = exported(True)
    with LackpyService(workspace) as service:
        await service.run_program(program, KIT, sandbox=False)
    assert "TOKEN-7f3a9c" in everything(spans.get_finished_spans())


async def test_a_path_passed_on_from_a_file_is_shown_by_its_size_and_a_literal_path_as_given(
        workspace, exported):
    spans = exported(False)
    with LackpyService(workspace) as service:
        await service.run_program("read_file(read_file('secret.txt'))", KIT, sandbox=False)
    first, second = (span.attributes for span in
                     named(spans.get_finished_spans(), "execute_tool read_file"))
    assert first["lackpy.tool.arg.path"] == "secret.txt" and first["lackpy.ok"] is True
    assert "lackpy.tool.result" not in first
    assert second["lackpy.tool.arg.path"] == f"str, {len(SECRET)} chars"
    assert (second["lackpy.ok"], second["gen_ai.tool.name"]) == (False, "read_file")
    failed = named(spans.get_finished_spans(), "execute_tool read_file")[1]
    assert failed.status.description.startswith("FileNotFoundError (its message is left out")


async def test_with_values_on_the_outer_calls_argument_and_the_error_text_are_there(
        workspace, exported):
    spans = exported(True)
    with LackpyService(workspace) as service:
        await service.run_program("read_file(read_file('secret.txt'))", KIT, sandbox=False)
    finished = spans.get_finished_spans()
    second = named(finished, "execute_tool read_file")[1]
    assert second.attributes["lackpy.tool.arg.path"] == SECRET
    assert SECRET in second.status.description
    assert SECRET in named(finished, "lackpy.run")[0].status.description


@pytest.mark.parametrize("include_values", [False, True])
async def test_a_plan_steps_error_is_told_by_its_type_unless_values_are_on(
        workspace, exported, include_values):
    spans = exported(include_values)
    steps = Plan(Step(Program("int(read_file('secret.txt'))"), name="parse"))
    with LackpyService(workspace) as service:
        envelope = await steps.arun("", service=service)
    assert envelope.error is not None and SECRET in envelope.error.message
    finished = spans.get_finished_spans()
    [step] = named(finished, "lackpy.step parse")
    assert step.attributes["lackpy.ok"] is False and step.status.status_code.name == "ERROR"
    assert ("TOKEN-7f3a9c" in everything(finished)) is include_values
    assert (SECRET in step.status.description) is include_values


@pytest.mark.parametrize("include_values", [False, True])
async def test_a_plan_on_temporal_carries_the_secret_in_no_span_unless_values_are_on(
        temporal_server, tmp_path, exported, include_values):  # noqa: F811
    spans = exported(include_values)
    workspace = make_workspace(tmp_path, '[sandbox]\napprove = "never"\n')
    (workspace / "secret.txt").write_text(SECRET)
    queue = f"test-{uuid.uuid4().hex[:10]}"
    client = await connect(temporal_server.address)  # spans are on: with the interceptor
    async with TemporalWorker(client, task_queue=queue, workspace=workspace):
        runner = TemporalRunner(temporal_server.address, task_queue=queue)
        steps = Plan(Step(Program("int(read_file('secret.txt'))"), name="parse"))
        with telemetry.span("test.plan"):
            envelope = await runner.run(steps, "")
    assert envelope.error is not None and SECRET in envelope.error.message
    finished = spans.get_finished_spans()
    assert {"RunActivity:lackpy.step", "lackpy.step parse", "lackpy.run"} <= {
        span.name for span in finished}
    assert ("TOKEN-7f3a9c" in everything(finished)) is include_values


@pytest.mark.parametrize("include_values", [False, True])
def test_an_exception_leaving_a_span_is_recorded_by_type_unless_values_are_on(
        exported, include_values):
    spans = exported(include_values)
    with pytest.raises(ValueError, match="TOKEN"), telemetry.span("outer"), \
            telemetry.span("inner"):
        raise ValueError(f"invalid literal for int() with base 10: {SECRET!r}")
    finished = spans.get_finished_spans()
    assert [span.name for span in finished] == ["inner", "outer"]
    for span in finished:
        assert span.attributes["error.type"] == "ValueError"
        assert span.status.status_code.name == "ERROR"
        assert span.status.description.startswith("ValueError")
    assert ("TOKEN-7f3a9c" in everything(finished)) is include_values
    assert bool(finished[0].events) is include_values  # the exception event, with its text


@pytest.mark.parametrize("include_values", [False, True])
def test_a_failed_kernel_cell_exports_the_secret_only_with_values_on(
        installed_kernelspec, tmp_path, include_values):
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http",
                        reason="the otel extra is not installed")
    workspace = make_workspace(tmp_path, '[telemetry]\nexporter = "otlp"\n'
                               f"include_values = {str(include_values).lower()}\n")
    (workspace / "secret.txt").write_text(SECRET)
    with otlp_receiver() as receiver:
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
               "OTEL_BSP_SCHEDULE_DELAY": "50", "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
        kernel = Kernel(workspace, env=env)
        try:
            outcome = kernel.execute("int(read_file('secret.txt'))")
            assert outcome.reply["content"]["status"] == "error"
            assert SECRET in str(outcome.reply["content"])  # the person sees it
            deadline = time.monotonic() + 60
            while not any(s.name == "lackpy.cell" for s in exported_spans(receiver)):
                assert time.monotonic() < deadline, "no cell span was exported"
                time.sleep(0.05)
        finally:
            kernel.close()
        found = exported_spans(receiver)
    assert {"lackpy.cell", "lackpy.run", "execute_tool read_file"} <= {s.name for s in found}
    assert any("TOKEN-7f3a9c" in str(span) for span in found) is include_values
    cell = next(span for span in found if span.name == "lackpy.cell")
    assert cell.status.code == cell.status.STATUS_CODE_ERROR
    assert bool(cell.events) is include_values  # the exception event, with its message
