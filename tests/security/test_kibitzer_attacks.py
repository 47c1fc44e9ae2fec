"""Attacks on Kibitzer's watch (the kibitzer extra, the real package): a program cannot
name a tool of Kibitzer's (there is none to reach) and cannot rewrite Kibitzer's state to
leave its mode; a huge argument reaches Kibitzer bounded; and what it judges before a
program runs stays bounded whatever the program's size, so no program can make it slow
enough to be set aside for the session (after which writes outside its mode's paths
land)."""

from __future__ import annotations

import json

import pytest

from lackpy_kernel.kibitzer import HINT_CHARS, MAX_REPORTED
from lackpy_kernel.service import LackpyService
from tests.support.kernel import make_workspace

KIT = ["read_file", "write_file"]
ALIASED_KIT = {"w": "write_file"}


@pytest.fixture
def implement(tmp_path):
    """A workspace whose Kibitzer lets programs write src/ and tests/ only."""
    return make_workspace(tmp_path, '[kibitzer]\nmode = "implement"\n\n[sandbox]\n'
                                    'approve = "never"\ntimeout = 30\n')


async def test_a_program_cannot_name_a_tool_of_kibitzers(implement):
    with LackpyService(implement) as service:
        result = await service.run_program("__kibitzer__('write_file', [], {})", KIT)
    assert result.error_type == "LackpyValidationError" and result.trace.entries == []


async def test_a_program_cannot_rewrite_kibitzers_state_to_leave_its_mode(implement):
    with LackpyService(implement) as service:
        assert (await service.run_program("read_file('notes.txt')", KIT)).success  # loaded
        result = await service.run_program(
            "write_file('.kibitzer/' + 'state.json', '{\"mode\": \"free\"}')", KIT)
        assert result.error_type == "WorkspaceError"  # lackpy's own refusal, in any mode
        assert ".kibitzer/ folder" in result.error
        assert service.kibitzer.mode == "implement"
    assert json.loads((implement / ".kibitzer" / "state.json").read_text())["mode"] == "implement"


async def test_kibitzer_hears_a_huge_argument_bounded(implement):
    with LackpyService(implement) as service:
        heard = []
        session = service.kibitzer.session
        real = session.after_call
        session.after_call = lambda tool, given, *rest: heard.append((tool, given)) or real(
            tool, given, *rest)
        result = await service.run_program("write_file('src/' + 'x' * 1000000, 'y')", KIT)
    assert not result.success  # the path is too long for the file system
    assert [tool for tool, _ in heard] == ["Write"]
    assert all(len(given["file_path"]) <= HINT_CHARS for _, given in heard)


async def test_a_program_cannot_make_kibitzer_judge_an_unbounded_number_of_calls(implement):
    with LackpyService(implement) as service:
        judged = []
        session = service.kibitzer.session
        real = session.validate_program
        session.validate_program = lambda question: judged.append(len(question["calls"])) \
            or real(question)
        program = "[" + ",".join(f"w('a{n}','')" for n in range(2 * MAX_REPORTED)) + \
            "] if False else 0"
        result = await service.run_program(program, ALIASED_KIT)
        after = await service.run_program("w('notes.txt', 'changed')", ALIASED_KIT)
    assert "Kibitzer (implement mode) refused the program" in result.error
    assert judged and max(judged) <= MAX_REPORTED, judged
    assert "Kibitzer (implement mode) refused" in after.error
