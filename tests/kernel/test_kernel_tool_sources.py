"""Tool sources in the kernel: a Python module and an MCP server in one cell, under the limits.

The kernel is driven through jupyter_client. Its cells call a Python tool (run
in the sandbox's child) and MCP tools (called in the kernel's process for the
program) with every call traced with its source; a slow MCP call and a
memory-hungry Python tool are stopped at the cell's limits while the kernel,
the MCP server and the session's variables stay as they were; a cell can
rewrite neither a tool module nor anything the kernel will import.
"""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from tests.support.kernel import Kernel, make_workspace
from tests.support.mcp_servers import TOOL_SERVER

WORDS = '''
def count_words(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())


def hog(megabytes: int) -> int:
    """Hold that many megabytes at once."""
    return len(bytearray(megabytes * 1024 * 1024))
'''
CONFIG = f"""
[sandbox]
timeout = 3
memory_mb = 256
approve = "never"  # these tests write files with no one to ask: the changes land unseen

[tools.providers.words]
plugin = "python"
path = "tools/words.py"
grade = "read"

[tools.providers.calc]
plugin = "mcp"
command = [{json.dumps(sys.executable)}, {json.dumps(str(TOOL_SERVER))}]
tools = ["add", "slow", "server_pid"]
startup_timeout = 60
"""
KIT = "%kit read_file,write_file,count_words,hog,add,slow,server_pid"


def workspace_with_sources(folder):
    workspace = make_workspace(folder, CONFIG)
    (workspace / "tools").mkdir()
    (workspace / "tools" / "words.py").write_text(textwrap.dedent(WORDS))
    return workspace


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    running = Kernel(workspace_with_sources(tmp_path_factory.mktemp("ws")))
    assert running.execute(KIT).status == "ok"
    yield running
    running.close()


def test_a_cell_calls_a_python_tool_and_an_mcp_tool_with_each_call_traced(kernel):
    outcome = kernel.execute("n = count_words(read_file('notes.txt'))\nadd(n, b=10)")
    assert outcome.status == "ok", outcome.reply["content"]
    assert outcome.result() == "13"
    (trace,) = [data["data"]["text/plain"] for data in outcome.of("display_data")
                if data["data"]["text/plain"].startswith("trace:")]
    header, *rows = trace.splitlines()[1:4 + 1]
    assert header.split() == ["#", "tool", "args", "ms", "ok", "source"]
    assert [row.split()[1] for row in rows] == ["read_file", "count_words", "add"]
    assert [row.split()[-1] for row in rows[:2]] == ["builtin", "tools/words.py)"]
    assert "words (python: tools/words.py)" in rows[1] and "calc (mcp: " in rows[2]


def test_a_slow_mcp_call_stops_at_the_cells_limit_and_the_server_and_variables_survive(kernel):
    assert kernel.execute("n = 1\npid = server_pid()").status == "ok"
    stopped = kernel.execute("n = 2\nslow(60)")
    assert stopped.status == "error"
    assert stopped.error["ename"] == "ProgramTimeoutError"
    after = kernel.execute("[n, server_pid() == pid, add(1)]")
    assert after.result() == "[1, True, 3]"


def test_a_memory_hungry_python_tool_stops_at_the_cap_and_the_kernel_goes_on(kernel):
    assert kernel.execute("m = 'kept'").status == "ok"
    stopped = kernel.execute("m = 'lost'\nhog(2048)")
    assert stopped.status == "error"
    assert stopped.error["ename"] in ("ProgramMemoryError", "SandboxError")
    assert "256 MB" in stopped.error["evalue"]
    assert kernel.execute("[m, hog(1)]").result() == "['kept', 1048576]"


def test_a_cell_cannot_rewrite_a_tool_module(kernel):
    module = kernel.workspace / "tools" / "words.py"
    before = module.read_text()
    outcome = kernel.execute("write_file('tools/words.py', 'import os')")
    assert outcome.status == "error" and outcome.error["ename"] == "WorkspaceError"
    assert "is the code of a tool source" in outcome.error["evalue"]
    assert module.read_text() == before


def test_a_module_a_cell_writes_never_shadows_what_the_kernel_imports(tmp_path):
    canary = tmp_path / "canary.txt"
    (tmp_path / "ws").mkdir()
    workspace = workspace_with_sources(tmp_path / "ws")
    kernel = Kernel(workspace)
    try:
        payload = f"open({str(canary)!r}, 'w').write('ran in the kernel')\n"
        assert kernel.execute("%kit write_file").status == "ok"
        wrote = kernel.execute(f"write_file('mcp_types.py', {payload!r})")
        assert wrote.status == "ok", wrote.reply["content"]
        assert kernel.execute(KIT).status == "ok"  # the MCP client is imported now
        assert kernel.execute("add(1)").result() == "3"
    finally:
        kernel.close()
    assert not canary.exists()
