"""The one run pipeline (``lackpy_kernel.execution``): the same gates in each of its three
places, the service's pool of workers, a session's own worker and this process. Each test
runs once per place, the way the magics are tested once per host."""

from __future__ import annotations

import pytest

from lackpy_kernel.execution import Place, RunPipeline
from lackpy_kernel.kit.changes import Change
from lackpy_kernel.run import sandbox_supported
from lackpy_kernel.service import LackpyService
from tests.support.kernel import add_outbox, make_workspace

pytestmark = pytest.mark.asyncio

NEEDS_LINUX = pytest.mark.skipif(not sandbox_supported(), reason="the worker needs Linux")
PLACES = [pytest.param("pool", marks=NEEDS_LINUX), pytest.param("worker", marks=NEEDS_LINUX),
          "here"]
FIVE_CALLS = "[read_file('notes.txt') for i in range(5)]"
CAPPED = '[sandbox]\nmax_tool_calls = 3\napprove = "write"\ntimeout = 30\n'


def place_of(runs: RunPipeline, kind: str) -> Place:
    return {"pool": lambda: runs.shared, "worker": runs.worker, "here": runs.here}[kind]()


@pytest.fixture
def service(tmp_path):
    with LackpyService(make_workspace(tmp_path, CAPPED)) as svc:
        yield svc


async def run_in(service: LackpyService, kind: str, program: str, kit, **spec):
    place = place_of(service.runs, kind)
    try:
        return await service.runs.run(
            service.runs.spec(program, service.resolve_kit(kit), **spec), place)
    finally:
        if kind == "worker":
            place.sandbox.close()  # type: ignore[attr-defined]


@pytest.mark.parametrize("kind", PLACES)
async def test_the_call_cap_stops_the_fourth_call_in_every_place(service, kind):
    result = await run_in(service, kind, FIVE_CALLS, ["read_file"])
    assert result.error_type == "ToolCallBudgetError", result.error
    assert "already made 3 tool calls" in result.error
    assert [entry.success for entry in result.trace.entries] == [True, True, True, False]


@pytest.mark.parametrize("kind", PLACES)
async def test_a_staged_write_lands_once_approved_and_not_when_declined(service, kind):
    shown: list[Change] = []

    def answer(apply: bool):
        def approve(change: Change) -> bool:
            shown.append(change)
            return apply
        return approve

    program = "write_file('out.txt', 'new')\n'done'"
    declined = await run_in(service, kind, program, ["write_file"], approve=answer(False))
    assert declined.error_type == "ChangeRefusedError"
    assert not (service.workspace / "out.txt").exists()
    applied = await run_in(service, kind, program, ["write_file"], approve=answer(True))
    assert applied.success and applied.output == "done", applied.error
    assert (service.workspace / "out.txt").read_text() == "new"
    assert [[file.path for file in change.files] for change in shown] == [["out.txt"]] * 2


@pytest.mark.parametrize("kind", PLACES)
async def test_a_dry_run_drops_its_writes_unasked(service, kind):
    def never(change: Change) -> bool:
        raise AssertionError("a dry run asks no one")

    result = await run_in(service, kind, "write_file('out.txt', 'new')\n1", ["write_file"],
                          approve=never, dry=True)
    assert result.success and result.output == 1
    assert not (service.workspace / "out.txt").exists()


@pytest.mark.parametrize("kind", PLACES)
async def test_a_write_graded_tool_is_asked_at_its_call(tmp_path, kind):
    workspace = add_outbox(tmp_path, CAPPED)
    asked: list[Change] = []

    def no(change: Change) -> bool:
        asked.append(change)
        return False

    with LackpyService(workspace) as service:
        result = await run_in(service, kind, "post('outbox.txt', 'hello')", ["post"],
                              approve=no)
    assert result.error_type == "ToolCallError", result.error
    assert [change.call.name for change in asked if change.call] == ["post"]
    assert not (workspace / "outbox.txt").exists()


@pytest.mark.parametrize("kind", PLACES)
async def test_kibitzers_refusal_stops_a_program_before_it_runs(tmp_path, kind):
    workspace = make_workspace(tmp_path, '[kibitzer]\nmode = "explore"\n\n' + CAPPED)
    with LackpyService(workspace) as service:
        result = await run_in(service, kind, "write_file('out.txt', 'x')", ["write_file"],
                              approve=lambda change: True)
    assert result.error_type == "ToolCallError"
    assert result.error.startswith("Kibitzer (explore mode) refused the program: ")
    assert not result.trace.entries and not (workspace / "out.txt").exists()


@pytest.mark.parametrize("kind", PLACES)
async def test_the_same_failure_has_the_same_error_name_in_every_place(service, kind):
    invalid = await run_in(service, kind, "import os", ["read_file"])
    missing = await run_in(service, kind, "read_file('missing.txt')", ["read_file"])
    assert invalid.error_type == "LackpyValidationError"
    assert missing.error_type == "FileNotFoundError", missing.error
    assert "missing.txt" in missing.error
