"""Attacks on the pool of sandbox workers (run/kernel_side/_pool.py): while one program holds
uncommitted changes in its stage (``.lackpy/staging/<pid>/``), a program beside it reaches
them by no spelling of the path (``..``, ``//``, an absolute path, a trailing slash, a link
the workspace already held, a glob, a code search) and cannot write into that stage; a
program that never ends holds its worker only until its time limit, and the programs
waiting for that worker then run; a Python tool's module state does not pass from one
program to the next on the same worker. Order, not time, makes the programs overlap."""

from __future__ import annotations

import asyncio
import os
import threading

import pytest

from lackpy_kernel.config import LackpyConfig
from lackpy_kernel.kit import ToolSpec
from lackpy_kernel.kit.builtin_specs import READ_GRADE
from lackpy_kernel.run import sandbox_supported
from lackpy_kernel.service import LackpyService

pytestmark = pytest.mark.skipif(not sandbox_supported(), reason="the worker needs Linux")

WAIT = 60.0  # hang guard: a held program is let go by the test long before this
STASH = '''
_kept = []


def stash(value: str) -> int:
    """Keep ``value`` in this module; how many values it keeps."""
    _kept.append(value)
    return len(_kept)


def kept() -> list:
    """What this module keeps."""
    return list(_kept)
'''
WRITER = ("write_file('mine.txt', 'staged by A')\n"
          "write_file('pkg/hidden.py', 'def secret_fn():\\n    return 1\\n')\n"
          "hold()\n'A done'")
KIT = ["hold", "read_file", "write_file", "edit_file", "find_files", "find_definitions",
       "find_callers", "stash", "kept"]


class Gate:
    """A kernel-side tool ``hold()`` that waits until the test opens the gate."""

    def __init__(self) -> None:
        self.held = threading.Event()
        self.open = threading.Event()

    def hold(self):
        self.held.set()
        return self.open.wait(WAIT)


@pytest.fixture
def gate():
    gate = Gate()
    yield gate
    gate.open.set()


def service_for(workspace, gate: Gate, **config) -> LackpyService:
    (workspace / "tools").mkdir(exist_ok=True)
    (workspace / "tools" / "stash.py").write_text(STASH)
    settings = {"sandbox_timeout": WAIT + 30, "sandbox_approve": "never", "tool_providers": {
        "stash": {"plugin": "python", "path": "tools/stash.py", "grade": "read"}}, **config}
    service = LackpyService(workspace, LackpyConfig(**settings))
    service.toolbox.register_tool(ToolSpec("hold", "custom", **READ_GRADE), gate.hold)
    return service


def the_stage(workspace) -> str:
    """The name of the one stage that holds files now."""
    stages = workspace / ".lackpy" / "staging"
    (name,) = [entry.name for entry in stages.iterdir() if (entry / "mine.txt").exists()]
    return name


def reads_of(workspace, stage: str) -> list[str]:
    real = os.path.realpath(workspace)
    inner = f".lackpy/staging/{stage}/mine.txt"
    return [inner, f"./{inner}", f".lackpy//staging/{stage}//mine.txt",
            f"tools/../.lackpy/staging/{stage}/mine.txt",
            f".lackpy/staging/../staging/{stage}/mine.txt",
            f".lackpy/./staging/{stage}/./mine.txt", f"{real}/{inner}",
            f"door/{stage}/mine.txt", "window.txt"]


