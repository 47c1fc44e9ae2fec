"""Tool sources from .lackpy/config.toml through LackpyService, the CLI and the MCP server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from mcp import Client

from lackpy_kernel.mcp_server import build_server
from lackpy_kernel.service import LackpyService
from tests.support.mcp_servers import TOOL_SERVER

WORDS = '''
def count_words(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())
'''


def configure(workspace, *, broken: bool = False) -> None:
    (workspace / "tools").mkdir()
    (workspace / "tools" / "words.py").write_text(textwrap.dedent(WORDS))
    (workspace / ".lackpy").mkdir()
    text = textwrap.dedent(f"""
        [tools.providers.mine]
        plugin = "python"
        path = "tools/words.py"
        grade = "read"

        [tools.providers.calc]
        plugin = "mcp"
        command = [{json.dumps(sys.executable)}, {json.dumps(str(TOOL_SERVER))}]
        tools = ["add", "lines", "server_pid"]
        """)
    if broken:
        text += '\n[tools.providers.gone]\nplugin = "mcp"\ncommand = ["no-such-mcp-server"]\n'
    (workspace / ".lackpy" / "config.toml").write_text(text)


@pytest.fixture
def workspace(tmp_path):
    configure(tmp_path)
    return tmp_path


@pytest.fixture
def service(workspace):
    with LackpyService(workspace) as running:
        yield running


async def test_a_program_calls_tools_from_both_sources(service):
    result = await service.run_program("lines(add(count_words('a b c'), b=-1))",
                                       kit="count_words,add,lines")
    assert result.success, result.error
    assert result.output == ["line 1", "line 2"]
    assert [entry.tool for entry in result.trace.entries] == ["count_words", "add", "lines"]


def test_toolbox_list_names_each_tools_source(service):
    tools = {tool["name"]: tool for tool in service.toolbox_list()}
    assert tools["read_file"]["source"] == "builtin"
    assert tools["count_words"]["source"] == "mine (python: tools/words.py)"
    assert tools["add"]["provider"] == "calc"
    assert tools["add"]["source"].startswith("calc (mcp: ")
    assert (tools["count_words"]["grade_w"], tools["add"]["grade_w"]) == (1, 1)


def test_kit_info_describes_source_tools_like_built_ins(service):
    info = service.kit_info("count_words,add")
    assert info["description"].splitlines() == [
        "count_words(text: str) -> int: Count the words of a text.",
        "add(a: int, b: int = 2) -> int: Add two integers.",
    ]
    assert info["tools"]["add"]["args"][1] == {"name": "b", "type": "int", "description": "",
                                               "default": "2"}


def test_closing_the_service_stops_the_servers(workspace):
    service = LackpyService(workspace)
    pid = service.toolbox.resolve("server_pid")()
    service.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


async def test_a_source_that_fails_leaves_the_rest_of_the_service_working(tmp_path):
    configure(tmp_path, broken=True)
    with LackpyService(tmp_path) as service:
        checks = {check["name"]: check for check in service.check_tool_sources()}
        assert [checks[name]["ok"] for name in ("mine", "calc", "gone")] == [True, True, False]
        assert "the command 'no-such-mcp-server' was not found" in checks["gone"]["error"]
        result = await service.run_program("count_words('x y')", kit="count_words")
        assert result.success and result.output == 2


def lackpy(*args, cwd):
    return subprocess.run([sys.executable, "-m", "lackpy_kernel", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_lackpy_toolbox_check_says_which_sources_load_and_why_not(tmp_path):
    configure(tmp_path, broken=True)
    done = lackpy("toolbox", "--check", cwd=tmp_path)
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["mine", "python", "ok", "tools/words.py"]
    assert lines[1].strip() == "tools: count_words"
    assert lines[2].split()[:3] == ["calc", "mcp", "ok"]
    assert lines[3].strip() == "tools: add, lines, server_pid"
    assert lines[4].split() == ["gone", "mcp", "failed", "no-such-mcp-server"]
    assert "the command 'no-such-mcp-server' was not found" in lines[5]


def test_lackpy_toolbox_check_passes_when_every_source_loads(workspace):
    done = lackpy("toolbox", "--check", "--json", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert [source["tools"] for source in json.loads(done.stdout)] == [
        ["count_words"], ["add", "lines", "server_pid"]]


def test_lackpy_toolbox_shows_each_tools_source(workspace):
    done = lackpy("toolbox", cwd=workspace)
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines()}
    assert rows["count_words"][3] == "mine" and rows["add"][3] == "calc"
    assert rows["read_file"][3] == "builtin"


def test_lackpy_toolbox_says_which_sources_it_could_not_list(tmp_path):
    configure(tmp_path, broken=True)
    done = lackpy("toolbox", cwd=tmp_path)
    assert done.returncode == 0 and "count_words" in done.stdout
    assert "tool source 'gone' (mcp: no-such-mcp-server): the command 'no-such-mcp-server' " \
           "was not found" in done.stderr


def test_lackpy_toolbox_check_without_sources_says_how_to_add_one(tmp_path):
    done = lackpy("toolbox", "--check", cwd=tmp_path)
    assert done.returncode == 0
    assert "no tool sources: add [tools.providers.NAME]" in done.stdout


async def test_the_mcp_servers_toolbox_list_shows_each_tools_source(workspace):
    server = build_server(workspace)
    try:
        async with Client(server) as client:
            answer = await client.call_tool("toolbox_list", {})
    finally:
        server.lackpy_service.close()
    tools = {tool["name"]: tool for tool in answer.structured_content["tools"]}
    assert tools["count_words"]["source"] == "mine (python: tools/words.py)"
    assert tools["add"]["source"].startswith("calc (mcp: ")
