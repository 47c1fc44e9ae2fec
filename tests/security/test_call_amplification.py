"""Arguments that expand on their way out of the sandbox (issue 25).

``s = 'A' * 1000000`` then ``[s] * 5000`` is about 1 MB in the program's process (one
string, 5,000 references) and 5 GB as the text an MCP server or ``repr`` would get. The
process that forwards a call (the kernel, the service, ``lackpy run``, ``lackpy mcp``)
counts what the arguments, and a kernel-side tool's error, expand to as it writes them,
and fails the call with a ``ToolCallError`` past ``[sandbox] max_result_mb``, never
allocating the expansion. Each test runs the forwarding process on its own and reads its peak memory
(``VmHWM`` in ``/proc/<pid>/status``) at its end.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lackpy_kernel.run import sandbox_supported
from lackpy_kernel.run.plain import TOO_LARGE, Bounds, bounded_repr, display_problem
from tests.support.mcp_servers import TOOL_SERVER

pytestmark = pytest.mark.skipif(not sandbox_supported(), reason="the worker needs Linux")

LIMIT_MB = 4
MARGIN_MB = 400  # the interpreter, lackpy, the MCP SDK and a busy machine; an expansion is GBs
BIG = "s = 'A' * 1000000\n"
TOOLS = '''
def check(items: list) -> int:
    """Refuse the items, naming them."""
    raise ValueError(items)


def check_repeated(text: str, times: int) -> int:
    """Refuse ``times`` copies of a text, naming them."""
    raise ValueError([text] * times)
'''
PROGRAMS = {
    "an MCP tool taking a list": BIG + "count_items([s] * 5000)",
    "a kernel tool raising ValueError(items)": BIG + "check([s] * 2000)",
    "a kernel tool's error naming its items": BIG + "check_repeated(s, 2000)",
}
# Runs a program through the service in a process of its own, then reports how it ended
# and that process's peak memory.
SERVICE = '''
import asyncio, json, sys
from lackpy_kernel.service import LackpyService

async def main():
    with LackpyService(sys.argv[1]) as service:
        result = await service.run_program(sys.argv[2])
    return {"success": result.success, "error": result.error}

report = asyncio.run(main())
status = open("/proc/self/status").read()
report["peak_kb"] = int(status.split("VmHWM:")[1].split()[0])
print(json.dumps(report))
'''
# ``lackpy mcp``'s server, called by an MCP client in the same process, as a client would.
MCP = '''
import asyncio, json, sys
from mcp import Client
from lackpy_kernel.mcp_server import build_server

async def main():
    async with Client(build_server(sys.argv[1])) as client:
        reply = await client.call_tool("run_program", {"program": sys.argv[2]})
    return {"text": " ".join(getattr(block, "text", "") for block in reply.content)}

report = asyncio.run(main())
status = open("/proc/self/status").read()
report["peak_kb"] = int(status.split("VmHWM:")[1].split()[0])
print(json.dumps(report))
'''
# ``lackpy run`` as the command line runs it, reporting its peak memory as it exits.
CLI = '''
import atexit, sys
from lackpy_kernel.cli import entry

def report():
    status = open("/proc/self/status").read()
    print("PEAK_KB", int(status.split("VmHWM:")[1].split()[0]), file=sys.stderr)

atexit.register(report)
entry(sys.argv[1:])
'''


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("amplify")
    (folder / "tools").mkdir()
    (folder / "tools" / "checks.py").write_text(TOOLS)
    (folder / ".lackpy").mkdir()
    (folder / ".lackpy" / "config.toml").write_text(textwrap.dedent(f"""
        [kit]
        default = ["count_items", "check", "check_repeated"]

        [sandbox]
        max_result_mb = {LIMIT_MB}

        [tools.providers.checks]
        plugin = "python"
        path = "tools/checks.py"
        where = "kernel"
        grade = "read"

        [tools.providers.server]
        plugin = "mcp"
        command = [{json.dumps(sys.executable)}, {json.dumps(str(TOOL_SERVER))}]
        tools = ["count_items"]
        startup_timeout = 60
        """))
    for name, program in PROGRAMS.items():
        (folder / f"{_slug(name)}.lackpy").write_text(program)
    return folder


def _slug(name: str) -> str:
    return "".join(char if char.isalnum() else "_" for char in name)


def _within_limits(peak_kb: int) -> bool:
    return peak_kb < (LIMIT_MB + MARGIN_MB) * 1024


def test_small_arguments_still_reach_the_tools(workspace):
    done = subprocess.run([sys.executable, "-c", SERVICE, str(workspace),
                           "count_items(['a', 'b'] * 3)"], capture_output=True, text=True,
                          timeout=180)
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["success"], report["error"]


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_expanding_arguments_end_in_a_tool_call_error_in_bounded_memory(workspace, name):
    done = subprocess.run([sys.executable, "-c", SERVICE, str(workspace), PROGRAMS[name]],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert not report["success"]
    error = report["error"]
    assert "ToolCallError" in error or "ValueError" in error, error
    if "ValueError" in error:  # the tool's own error, its description cut short
        assert "AAAA" in error and len(error) < 10_000
    else:
        assert "max_result_mb" in error and f"{LIMIT_MB * 1_000_000:,}" in error
    assert _within_limits(report["peak_kb"]), report


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_lackpy_run_fails_the_call_in_bounded_memory(workspace, name):
    done = subprocess.run([sys.executable, "-c", CLI, "run", f"{_slug(name)}.lackpy"],
                          cwd=workspace, capture_output=True, text=True, timeout=180)
    assert done.returncode == 1, done.stderr[-2000:]
    assert "ToolCallError" in done.stderr or "ValueError" in done.stderr, done.stderr[-2000:]
    peak_kb = int(done.stderr.split("PEAK_KB")[1].split()[0])
    assert _within_limits(peak_kb), peak_kb


@pytest.mark.parametrize("name", list(PROGRAMS)[:2])
def test_the_mcp_server_fails_the_call_in_bounded_memory(workspace, name):
    done = subprocess.run([sys.executable, "-c", MCP, str(workspace), PROGRAMS[name]],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert "ToolCallError" in report["text"] and "max_result_mb" in report["text"], report
    assert _within_limits(report["peak_kb"]), report


def test_the_bounded_writer_writes_repr_and_stops_at_its_limit():
    value = [1, (2,), {"a": [None, True, 1.5]}, set(), frozenset({3}), {4}, (), {}, "x\n", 2**90]
    assert bounded_repr(value, 10_000) == repr(value)
    s = "A" * 1_000_000
    text = bounded_repr([s] * 5000, 2000)
    assert text.startswith("['AAA") and text.endswith("...") and len(text) < 2100
    assert display_problem([s] * 5000, Bounds.of_text(64_000_000)).startswith(TOO_LARGE)
