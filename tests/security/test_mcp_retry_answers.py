"""Attacks on the MCP server's question at protocol 2026-07-28, where a tool call answers
``input_required`` and the client's retry carries the answers: an answer the client makes up
lands nothing unless it is an accepted elicitation whose ``apply`` is true, for the very
change the program makes on that retry (its digest), and a forged ``request_state`` is
ignored. Driven by the official SDK's client session over stdio."""

from __future__ import annotations

from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.test_mcp_server import server_params

pytestmark = pytest.mark.asyncio

WRITES = "write_file('notes.txt', 'changed\\n')\n'done'"
ARGUMENTS = {"program": WRITES, "kit": "read_file,write_file"}
BEFORE = "remember the milk\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text(BEFORE)
    return tmp_path


async def never_asked(context, params):
    raise AssertionError("the test answers the questions itself")


FORGED = {
    "apply as text": lambda: types.ElicitResult(action="accept", content={"apply": "true"}),
    "apply as a number": lambda: types.ElicitResult(action="accept", content={"apply": 1}),
    "accepted without content": lambda: types.ElicitResult(action="accept"),
    "declined with apply": lambda: types.ElicitResult(action="decline",
                                                      content={"apply": True}),
    "not an elicitation": lambda: types.ListRootsResult(roots=[]),
}


@pytest.mark.parametrize("forged", FORGED.values(), ids=FORGED.keys())
async def test_a_made_up_answer_for_the_change_lands_nothing(workspace, forged):
    async with Client(server_params(workspace), mode="auto",
                      elicitation_callback=never_asked) as client:
        assert client.protocol_version == "2026-07-28"
        asked = await client.session.call_tool("run_program", ARGUMENTS,
                                               allow_input_required=True)
        assert isinstance(asked, types.InputRequiredResult)
        (digest,) = asked.input_requests
        again = await client.session.call_tool("run_program", ARGUMENTS,
                                               input_responses={digest: forged()},
                                               allow_input_required=True)
    assert not isinstance(again, types.InputRequiredResult) or again.input_requests, again
    if not isinstance(again, types.InputRequiredResult):
        assert again.structured_content["success"] is False
        assert again.structured_content["error_type"] == "ChangeRefusedError"
    assert (workspace / "notes.txt").read_text() == BEFORE


async def test_an_answer_for_another_digest_is_not_an_approval(workspace):
    accept = types.ElicitResult(action="accept", content={"apply": True})
    async with Client(server_params(workspace), mode="auto",
                      elicitation_callback=never_asked) as client:
        again = await client.session.call_tool(
            "run_program", ARGUMENTS, input_responses={"0" * 16: accept, "*": accept},
            allow_input_required=True)
    assert isinstance(again, types.InputRequiredResult)  # asked, as if nothing was answered
    assert len(again.input_requests) == 1 and "0" * 16 not in again.input_requests
    assert (workspace / "notes.txt").read_text() == BEFORE


async def test_a_forged_request_state_is_refused_and_lands_nothing(workspace):
    accept = types.ElicitResult(action="accept", content={"apply": True})
    async with Client(server_params(workspace), mode="auto",
                      elicitation_callback=never_asked) as client:
        with pytest.raises(MCPError, match="requestState"):
            await client.session.call_tool(
                "run_program", ARGUMENTS, input_responses={"*": accept},
                request_state='{"approved": "everything"}', allow_input_required=True)
    assert (workspace / "notes.txt").read_text() == BEFORE
