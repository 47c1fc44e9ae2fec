"""Attacks on Kibitzer's watch after its questions were batched (one trip to its thread
before a program runs): what a program makes Kibitzer judge before it runs stays bounded
whatever the program's size, so no program can make Kibitzer slow enough to be set aside
for the rest of the session (after which nothing asks it, and writes outside its mode's
paths land)."""

from __future__ import annotations

import pytest

from lackpy_kernel.kibitzer import MAX_REPORTED
from lackpy_kernel.service import LackpyService
from tests.support.kernel import make_workspace

KIT = {"w": "write_file"}


@pytest.fixture
def implement(tmp_path):
    """A workspace whose Kibitzer lets programs write src/ and tests/ only."""
    return make_workspace(tmp_path, '[kibitzer]\nmode = "implement"\n\n[sandbox]\n'
                                    'approve = "never"\ntimeout = 30\n')


async def test_a_program_cannot_make_kibitzer_judge_an_unbounded_number_of_calls(implement):
    with LackpyService(implement) as service:
        judged = []
        session = service.kibitzer.session
        real = session.validate_program
        session.validate_program = lambda question: judged.append(len(question["calls"])) \
            or real(question)
        program = "[" + ",".join(f"w('a{n}','')" for n in range(2 * MAX_REPORTED)) + \
            "] if False else 0"
        result = await service.run_program(program, KIT)
        after = await service.run_program("w('notes.txt', 'changed')", KIT)
    assert "Kibitzer (implement mode) refused the program" in result.error
    assert judged and max(judged) <= MAX_REPORTED, judged
    assert "Kibitzer (implement mode) refused" in after.error
