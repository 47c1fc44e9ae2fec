"""Attacks on ``lackpy acp``'s sessions: many sessions, hostile MCP server command lines
from the client, session ids and records that aim outside the workspace, prompts of many
parts. Each gets an ACP error or a clear message, stays within its bounds, and the
server stays up."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from acp import RequestError, text_block
from acp.schema import EnvVariable, SseMcpServer

from lackpy_kernel.acp_server import MAX_SESSIONS
from tests.support import loopback
from tests.support.acp_client import block, lackpy_acp, prompt, settled, template, tool_server
from tests.support.mcp_servers import HOSTILE_SERVER
from tests.support.processes import workers_of

REPLY_TIMEOUT = 60


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("remember the milk\n")
    return ws


async def test_sessions_past_the_cap_put_the_least_used_away_and_its_next_prompt_reopens_it(
        workspace):
    async with lackpy_acp(workspace) as (conn, client, process):
        ids = []
        for _ in range(MAX_SESSIONS + 3):
            ids.append((await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id)
            assert len(workers_of(process.pid)) <= MAX_SESSIONS
        await prompt(conn, ids[0], "read the file notes.txt")  # it was put away
        assert client.messages() == block("remember the milk")
        assert len(workers_of(process.pid)) <= MAX_SESSIONS
        assert process.returncode is None


async def test_when_every_session_is_answering_a_new_one_is_refused_with_a_clear_error(
        workspace, model_env, model_server):
    model_server.default = loopback.hang()  # every model call waits
    (workspace / ".lackpy").mkdir()
    (workspace / ".lackpy" / "config.toml").write_text(
        '[inference]\norder = ["local"]\n\n[inference.providers.local]\nplugin = "openai"\n'
        f'base_url = "{model_server.url}/v1"\nmodel = "m"\n')
    async with lackpy_acp(workspace) as (conn, _, process):
        ids = [(await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
               for _ in range(MAX_SESSIONS)]
        asking = [asyncio.ensure_future(prompt(conn, sid, "summarise the notes")) for sid in ids]
        async with asyncio.timeout(REPLY_TIMEOUT):
            while len(model_server.requests) < MAX_SESSIONS:
                await asyncio.sleep(0.05)
        with pytest.raises(RequestError, match="Invalid request") as full:
            await conn.new_session(cwd=str(workspace), mcp_servers=[])
        assert f"at most {MAX_SESSIONS} sessions" in str(full.value.data)
        for sid in ids:
            await conn.cancel(session_id=sid)
        answers = await asyncio.wait_for(asyncio.gather(*asking), REPLY_TIMEOUT)
        assert {answer.stop_reason for answer in answers} == {"cancelled"}
        assert await conn.new_session(cwd=str(workspace), mcp_servers=[])
        assert process.returncode is None


def _hostile_servers(workspace: Path) -> list[object]:
    """Servers a client should not get started, each for its own reason."""
    leak = tool_server("leak", env={"STOLEN": "${LACKPY_ACP_SECRET}"})
    nul = tool_server("nul", "\x00--evil")
    long_args = tool_server("many", *["x"] * 10_000)
    shell = tool_server("shell")
    shell.command = f"touch {workspace / 'pwned'}; echo"  # no shell ever reads it
    builtin = tool_server("builtin")
    bad_env = tool_server("badenv")
    bad_env.env = [EnvVariable(name="A=B", value="x")]
    sse = SseMcpServer(name="sse", url="http://127.0.0.1:9/sse", headers=[], type="sse")
    return [leak, nul, long_args, shell, builtin, bad_env, sse]


async def test_hostile_mcp_server_command_lines_are_left_out_saying_why(workspace, monkeypatch):
    monkeypatch.setenv("LACKPY_ACP_SECRET", "TOPSECRET-env")
    template(workspace, "env", "what is {name}", "environment({name})")
    servers = [*_hostile_servers(workspace), tool_server("good", env={"PLAIN": "literal"})]
    async with lackpy_acp(workspace) as (conn, client, process):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=servers)
        said = await client.message_within(REPLY_TIMEOUT)
        for name, why in [("leak", "taken literally"), ("nul", "NUL"), ("many", "at most 64"),
                          ("shell", "was not found"), ("builtin", "name is taken"),
                          ("badenv", "no environment variable name"),
                          ("sse", "stdio and streamable HTTP")]:
            assert f"the MCP server {name!r} is left out" in said and why in said, name
        assert "TOPSECRET" not in said
        assert not (workspace / "pwned").exists()
        client.clear()
        await prompt(conn, session.session_id, "what is PLAIN")
        assert client.messages().startswith(block("literal"))
        client.clear()
        await prompt(conn, session.session_id, "what is STOLEN")
        assert "TOPSECRET" not in json.dumps([u.model_dump(mode="json") for u in client.updates])
        assert process.returncode is None


async def test_more_servers_than_a_session_takes_are_left_out(workspace):
    servers = [tool_server(f"s{index}") for index in range(9)]
    for server in servers:
        server.command = str(workspace / "no-such-server")  # nothing starts: only the count
    async with lackpy_acp(workspace) as (conn, client, _):
        await conn.new_session(cwd=str(workspace), mcp_servers=servers)
        said = await client.message_within(REPLY_TIMEOUT)
        assert "the MCP server 's8' is left out: a session takes at most 8 MCP servers" in said


async def test_a_server_that_crashes_at_the_handshake_is_left_out_and_the_session_works(
        workspace):
    crashing = tool_server("crashing")
    crashing.args = [str(HOSTILE_SERVER), "crash"]
    async with lackpy_acp(workspace) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[crashing])
        said = await client.message_within(REPLY_TIMEOUT)
        assert "the MCP server 'crashing' is left out" in said
        client.clear()
        await prompt(conn, session.session_id, "read the file notes.txt")
        assert client.messages() == block("remember the milk")


@pytest.mark.parametrize("session_id", [
    "../../outside", "0" * 31 + "/", "/etc/passwd", "A" * 32, "0" * 10_000, "",
])
async def test_a_session_id_that_is_no_lackpy_id_is_refused_before_any_file_is_read(
        workspace, session_id):
    async with lackpy_acp(workspace) as (conn, _, process):
        with pytest.raises(RequestError, match="Invalid params") as refused:
            await conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        assert "no lackpy session id" in str(refused.value.data)
        assert len(str(refused.value.data)) < 500
        assert process.returncode is None


async def test_a_record_folder_or_file_that_leads_outside_the_workspace_is_not_read(
        workspace, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    session_id = "a" * 32
    (outside / f"{session_id}.json").write_text(json.dumps(
        {"mode": "run", "kit": None, "history": [
            {"sessionUpdate": "agent_message_chunk",
             "content": {"type": "text", "text": "TOPSECRET-record"}}]}))
    (workspace / ".lackpy").mkdir()
    (workspace / ".lackpy" / "acp").symlink_to(outside)
    other = tmp_path / "other"
    (other / ".lackpy" / "acp").mkdir(parents=True)
    (other / ".lackpy" / "acp" / f"{session_id}.json").symlink_to(outside / f"{session_id}.json")
    async with lackpy_acp(workspace) as (conn, client, _):
        with pytest.raises(RequestError, match="Invalid params") as folder:
            await conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        assert "outside the workspace" in str(folder.value.data)
        with pytest.raises(RequestError, match="Invalid params") as linked:
            await conn.load_session(cwd=str(other), session_id=session_id, mcp_servers=[])
        assert "cannot be read" in str(linked.value.data)
        assert "TOPSECRET" not in json.dumps([u.model_dump(mode="json") for u in client.updates])


@pytest.mark.parametrize("content", [
    "{not json", json.dumps({"mode": "run"}), json.dumps({"mode": 5, "kit": None}),
    json.dumps({"mode": "run", "kit": None, "history": "x", "extra": 1}),
    "[" * 100_000, "x" * 5_000_000,
])
async def test_a_damaged_or_oversized_record_is_refused_clearly(workspace, content):
    session_id = "b" * 32
    (workspace / ".lackpy" / "acp").mkdir(parents=True)
    (workspace / ".lackpy" / "acp" / f"{session_id}.json").write_text(content)
    async with lackpy_acp(workspace) as (conn, _, process):
        with pytest.raises(RequestError, match="Invalid params") as refused:
            await conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
        assert "start a new session" in str(refused.value.data)
        assert process.returncode is None


async def test_a_records_replay_sends_only_conversation_and_a_bad_kit_falls_back(workspace):
    session_id = "c" * 32
    (workspace / ".lackpy" / "acp").mkdir(parents=True)
    (workspace / ".lackpy" / "acp" / f"{session_id}.json").write_text(json.dumps({
        "mode": "no-such-mode", "kit": ["no_such_tool"], "last_program": None,
        "history": [{"sessionUpdate": "agent_message_chunk",
                     "content": {"type": "text", "text": "kept"}},
                    {"sessionUpdate": "made_up"}, 5, None]}))
    async with lackpy_acp(workspace) as (conn, client, _):
        loaded = await settled(conn.load_session(cwd=str(workspace), session_id=session_id,
                                                 mcp_servers=[]))
        assert loaded.modes.current_mode_id == "run"
        said = await client.message_within(REPLY_TIMEOUT)
        assert said.startswith("kept") and "no longer resolves" in said
        client.clear()
        await prompt(conn, session_id, "read the file notes.txt")
        assert client.messages() == block("remember the milk")


async def test_a_prompt_of_many_parts_is_refused_unread(workspace):
    async with lackpy_acp(workspace) as (conn, client, process):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        response = await asyncio.wait_for(settled(conn.prompt(
            session_id=session.session_id, prompt=[text_block("x")] * 5_000)), REPLY_TIMEOUT)
        assert response.stop_reason == "end_turn"
        assert "at most 1000" in client.messages()
        assert not client.tool_calls()
        assert process.returncode is None


async def test_the_kept_conversation_stays_bounded(workspace):
    async with lackpy_acp(workspace) as (conn, _, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        for index in range(12):  # each refused (no tier knows it), each kept
            await prompt(conn, session.session_id, f"{index} " + "y" * 99_000)
    record = workspace / ".lackpy" / "acp" / f"{session.session_id}.json"
    kept = json.loads(record.read_text())["history"]
    assert sum(len(json.dumps(update)) for update in kept) <= 1_000_000
    assert kept[-2]["content"]["text"].startswith("11 ")  # the newest are kept
