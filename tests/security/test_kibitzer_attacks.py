"""Attacks on Kibitzer's watch (the kibitzer extra, the real package): a program cannot call
the gate the sandbox asks, cannot rewrite Kibitzer's state to leave its mode, and a malformed
question to the gate fails the call instead of passing it; a huge argument reaches Kibitzer
bounded; and what it judges before a program runs stays bounded whatever the program's size,
so no program can make it slow enough to be set aside for the session (after which writes
outside its mode's paths land)."""

from __future__ import annotations

import json

import pytest

from lackpy_kernel.errors import ToolCallError
from lackpy_kernel.kibitzer import GATE, HINT_CHARS, MAX_REPORTED, watched_kit
from lackpy_kernel.service import LackpyService
from tests.support.kernel import make_workspace

KIT = ["read_file", "write_file"]
ALIASED_KIT = {"w": "write_file"}


@pytest.fixture
def implement(tmp_path):
    """A workspace whose Kibitzer lets programs write src/ and tests/ only."""
    return make_workspace(tmp_path, '[kibitzer]\nmode = "implement"\n\n[sandbox]\n'
                                    'approve = "never"\ntimeout = 30\n')


async def test_a_program_cannot_call_the_gate_itself(implement):
    with LackpyService(implement) as service:
        result = await service.run_program(f"{GATE}('write_file', [], {{}})", KIT)
    assert result.error_type == "LackpyValidationError" and result.trace.entries == []


async def test_a_program_cannot_rewrite_kibitzers_state_to_leave_its_mode(implement):
    with LackpyService(implement) as service:
        assert (await service.run_program("read_file('notes.txt')", KIT)).success  # loaded
        result = await service.run_program(
            "write_file('.kibitzer/' + 'state.json', '{\"mode\": \"free\"}')", KIT)
        assert "Kibitzer (implement mode) refused write_file()" in result.error
        assert service.kibitzer.mode == "implement"
    assert json.loads((implement / ".kibitzer" / "state.json").read_text())["mode"] == "implement"


@pytest.mark.parametrize("question", [(1, [], {}), ("write_file", "notes.txt", {}),
                                      ("write_file", [], [("path", "x")])])
def test_a_malformed_question_to_the_gate_fails_the_call(implement, question):
    with LackpyService(implement) as service:
        gate = watched_kit(service.resolve_kit(KIT), service.kibitzer).callables[GATE]
        with pytest.raises(ToolCallError, match="a malformed question for Kibitzer"):
            gate(*question)


async def test_kibitzer_hears_a_huge_argument_bounded(implement):
    with LackpyService(implement) as service:
        heard = []
        session = service.kibitzer.session
        real = session.before_call
        session.before_call = lambda tool, given: heard.append((tool, given)) or real(tool, given)
        result = await service.run_program("write_file('src/' + 'x' * 1000000, 'y')", KIT)
    assert not result.success  # the path is too long for the file system, or refused
    assert heard and all(len(given["file_path"]) <= HINT_CHARS for _, given in heard)


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
