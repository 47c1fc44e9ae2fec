"""The call cap holds on every surface that runs a program, the sandbox off: with
``[sandbox] max_tool_calls = 3`` a program making five tool calls is stopped at the fourth
with the same error through the service, a session, a plan step, an agent's lackpy tool, a
Temporal activity, the MCP server, the ACP server and the CLI, because each runs it through
the one pipeline. And an agent's call of a write-graded tool, in this process, is asked for
at the call, as in the sandbox."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from temporalio.testing import ActivityEnvironment

from lackpy_kernel.engines import Plan, Program, Step, Store
from lackpy_kernel.engines.agents._tools import build_toolset
from lackpy_kernel.engines.temporal import StepActivities
from lackpy_kernel.engines.temporal._activities import StepRequest
from lackpy_kernel.kit.changes import Change
from lackpy_kernel.service import LackpyService
from lackpy_kernel.session import LackpySession
from tests.support.acp_client import lackpy_acp, prompt, template
from tests.support.kernel import add_outbox, make_workspace

FIVE_CALLS = "[read_file('notes.txt') for i in range(5)]"
STOPPED = "tool call budget exceeded: this program already made 3 tool calls"
UNSANDBOXED = "[sandbox]\nenabled = false\nmax_tool_calls = 3\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    make_workspace(tmp_path, UNSANDBOXED)
    (tmp_path / "five.lackpy").write_text(FIVE_CALLS)
    return tmp_path


async def test_the_service(workspace):
    with LackpyService(workspace) as service:
        result = await service.run_program(FIVE_CALLS, ["read_file"])
    assert result.error_type == "ToolCallBudgetError" and STOPPED in result.error


async def test_a_session(workspace):
    with LackpyService(workspace) as service:
        session = LackpySession(service, ["read_file"])
        result = await session.run(FIVE_CALLS)
    assert result.error_type == "ToolCallBudgetError" and STOPPED in result.error


def test_a_plan_step(workspace):
    with LackpyService(workspace) as service:
        plan = Plan(Step(Program(FIVE_CALLS, kit=["read_file"]), name="five"), service=service)
        envelope = plan.run("task")
    assert envelope.error is not None
    assert envelope.error.message.startswith(f"ToolCallBudgetError: {STOPPED}")


async def test_an_agents_lackpy_tool(workspace):
    with LackpyService(workspace) as service:
        toolset = build_toolset(["read_file", "lackpy"], service)
        outcome = await toolset.call("lackpy", {"program": FIVE_CALLS})
    assert outcome.is_error and outcome.content.startswith("ToolCallBudgetError")
    assert STOPPED in outcome.content


async def test_a_temporal_activity(workspace):
    activities = StepActivities(workspace=workspace, registry={}, config=None, store=Store(),
                                identity="here:1")
    step = {"name": "five", "target": {"kind": "program", "kit": None, "source": FIVE_CALLS}}
    try:
        answer = await ActivityEnvironment().run(
            activities.run_step, StepRequest(step, ["read_file"], "task"))
    finally:
        activities.close()
    assert answer.result.error is not None
    assert answer.result.error.message.startswith(f"ToolCallBudgetError: {STOPPED}")


async def test_the_mcp_server(workspace):
    server = StdioServerParameters(command=sys.executable, args=[
        "-m", "lackpy_kernel.mcp_server", "--workspace", str(workspace)])
    async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        answer = await client.call_tool("run_program", {"program": FIVE_CALLS,
                                                        "kit": ["read_file"]})
    result = answer.structured_content
    assert result is not None and result["success"] is False
    assert result["error_type"] == "ToolCallBudgetError" and STOPPED in result["error"]


async def test_the_acp_server(workspace):
    template(workspace, "five", "read the notes five times", FIVE_CALLS)
    async with lackpy_acp(workspace) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await prompt(conn, session.session_id, "read the notes five times")
    assert STOPPED in client.messages()
    assert client.statuses()[-1] == "failed"


def test_the_cli(workspace):
    done = subprocess.run([sys.executable, "-m", "lackpy_kernel", "run", "five.lackpy",
                           "--kit", "read_file", "--json"], cwd=workspace, capture_output=True,
                          text=True, timeout=60, start_new_session=True)
    assert done.returncode != 0
    result = json.loads(done.stdout)
    assert result["error_type"] == "ToolCallBudgetError" and STOPPED in result["error"]


async def test_an_agents_write_graded_tool_is_asked_at_its_call_in_this_process(tmp_path):
    workspace = add_outbox(tmp_path, '[sandbox]\nenabled = false\n')
    asked: list[Change] = []

    def no(change: Change) -> bool:
        asked.append(change)
        return False

    with LackpyService(workspace) as service:
        toolset = build_toolset(["post"], service, ceiling="write", approve=no)
        outcome = await toolset.call("post", {"path": "outbox.txt", "text": "hello"})
    assert outcome.is_error and "ToolCallError" in outcome.content, outcome.content
    assert [change.call.name for change in asked if change.call] == ["post"]
    assert not (workspace / "outbox.txt").exists()
