"""Results that expand when rendered: every consumer stays bounded (issue 9, class 1).

A program can return a value whose pickle is small but whose text is enormous: a 1 MB
string referenced 60,000 times, shared dict rows, big ints repeated a million times.
Nothing outside the sandbox may expand it: the runner, the kernel's bundles, the CLI's
text and JSON, the MCP replies and ``repr`` all render through the same bounds and say
that the output is too large instead. Margins are generous (a loaded machine must pass);
an unbounded rendering takes minutes and gigabytes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest
from mcp import Client

from lackpy_kernel.lang import Issue
from lackpy_kernel.mcp_server import build_server
from lackpy_kernel.notebook.bundles import EXCERPT_CHARS, output_bundle, output_text, validation_error
from lackpy_kernel.run import RestrictedRunner
from lackpy_kernel.run.plain import MAX_DISPLAY_BYTES, display_problem, jsonable
from lackpy_kernel.service import LackpyService

BIG = "s = 'A' * 1000000\n"
EXPANDING = {
    "a shared string": BIG + "[s] * 60000",
    "a shared string in a tuple": BIG + "(s,) * 60000",
    "dict.fromkeys": BIG + "dict.fromkeys(range(60000), s)",
    "two levels of sharing": BIG + "a = [s] * 300\n[a] * 300",
    "shared dict rows": BIG + "row = {'text': s}\n[row] * 60000",
    "shared sets": BIG + "t = {s}\n[t] * 60000",
    "ljust": "'A'.ljust(20000000)",
    "a tool's string": "t = read_file('big.txt')\n[t] * 60000",
    "big ints": "n = int('9' * 4000)\na = [n] * 1000\n[a] * 1000",
}
SECONDS = 60  # an unbounded rendering of any of these takes far longer (or runs out of memory)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("render")
    (folder / "big.txt").write_text("B" * 1_000_000)
    return folder


@pytest.fixture(scope="module")
def service(workspace):
    with LackpyService(workspace) as svc:
        yield svc


def _bounded(seconds: float = SECONDS):
    started = time.monotonic()
    return lambda: time.monotonic() - started < seconds


@pytest.mark.parametrize("program", EXPANDING.values(), ids=EXPANDING.keys())
async def test_the_service_returns_a_short_summary_in_bounded_time(service, program):
    within = _bounded()
    result = await service.run_program(program)
    assert result.success, result.error
    assert isinstance(result.output, str) and len(result.output) < 100_000
    assert any("too large to show" in note or "int too long" in note for note in result.notes)
    assert len(repr(result)) < 100_000 and len(output_text(result.output)) < 100_000
    # the JSON also holds the variables (s is a real 1 MB string): bounded, never expanded
    assert len(json.dumps(jsonable(result.to_dict()))) < 3 * MAX_DISPLAY_BYTES
    assert within()


@pytest.mark.parametrize("program", EXPANDING.values(), ids=EXPANDING.keys())
def test_the_in_process_runner_summarises_too(workspace, program):
    from lackpy_kernel.kit import builtin_toolbox, resolve_kit

    kit = resolve_kit(["read_file"], builtin_toolbox(workspace))
    within = _bounded()
    result = RestrictedRunner().run(program, kit.callables)
    assert result.success and isinstance(result.output, str) and len(result.output) < 100_000
    assert len(repr(result)) < 100_000 and within()


def _hostile_values() -> dict[str, object]:
    s = "A" * 1_000_000
    n = int("9" * 4000)
    return {
        "a shared string": [s] * 60000,
        "shared dict rows": [{"text": s}] * 60000,
        "two levels": [[s] * 300] * 300,
        "big ints": [[n] * 1000] * 1000,
        "many small ints": [[0] * 1000] * 100000,
    }


@pytest.mark.parametrize("name", list(_hostile_values()))
def test_display_functions_refuse_to_expand_a_hostile_value(name):
    """Defence in depth: even a value that skipped the sandbox's summary stays bounded."""
    value = _hostile_values()[name]
    within = _bounded(3 * SECONDS)  # tracemalloc slows every allocation several times
    tracemalloc.start()
    try:
        assert display_problem(value) is not None
        bundle = output_bundle(value)
        text = output_text(value)
        data = json.dumps(jsonable(value))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert set(bundle) == {"text/plain"} and "too large to show" in bundle["text/plain"]
    assert "assign it to a variable" in text
    assert len(data) < 3 * MAX_DISPLAY_BYTES
    assert peak < 200_000_000 and within()


def test_the_cli_prints_a_bounded_result_in_text_and_json(workspace):
    (workspace / "expand.lackpy").write_text(EXPANDING["shared dict rows"])
    for extra in ([], ["--json"]):
        done = subprocess.run([sys.executable, "-m", "lackpy_kernel", "run", "expand.lackpy",
                               *extra], cwd=workspace, capture_output=True, text=True,
                              timeout=SECONDS)
        assert done.returncode == 0, done.stderr
        # text: the summary; JSON: the summary and the variables (s is a real 1 MB string)
        assert len(done.stdout) < (100_000 if not extra else 3 * MAX_DISPLAY_BYTES)
    assert json.loads(done.stdout)["success"] is True


async def test_mcp_replies_stay_small_and_leave_variables_out_unless_asked(workspace):
    program = "big = read_file('big.txt') * 200\nlen(big)"
    async with Client(build_server(workspace)) as client:
        within = _bounded()
        reply = await client.call_tool("run_program", {"program": program})
        asked = await client.call_tool("run_program", {"program": program,
                                                       "include_variables": True})
        expanding = await client.call_tool("run_program",
                                           {"program": EXPANDING["a shared string"]})
    assert reply.structured_content["output"] == 200_000_000
    assert reply.structured_content["variables"] == {}
    for result in (reply, asked, expanding):
        size = sum(len(getattr(block, "text", "")) for block in result.content)
        assert size < 200_000
    assert len(str(asked.structured_content["variables"]["big"])) < 1_000  # a summary
    assert within()


def test_a_long_line_with_many_errors_is_shown_as_a_window_per_error():
    line = "x = [" + ", ".join(f"q.__a{i}" for i in range(5_000)) + "]"
    col = line.index("q.__a2500") + 1
    report = validation_error([Issue(1, col, "private")] * 100, line)
    excerpt, caret = report.traceback[2], report.traceback[3]
    assert len(excerpt) < EXCERPT_CHARS + 20 and len(json.dumps(report.traceback)) < 50_000
    assert excerpt[caret.index("^"):].startswith("q.__a2500")
