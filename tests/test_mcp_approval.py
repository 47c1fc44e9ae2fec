"""The MCP server asks the person through MCP elicitation before a program's file changes
land (``[sandbox] approve = "write"``, the default), and refuses them, naming the setting,
for a client that cannot elicit. Driven by the official SDK's client over stdio, in both
protocol eras: the initialize handshake (``mode="legacy"``, 2025-11-25: the question is sent
while the tool runs) and the per-request envelope (``mode="auto"``, which our server answers
at 2026-07-28: the call answers ``input_required`` and the SDK's client retries it with
the person's answer)."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client

from lackpy_kernel.mcp_server import APPROVAL_QUESTION
from tests.support.kernel import add_outbox
from tests.test_mcp_server import server_params

pytestmark = pytest.mark.asyncio
MODES = ["legacy", "auto"]

WRITES = "write_file('notes.txt', 'changed\\n')\nwrite_file('sub/new.txt', 'n\\n')\n'done'"
KIT = "read_file,write_file"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text("remember the milk\n")
    return tmp_path


class Person:
    """An elicitation callback that answers ``action`` (with ``apply``) and keeps what it
    was asked."""

    def __init__(self, action: str, apply: bool = True) -> None:
        self.action, self.apply, self.asked = action, apply, []

    async def __call__(self, context: Any, params: types.ElicitRequestParams
                       ) -> types.ElicitResult:
        self.asked.append(params)
        content = {"apply": self.apply} if self.action == "accept" else None
        return types.ElicitResult(action=self.action, content=content)


@pytest.fixture(params=MODES)
def mode(request) -> str:
    """How the client connects: the 2025 handshake, or the 2026-07-28 envelope."""
    return request.param


async def run_program(workspace: Path, person: Person | None, mode: str = "legacy"
                      ) -> dict[str, Any]:
    callback = {"elicitation_callback": person} if person is not None else {}
    async with Client(server_params(workspace), mode=mode, **callback) as client:
        assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        result = await client.call_tool("run_program", {"program": WRITES, "kit": KIT})
    assert not result.is_error
    assert result.structured_content is not None
    return result.structured_content


def written(workspace: Path) -> bool:
    return (workspace / "sub" / "new.txt").exists()


async def test_accepting_the_elicitation_writes_both_files(workspace, mode):
    person = Person("accept")
    result = await run_program(workspace, person, mode)
    assert result["success"] is True, result["error"]
    assert result["output"] == "done"
    (asked,) = person.asked
    assert asked.message.startswith(f"{APPROVAL_QUESTION}\n\n2 files changed: +2 -1")
    assert "-remember the milk\n+changed" in asked.message
    assert asked.requested_schema["properties"]["apply"]["type"] == "boolean"
    assert (workspace / "notes.txt").read_text() == "changed\n" and written(workspace)


@pytest.mark.parametrize("action, apply", [("decline", True), ("cancel", True),
                                           ("accept", False)])
async def test_declining_the_elicitation_writes_nothing(workspace, mode, action, apply):
    result = await run_program(workspace, Person(action, apply), mode)
    assert result["success"] is False
    assert result["error_type"] == "ChangeRefusedError"
    assert "were not applied: they were declined" in result["error"]
    assert (workspace / "notes.txt").read_text() == "remember the milk\n"
    assert not written(workspace)


async def test_a_client_without_elicitation_is_refused_naming_the_setting(workspace, mode):
    result = await run_program(workspace, None, mode)
    assert result["success"] is False
    assert "this MCP client does not support elicitation" in result["error"]
    assert '[sandbox] approve = "never"' in result["error"]
    assert not written(workspace)


async def test_at_2026_07_28_a_change_that_differs_on_the_retry_is_asked_again(workspace):
    """The answer approves the change it was asked about (by its digest), not the call: a
    program whose change differs on the retry is asked about that change."""
    (workspace / "count.txt").write_text("")
    grows = "write_file('count.txt', read_file('count.txt') + 'x')\n'done'"

    class Meddler(Person):
        async def __call__(self, context, params):
            (workspace / "count.txt").write_text("y")  # before the retry
            return await super().__call__(context, params)

    person = Meddler("accept")
    async with Client(server_params(workspace), mode="auto",
                      elicitation_callback=person) as client:
        result = await client.call_tool("run_program", {"program": grows, "kit": KIT})
    assert result.structured_content["success"] is True, result.structured_content
    assert [asked.message.splitlines()[-1] for asked in person.asked] == ["+x", "+yx"]
    assert (workspace / "count.txt").read_text() == "yx"


async def test_an_initialize_at_2026_07_28_is_answered_with_the_latest_handshake_version(
        workspace):
    """2026-07-28 has no initialize handshake: a client that offers it there is answered
    with the latest version the handshake reaches (the spec's rule), not refused."""
    offer = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2026-07-28", "capabilities": {"elicitation": {"form": {}}},
        "clientInfo": {"name": "test", "version": "1"}}}
    params = server_params(workspace)
    done = await asyncio.to_thread(subprocess.run, [params.command, *params.args],
                                   input=json.dumps(offer) + "\n", capture_output=True,
                                   text=True, timeout=120)
    answer = json.loads(done.stdout.splitlines()[0])
    assert answer["result"]["protocolVersion"] == "2025-11-25", done.stdout + done.stderr


