"""A program's file changes wait for approval on every path the service runs it
(``[sandbox] approve = "write"``, the default): in the sandbox worker and in this process
(the sandbox off), where the file tools write a stage of the process as the worker's
children do; a refused change, or one no one can be asked about, writes nothing."""

from __future__ import annotations

import pytest

from lackpy_kernel.kit.changes import Change
from lackpy_kernel.run import sandbox_supported
from lackpy_kernel.service import LackpyService

pytestmark = pytest.mark.asyncio

WRITES = "write_file('notes.txt', 'changed')\nwrite_file('sub/new.txt', 'n')\n'done'"
KIT = ["read_file", "write_file"]
WHERE = [False, pytest.param(True, marks=pytest.mark.skipif(
    not sandbox_supported(), reason="the worker needs Linux"))]


@pytest.fixture
def service(tmp_path):
    (tmp_path / "notes.txt").write_text("alpha\n")
    with LackpyService(tmp_path) as svc:
        yield svc


def unchanged(service: LackpyService) -> bool:
    return ((service.workspace / "notes.txt").read_text() == "alpha\n"
            and not (service.workspace / "sub").exists())


@pytest.mark.parametrize("sandbox", WHERE)
async def test_an_approved_change_lands(service, sandbox):
    shown: list[Change] = []

    def yes(change: Change) -> bool:
        shown.append(change)
        return True

    result = await service.run_program(WRITES, KIT, sandbox=sandbox, approve=yes)
    assert result.success, result.error
    assert result.output == "done"
    assert [file.path for file in shown[0].files] == ["notes.txt", "sub/new.txt"]
    assert (service.workspace / "sub" / "new.txt").read_text() == "n"


@pytest.mark.parametrize("sandbox", WHERE)
async def test_a_declined_change_writes_nothing(service, sandbox):
    async def no(change: Change) -> bool:
        return False

    result = await service.run_program(WRITES, KIT, sandbox=sandbox, approve=no)
    assert result.error_type == "ChangeRefusedError" and result.output is None
    assert "they were declined" in result.error
    assert unchanged(service)


@pytest.mark.parametrize("sandbox", WHERE)
async def test_with_no_one_to_ask_the_change_is_refused_naming_the_setting(service, sandbox):
    result = await service.run_program(WRITES, KIT, sandbox=sandbox)
    assert result.error_type == "ChangeRefusedError"
    assert '[sandbox] approve = "never"' in result.error
    assert unchanged(service)


async def test_in_this_process_a_failed_program_writes_nothing_either(service):
    result = await service.run_program(WRITES + "\nread_file('missing.txt')", KIT,
                                       sandbox=False, approve=lambda change: True)
    assert result.error_type == "FileNotFoundError"
    assert any("nothing was written" in note for note in result.notes)
    assert unchanged(service)
    assert not list((service.workspace / ".lackpy" / "staging").iterdir())
