"""OpenTelemetry spans: off, nothing imports OpenTelemetry; on, a delegate's trace shows each
tier and the model call's tokens, a run's tool calls nest under it with bounded arguments,
and a kernel cell exports one trace over OTLP/HTTP to a receiver on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from lackpy_kernel import telemetry
from lackpy_kernel.service import LackpyService
from tests.support import loopback as lb
from tests.support.kernel import Kernel, make_workspace
from tests.support.spans import exported_spans, otlp_receiver, tree

PROGRAM = "content = read_file('notes.txt')\ncontent"
SECRET = "the secret content of a file"


def run_python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_nothing_with_telemetry_off_imports_opentelemetry(tmp_path):
    (tmp_path / "notes.txt").write_text("a\n")
    done = run_python("""
        import asyncio, sys
        from lackpy_kernel.service import LackpyService
        from lackpy_kernel.session import LackpySession
        from lackpy_kernel.notebook.magics import NotebookMagics
        with LackpyService() as service:
            result = asyncio.run(service.delegate("read the file notes.txt", ["read_file"]))
            assert result["success"], result
            session = LackpySession(service)
            assert asyncio.run(session.run("len(read_file('notes.txt'))")).output == 2
        loaded = sorted(name for name in sys.modules if name.startswith("opentelemetry"))
        print(loaded)
        """, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[]\n"


def test_an_exporter_without_the_otel_extra_is_said_once_and_nothing_fails(tmp_path):
    (tmp_path / ".lackpy").mkdir()
    (tmp_path / ".lackpy" / "config.toml").write_text('[telemetry]\nexporter = "otlp"\n')
    done = run_python("""
        import asyncio, sys
        sys.modules["opentelemetry.sdk"] = None  # as if the otel extra were not installed
        from lackpy_kernel.service import LackpyService
        with LackpyService() as service:
            print(asyncio.run(service.run_program("1 + 1", sandbox=False)).output)
        """, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "2\n"
    assert done.stderr.count("needs the otel extra: pip install 'lackpy-kernel[otel]'") == 1


def test_an_unknown_exporter_is_a_config_error_naming_the_choices(tmp_path):
    from lackpy_kernel.config import load_config
    from lackpy_kernel.errors import ConfigError

    (tmp_path / ".lackpy").mkdir()
    (tmp_path / ".lackpy" / "config.toml").write_text('[telemetry]\nexporter = "otpl"\n')
    with pytest.raises(ConfigError, match=r"must be one of none, console, otlp, not 'otpl'; "
                                          r"did you mean 'otlp'\?"):
        load_config(tmp_path)


# -- with the SDK ---------------------------------------------------------------------------

def model_workspace(tmp_path: Path, server: lb.LoopbackServer) -> Path:
    (tmp_path / "notes.txt").write_text("a\nb\n")
    (tmp_path / ".lackpy").mkdir()
    (tmp_path / ".lackpy" / "config.toml").write_text(
        '[inference]\norder = ["templates", "rules", "loop"]\n\n'
        f'[inference.providers.loop]\nplugin = "ollama"\nhost = "{server.url}"\nmodel = "tiny"\n'
        "retry_delay = 0.001\nprice_in = 1000\nprice_out = 2000\n\n[sandbox]\nenabled = false\n")
    return tmp_path


async def test_a_delegates_trace_shows_each_tier_and_the_models_tokens(
        tmp_path, model_server, model_env, spans):
    folder = model_workspace(tmp_path, model_server.script(lb.ollama_answer(PROGRAM)))
    with LackpyService(folder) as service:
        result = await service.delegate("show me my notes please", ["read_file"])
    assert result["success"], result["error"]
    finished = spans.get_finished_spans()
    assert tree(finished)["lackpy.generate"] == [
        "lackpy.tier templates", "lackpy.tier rules", "lackpy.tier loop"]
    # the model's call, then the dry run of the program it wrote (generation checks its work)
    assert tree(finished)["lackpy.tier loop"] == ["chat tiny", "lackpy.run"]
    named = {span.name: span for span in finished}
    assert dict(named["chat tiny"].attributes) == {
        "gen_ai.operation.name": "chat", "gen_ai.provider.name": "ollama",
        "gen_ai.request.model": "tiny", "lackpy.tier": "loop", "gen_ai.usage.input_tokens": 5,
        "gen_ai.usage.output_tokens": 3, "lackpy.cost": pytest.approx(0.011)}
    assert named["lackpy.tier rules"].attributes["lackpy.outcome"] == "no program for this intent"
    assert named["lackpy.tier loop"].attributes["lackpy.outcome"] == "program"
    runs = [span for span in finished if span.name == "lackpy.run"]  # the dry run, then the run
    assert len(runs) == 2
    for run in runs:
        assert [span.name for span in sorted(finished, key=lambda s: s.start_time)
                if span.parent is not None and span.parent.span_id == run.context.span_id
                ] == ["lackpy.validate", "execute_tool read_file"]
    tool = named["execute_tool read_file"].attributes
    assert (tool["gen_ai.tool.name"], tool["lackpy.ok"], tool["lackpy.tool.arg.path"]) == (
        "read_file", True, "notes.txt")
    assert "lackpy.tool.result" not in tool  # values only with include_values


@pytest.mark.parametrize("include_values", [False, True])
async def test_a_written_files_content_is_in_a_span_only_with_include_values(
        tmp_path, tracing, include_values):
    from opentelemetry.trace import StatusCode

    provider, spans = tracing
    telemetry.use_tracer_provider(provider, include_values=include_values)
    program = f"write_file('out.txt', {SECRET!r})\nread_file('missing.txt')"
    with LackpyService(tmp_path) as service:
        result = await service.run_program(program, ["write_file", "read_file"], sandbox=False)
    assert not result.success
    named = {span.name: span for span in spans.get_finished_spans()}
    write = named["execute_tool write_file"].attributes
    assert write["lackpy.tool.arg.path"] == "out.txt"
    assert write["lackpy.tool.arg.content"] == (SECRET if include_values else f"str, {len(SECRET)} chars")
    failed = named["execute_tool read_file"]
    assert failed.status.status_code is StatusCode.ERROR and failed.attributes["lackpy.ok"] is False
    run = named["lackpy.run"]
    assert run.status.status_code is StatusCode.ERROR and run.attributes["lackpy.tool_calls"] == 2
    assert named["execute_tool write_file"].end_time <= failed.start_time
    assert run.start_time <= named["execute_tool write_file"].start_time


# -- a kernel cell, exported over OTLP/HTTP ---------------------------------------------------

def test_a_kernel_cell_exports_one_trace_cell_validate_run_tool_calls(installed_kernelspec, tmp_path):
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the otel extra is not installed")
    workspace = make_workspace(tmp_path, '[telemetry]\nexporter = "otlp"\n')
    with otlp_receiver() as receiver:
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "50",
               "OTEL_SERVICE_NAME": "lackpy-test", "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1"}
        kernel = Kernel(workspace, env=env)
        try:
            outcome = kernel.execute("lines = read_file('notes.txt').splitlines()\nlen(lines)")
            assert outcome.reply["content"]["status"] == "ok", outcome.reply
            deadline = time.monotonic() + 60
            while not any(s.name == "lackpy.cell" for s in exported_spans(receiver)):
                assert time.monotonic() < deadline, "no cell span was exported"
                time.sleep(0.05)
        finally:
            kernel.close()
        assert all(r.path == "/v1/traces" for r in receiver.requests)
        found = exported_spans(receiver)
    by_id = {span.span_id: span for span in found}
    cell = next(span for span in found if span.name == "lackpy.cell")
    assert {span.trace_id for span in found} == {cell.trace_id}
    parents = {span.name: by_id[span.parent_span_id].name for span in found if span.parent_span_id}
    # one pipeline: a cell's program is validated inside its run, as run_program's is
    assert parents == {"lackpy.validate": "lackpy.run", "lackpy.run": "lackpy.cell",
                       "execute_tool read_file": "lackpy.run"}
    tool = {a.key: a.value for a in next(s for s in found if s.name == "execute_tool read_file").attributes}
    assert tool["lackpy.tool.arg.path"].string_value == "notes.txt"
    assert json.dumps(tool["lackpy.ok"].bool_value) == "true"


def test_lackpy_run_with_the_console_exporter_writes_its_spans_to_stderr(tmp_path):
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
    workspace = make_workspace(tmp_path, '[telemetry]\nexporter = "console"\n\n[sandbox]\ntimeout = 30\n')
    (workspace / "count.lackpy").write_text("len(read_file('notes.txt').splitlines())")
    done = subprocess.run([sys.executable, "-m", "lackpy_kernel", "run", "count.lackpy"], cwd=workspace,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "3\n"  # the spans stay off stdout
    spans = json_objects(done.stderr)
    assert sorted(span["name"] for span in spans) == [
        "execute_tool read_file", "lackpy run", "lackpy.run", "lackpy.validate"]
    assert {span["context"]["trace_id"] for span in spans} == {spans[0]["context"]["trace_id"]}


def json_objects(text: str) -> list[dict]:
    """The JSON objects written one after another in ``text``."""
    decoder, found, at = json.JSONDecoder(), [], text.find("{")
    while at != -1:
        value, end = decoder.raw_decode(text, at)
        found.append(value)
        at = text.find("{", end)
    return found


async def test_an_mcp_tool_call_is_one_trace_over_its_run(tmp_path, spans):
    from mcp import Client

    from lackpy_kernel.mcp_server import build_server

    (tmp_path / "a.txt").write_text("a")
    async with Client(build_server(tmp_path)) as client:
        result = await client.call_tool("run_program", {"program": "read_file('a.txt')"})
    assert result.structured_content["output"] == "a"
    assert tree(spans.get_finished_spans())["lackpy.mcp run_program"] == ["lackpy.run"]
    assert tree(spans.get_finished_spans())["lackpy.run"] == ["lackpy.validate", "execute_tool read_file"]