async def test_delegate_asks_too(workspace, mode):
    templates = workspace / ".lackpy" / "templates"
    templates.mkdir(parents=True)
    (templates / "copy.tmpl").write_text("---\nname: copy\npattern: copy the notes\n---\n"
                                         "write_file('sub/new.txt', read_file('notes.txt'))\n")
    person = Person("decline")
    async with Client(server_params(workspace), mode=mode,
                      elicitation_callback=person) as client:
        result = await client.call_tool("delegate", {"intent": "copy the notes", "kit": KIT})
    data = result.structured_content
    assert data["generation_tier"] == "templates"
    assert data["success"] is False and data["error_type"] == "ChangeRefusedError"
    assert len(person.asked) == 1 and not written(workspace)


async def post_through_mcp(workspace: Path, person: Person, outbox: Path, mode: str
                          ) -> dict[str, Any]:
    """``run_program`` of a call of ``post``, a kernel-side tool graded write."""
    add_outbox(workspace)
    async with Client(server_params(workspace), mode=mode,
                      elicitation_callback=person) as client:
        result = await client.call_tool("run_program", {
            "program": f"post({str(outbox)!r}, 'hi\\u202e')", "kit": "post"})
    assert result.structured_content is not None
    return result.structured_content


async def test_a_write_tools_call_is_asked_for_and_runs_once_accepted(workspace, tmp_path_factory,
                                                                      mode):
    outbox = tmp_path_factory.mktemp("out") / "outbox.txt"
    person = Person("accept")
    result = await post_through_mcp(workspace, person, outbox, mode)
    assert result["success"] is True, result["error"]
    (asked,) = person.asked
    assert asked.message.startswith(f"lackpy: Call post?\n\ncall post({str(outbox)!r}, "
                                    "'hi\\u202e')")
    assert "\u202e" not in asked.message
    assert outbox.read_text() == "hi\u202e\n"


@pytest.mark.parametrize("action, apply", [("decline", True), ("cancel", True),
                                           ("accept", False)])
async def test_a_write_tools_call_declined_or_cancelled_never_runs(workspace, tmp_path_factory,
                                                                  mode, action, apply):
    outbox = tmp_path_factory.mktemp("out") / "outbox.txt"
    result = await post_through_mcp(workspace, Person(action, apply), outbox, mode)
    assert result["success"] is False
    assert result["error_type"] == "ToolCallError"
    assert "post() was not run: it was declined" in result["error"]
    assert '[sandbox] approve = "never"' in result["error"]
    assert not outbox.exists()