async def test_no_spelling_of_a_path_reads_or_writes_the_stage_of_a_program_running_beside(
        tmp_path, gate):
    (tmp_path / "mine.txt").write_text("the workspace's own")
    os.makedirs(tmp_path / ".lackpy" / "staging", exist_ok=True)
    os.symlink(".lackpy/staging", tmp_path / "door")  # links the workspace held already
    with service_for(tmp_path, gate) as service:
        writer = asyncio.ensure_future(service.run_program(WRITER, KIT))
        await asyncio.to_thread(gate.held.wait, WAIT)
        stage = the_stage(tmp_path)
        os.symlink(f".lackpy/staging/{stage}/mine.txt", tmp_path / "window.txt")
        os.symlink(f".lackpy/staging/{stage}/pkg/hidden.py", tmp_path / "peek.py")
        reads = [await service.run_program("read_file(path)", KIT, {"path": path})
                 for path in reads_of(tmp_path, stage)]
        writes = [await service.run_program(program, KIT, {"path": path}) for program, path in (
            ("write_file(path, 'from B')", f".lackpy/staging/{stage}/mine.txt"),
            ("write_file(path, 'from B')", f".lackpy/staging/{stage}/new.txt"),
            ("write_file(path, 'from B')", f"door/{stage}/mine.txt"),
            ("edit_file(path, 'A', 'B')", f".lackpy/staging/{stage}/mine.txt"))]
        patterns = ["**/*.txt", "**/*.py", ".lackpy/**", ".lackpy/staging/**", ".*/**/*",
                    ".*/*/*/*", "[.]lackpy/staging/*/*", ".lack?y/sta*/*/mine.txt",
                    "door/**", "door/*/*", "**/mine.txt", ".LACKPY/**"]
        found = await service.run_program(
            "[find_files(pattern) for pattern in patterns]", KIT, {"patterns": patterns})
        searched = await service.run_program(
            "[find_definitions('secret_fn'), find_callers('secret_fn')]", KIT)
        gate.open.set()
        written = await writer
    for result in reads:
        assert not result.success, result.output
        assert "staged by A" not in str(result.error)
    assert all(result.error_type == "WorkspaceError" for result in reads[:-2]), \
        [result.error for result in reads]
    for result in writes:
        assert result.error_type == "WorkspaceError", result.error
    assert found.success, found.error
    assert all(".lackpy" not in path and "door" not in path for paths in found.output
               for path in paths), found.output
    assert searched.success and searched.output == [[], []], searched.output
    assert written.output == "A done", written.error
    assert (tmp_path / "mine.txt").read_text() == "staged by A"  # A's own, whole
    assert not (tmp_path / "new.txt").exists()


async def test_a_program_that_never_ends_holds_its_worker_only_until_its_time_limit(
        tmp_path, gate):
    with service_for(tmp_path, gate, sandbox_timeout=3, sandbox_workers=1) as service:
        spinning = asyncio.ensure_future(service.run_program("sum(range(1000000000000000))", []))
        waiting = asyncio.ensure_future(service.run_program("hold()", KIT))
        after = asyncio.ensure_future(service.run_program("'ran'", []))
        spun, held = await asyncio.gather(spinning, waiting)
        ran = await after
        assert service.runs.shared.size == 1
    assert spun.error_type == "TimeoutError", spun.error
    assert held.error_type == "TimeoutError", held.error  # a tool that never answers
    assert ran.success and ran.output == "ran", ran.error


async def test_a_python_tools_module_state_does_not_pass_to_the_next_program_on_the_worker(
        tmp_path, gate):
    with service_for(tmp_path, gate, sandbox_workers=1) as service:
        first = await service.run_program("stash('secret of A')", KIT)
        second = await service.run_program("kept()", KIT)
        assert service.runs.shared.size == 1  # the same worker ran both
    assert first.output == 1, first.error
    assert second.success and second.output == [], second.output


@pytest.mark.parametrize("workers", [0, -1, True, "4", 2.5])
def test_a_workers_setting_that_bounds_nothing_is_refused_naming_the_key(tmp_path, workers):
    config = tmp_path / ".lackpy"
    config.mkdir()
    value = "true" if workers is True else repr(workers).replace("'", '"')
    (config / "config.toml").write_text(f"[sandbox]\nworkers = {value}\n")
    with pytest.raises(ValueError, match=r"\[sandbox\] workers"):
        LackpyService(tmp_path).close()


async def test_a_stage_stays_out_of_reach_when_the_config_folder_is_a_link(tmp_path, gate):
    (tmp_path / "settings").mkdir()
    os.symlink("settings", tmp_path / ".lackpy")  # the workspace keeps its config elsewhere
    with service_for(tmp_path, gate) as service:
        writer = asyncio.ensure_future(service.run_program(WRITER, KIT))
        await asyncio.to_thread(gate.held.wait, WAIT)
        stage = the_stage(tmp_path)
        read = await service.run_program(
            "read_file(path)", KIT, {"path": f"settings/staging/{stage}/mine.txt"})
        found = await service.run_program("find_files('settings/**')", KIT)
        gate.open.set()
        written = await writer
    assert read.error_type == "WorkspaceError", read.output
    assert found.success and not any("staging" in path for path in found.output), found.output
    assert "must be a folder, not a link" in written.error  # and A's commit is refused
