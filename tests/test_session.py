"""LackpySession: cells and delegations on one session, each resolving its kit once."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from lackpy_kernel.config import LackpyConfig
from lackpy_kernel.errors import GenerationError, UnknownKitError
from lackpy_kernel.service import DelegateOptions, Delegation, LackpyService
from lackpy_kernel.session import LackpySession
from tests.support.audit import opened_paths, recorded_events
from tests.support.processes import gone, workers_of


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    (tmp_path / ".lackpy" / "kits").mkdir(parents=True)
    (tmp_path / ".lackpy" / "kits" / "mine.kit").write_text("read_file\nfind_files\n")
    return tmp_path


@pytest.fixture(params=[True, False], ids=["sandbox", "in-process"])
def session(request, workspace: Path) -> Iterator[LackpySession]:
    config = LackpyConfig(kit_default="mine", sandbox_enabled=request.param)
    with LackpyService(workspace, config) as service:
        session = LackpySession(service)
        yield session
        session.close()


def kit_reads(events: list) -> int:
    return sum(1 for path in opened_paths(events) if path.endswith("mine.kit"))


async def test_a_cell_resolves_its_kit_once(session):
    with recorded_events("open") as files:
        result = await session.run("text = read_file('notes.txt')\nlen(text)")
    assert result.success and result.output == 11
    assert kit_reads(files) == 1


async def test_a_delegation_resolves_its_kit_once(session):
    with recorded_events("open") as files:
        delegation = await session.delegate("read the file notes.txt", run=True)
    assert delegation.result is not None and delegation.result.output == "alpha\nbeta\n"
    assert kit_reads(files) == 1


async def test_a_delegation_that_runs_keeps_its_variables_in_the_session(session):
    delegation = await session.delegate("read the file notes.txt", run=True)
    assert delegation.success and delegation.ran
    assigned = delegation.result.variables or session.variable_types
    assert assigned, "the rules tier's program assigns a variable"
    name = next(iter(session.variable_types))
    assert (await session.run(f"len({name})")).output == 11


async def test_a_delegation_without_run_only_writes(session):
    delegation = await session.delegate("read the file notes.txt")
    assert not delegation.ran and delegation.success and delegation.result is None
    assert "read_file('notes.txt')" in delegation.program
    assert session.variable_types == {}


async def test_per_call_params_reach_the_program_but_not_the_session(session):
    session.params["prefix"] = ">"
    result = await session.run("prefix")
    assert result.output == ">"
    delegation = await session.delegate("read the file notes.txt",
                                        DelegateOptions(params={"extra": 1}), run=True)
    assert delegation.success and session.params == {"prefix": ">"}


async def test_delegation_to_dict_is_the_documented_delegate_result(session):
    delegation = await session.delegate("read the file notes.txt", run=True)
    result = delegation.to_dict()
    assert set(result) >= {"success", "program", "grade", "generation_tier",
                           "generation_time_ms", "execution_time_ms", "total_time_ms", "trace",
                           "files_read", "files_modified", "output", "error"}
    assert result["generation_tier"] == "rules" and result["files_read"] == ["notes.txt"]
    assert result["grade"] == {"w": 1, "d": 1} and result["success"] is True


async def test_no_program_is_a_generation_error_and_changes_nothing(session):
    await session.run("kept = 1")
    with pytest.raises(GenerationError, match="rules: no program"):
        await session.delegate("summarise everything", run=True)
    assert (await session.run("kept")).output == 1


async def test_an_unknown_kit_is_a_kit_error_naming_it_and_what_exists(session):
    with pytest.raises(UnknownKitError) as caught:
        await session.run("1", kit="nosuchkit")
    assert "no kit named 'nosuchkit'" in str(caught.value)
    assert "available kits: debug, mine" in str(caught.value)


def test_delegation_of_a_written_program_reports_no_run():
    from lackpy_kernel.infer import GenerationResult
    from lackpy_kernel.lang import Grade

    written = Delegation("x", GenerationResult("1", "rules", 0.5), Grade(1, 1))
    result = written.to_dict()
    assert result["success"] is True and result["output"] is None and result["trace"] == []
    assert result["execution_time_ms"] == 0.0


async def test_start_readies_the_worker_and_the_first_cell_uses_it(workspace):
    with LackpyService(workspace, LackpyConfig(kit_default="mine")) as service:
        session = LackpySession(service)
        try:
            session.start()
            session.start()  # a second call starts no second worker
            started = workers_of(os.getpid())
            assert len(started) == 1
            assert (await session.run("len(read_file('notes.txt'))")).output == 11
            assert workers_of(os.getpid()) == started
        finally:
            session.close()
        assert gone(started[0])


async def test_start_starts_nothing_when_programs_run_in_process(workspace):
    config = LackpyConfig(kit_default="mine", sandbox_enabled=False)
    with LackpyService(workspace, config) as service:
        session = LackpySession(service)
        session.start()
        assert workers_of(os.getpid()) == []
        assert (await session.run("1 + 1")).output == 2
