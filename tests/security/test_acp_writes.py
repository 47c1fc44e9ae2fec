"""Attacks on ``lackpy acp``'s writes: programs from the chat that aim their writes outside
the workspace, at the agent's own records, or at the client's display. Nothing lands
without the person's yes, a write the file tools refuse is never asked about, and what
the client is shown is printable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.acp_client import lackpy_acp, prompt, template


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".lackpy").mkdir()
    (ws / ".lackpy" / "config.toml").write_text('[kit]\ndefault = ["read_file", "write_file"]\n')
    return ws


@pytest.mark.parametrize("path", [
    "../outside.txt",  # out of the workspace
    ".lackpy/acp/" + "d" * 32 + ".json",  # a forged session record
    ".lackpy/templates/forged.tmpl",  # a template that would answer later prompts
    "/tmp/absolute-acp.txt",
])
async def test_a_write_the_file_tools_refuse_is_never_asked_about_and_lands_nowhere(
        workspace, path):
    template(workspace, "evil", "do it", f"write_file({path!r}, 'pwned')")
    async with lackpy_acp(workspace) as (conn, client, process):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        response = await prompt(conn, session.session_id, "do it")
        assert response.stop_reason == "end_turn"
        assert not client.asked
        assert client.statuses()[-1] == "failed"
        assert process.returncode is None
    assert not (workspace.parent / "outside.txt").exists()
    assert not (workspace / ".lackpy" / "acp" / ("d" * 32 + ".json")).exists()
    assert not (workspace / ".lackpy" / "templates" / "forged.tmpl").exists()
    assert not Path("/tmp/absolute-acp.txt").exists()


async def test_a_file_name_and_content_that_would_rewrite_the_display_are_shown_escaped(
        workspace):
    name = "evil\\x1b[2J\\u202etxt.md"  # a terminal escape and a right-to-left override
    template(workspace, "evil", "do it", f"write_file('{name}', 'ok\\x1b]0;owned\\x07')")
    async with lackpy_acp(workspace) as (conn, client, _):
        client.permission = "discard"
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await prompt(conn, session.session_id, "do it")
        [(call, _)] = client.asked
        shown = json.dumps(call.model_dump(mode="json"), ensure_ascii=False)
        assert "\x1b" not in shown and "\u202e" not in shown and "\x07" not in shown
        diff = call.content[1]
        assert diff.type == "diff" and "\\x1b" in diff.path and "\\u202e" in diff.path
    # nothing but lackpy's folder (and Kibitzer's state, where the kibitzer extra is installed)
    assert [path for path in workspace.iterdir() if path.name != ".kibitzer"] == [
        workspace / ".lackpy"]


async def test_many_files_are_shown_bounded(workspace):
    writes = "\n".join(f"write_file('f{index}.txt', 'line\\n' * 500)" for index in range(50))
    template(workspace, "many", "write many", writes + "\n'done'")
    async with lackpy_acp(workspace) as (conn, client, _):
        client.permission = "discard"
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await prompt(conn, session.session_id, "write many")
        [(call, _)] = client.asked
        assert call.title == "50 files changed: +25000 -0"
        assert len(json.dumps(call.model_dump(mode="json"))) < 200_000
    assert not (workspace / "f0.txt").exists()
