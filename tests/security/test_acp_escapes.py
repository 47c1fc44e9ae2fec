"""Attacks on ``lackpy acp``: prompts that aim outside the workspace, a huge prompt, and lines
that are not JSON-RPC. The server answers each (an error or a clear message), stays up,
and nothing leaves the workspace."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_client import block, lackpy_acp, prompt, template

SECRET = "TOPSECRET-acp"
REPLY_TIMEOUT = 30


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("remember the milk\n")
    (tmp_path / "outside.txt").write_text(SECRET)
    (ws / "link.txt").symlink_to(tmp_path / "outside.txt")
    template(ws, "show", "show me {path}", "read_file('{path}')")
    return ws


@pytest.mark.parametrize("intent", [
    "read the file ../outside.txt",  # the rules tier writes the path as given
    "show me ../outside.txt",  # a template's placeholder filled with it
    "show me link.txt",  # a link inside the workspace that leads out
    "show me OUTSIDE",  # an absolute path (filled in below)
])
async def test_a_prompt_that_aims_outside_the_workspace_reads_nothing_there(workspace, intent):
    intent = intent.replace("OUTSIDE", str(workspace.parent / "outside.txt"))
    async with lackpy_acp(workspace) as (conn, client, process):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        response = await prompt(conn, session.session_id, intent)
        assert response.stop_reason == "end_turn"
        assert client.tool_calls(), client.messages()  # a program was written, and shown
        assert SECRET not in json.dumps([u.model_dump(mode="json") for u in client.updates])
        assert "outside the workspace" in client.messages()
        assert client.statuses()[-1] == "failed"
        assert process.returncode is None


async def test_a_huge_prompt_gets_a_clear_message_and_the_server_stays_up(workspace):
    async with lackpy_acp(workspace) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        response = await asyncio.wait_for(
            prompt(conn, session.session_id, "read the file " + "x" * 2_000_000), REPLY_TIMEOUT)
        assert response.stop_reason == "end_turn"
        assert "takes at most 100000" in client.messages()
        assert not client.tool_calls()
        client.clear()
        just_under = "show me " + "../" * 33_000  # every tier sees it, in bounded time
        response = await asyncio.wait_for(prompt(conn, session.session_id, just_under),
                                          REPLY_TIMEOUT)
        assert response.stop_reason == "end_turn"
        assert "outside the workspace" in client.messages()
        client.clear()
        await prompt(conn, session.session_id, "read the file notes.txt")
        assert client.messages() == block("remember the milk")


class RawAgent:
    """``lackpy acp`` over raw pipes: lines in, JSON-RPC messages out."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process

    async def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        await self.process.stdin.drain()

    async def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), REPLY_TIMEOUT)
        assert line, "the server closed stdout"
        message: dict[str, Any] = json.loads(line)
        return message

    async def request(self, request_id: int, method: Any, params: Any) -> dict[str, Any]:
        await self.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method,
                                    "params": params}).encode())
        return await self.receive()


MALFORMED = [
    b"this is not json",
    b"[1, 2, 3]",
    b"42",
    b"null",
    b'{"jsonrpc": "2.0", "id": 9, "method": ',  # cut short
    b"\xff\xfe\x00 binary",
    b"[" * 100_000,  # nested deeper than the JSON parser goes
]


async def test_lines_that_are_not_json_rpc_objects_get_a_parse_error_and_the_server_stays_up(
        workspace):
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "lackpy_kernel", "acp", cwd=workspace, env=os.environ,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL)
    agent = RawAgent(process)
    try:
        for line in MALFORMED:
            await agent.send(line)
            error = (await agent.receive())["error"]
            assert error["code"] == -32700
        await agent.send(b'{"jsonrpc": "2.0", "id": 77, "result": {}}')  # a reply to nothing
        unknown = await agent.request(1, "session/prompt", {"sessionId": "nope", "prompt": []})
        assert unknown["id"] == 1 and unknown["error"]["code"] == -32602
        bad_params = await agent.request(2, "session/new", {"cwd": 5})
        assert bad_params["id"] == 2 and bad_params["error"]["code"] == -32602
        load = await agent.request(3, "session/load",
                                   {"cwd": str(workspace), "sessionId": "x", "mcpServers": []})
        assert load["id"] == 3 and load["error"]["code"] == -32602
        assert "no lackpy session id" in json.dumps(load["error"])
        made_up = await agent.request(4, "session/explode", {})
        assert made_up["id"] == 4 and made_up["error"]["code"] == -32601
        not_a_name = await agent.request(6, 5, {})
        assert not_a_name["error"]["code"] == -32601
        listed = await agent.request(7, "initialize", [1, 2])
        assert listed["error"]["code"] == -32602
        await agent.send(b'{"jsonrpc": "2.0", "method": "session/cancel", '
                         b'"params": {"sessionId": "nope"}}')  # a notification: no reply
        initialized = await agent.request(5, "initialize", {"protocolVersion": 1})
        assert initialized["result"]["agentInfo"]["name"] == "lackpy"
        assert process.returncode is None
    finally:
        assert process.stdin is not None
        process.stdin.close()
        await asyncio.wait_for(process.wait(), REPLY_TIMEOUT)
    assert process.returncode == 0
