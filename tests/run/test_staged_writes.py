"""A program is atomic for files: its writes are staged while it runs (its own reads and
find_files see them) and reach the workspace only when it ends well, all at once; a
program that fails for any reason leaves the workspace exactly as it was."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import pytest

from lackpy_kernel.kit import ToolSpec, Workspace, builtin_toolbox
from lackpy_kernel.kit.journal import commit_stage
from lackpy_kernel.kit.staging import discard_stage
from lackpy_kernel.run import Sandbox, SandboxLimits, sandbox_supported
from tests.support.staging import staged

pytestmark = pytest.mark.skipif(not sandbox_supported(), reason="the worker needs Linux")

LIMITS = SandboxLimits(timeout=5, memory_mb=256, max_result_mb=8)
KIT = ["read_file", "write_file", "edit_file", "find_files"]
WRITE_TWO = "write_file('a.txt', 'new a')\nwrite_file('sub/b.txt', 'new b')\n"


def tree(root: Path) -> dict[str, str]:
    """Every file below ``root`` but lackpy's own folder (which the worker may be tidying
    meanwhile): path -> text."""
    found = {}
    for folder, folders, files in os.walk(root):
        folders[:] = [name for name in folders if name != ".lackpy"]
        for name in files:
            path = Path(folder, name)
            found[str(path.relative_to(root))] = path.read_text()
    return dict(sorted(found.items()))


def lackpy_leftovers(root: Path, sandbox: Sandbox) -> list[str]:
    """What a commit may have left in .lackpy/: a stage or a journal (looked for once the
    worker answered a next program: it tidies a commit away after its reply). The undo
    records, kept on purpose, are not leftovers."""
    assert sandbox.run("1", KIT).success
    return [str(path.relative_to(root)) for path in (root / ".lackpy").rglob("*")
            if path.is_file() and path.parent.name != "undo"] \
        if (root / ".lackpy").exists() else []


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "a.txt").write_text("old a")
    return tmp_path


@pytest.fixture
def sandbox(workspace):
    with Sandbox(workspace, LIMITS, approve_writes=False) as box:
        yield box


def test_a_program_that_writes_two_files_then_fails_leaves_neither(sandbox, workspace):
    before = tree(workspace)
    result = sandbox.run(WRITE_TWO + "read_file('missing.txt')", KIT)
    assert result.error_type == "FileNotFoundError"
    assert tree(workspace) == before
    assert result.trace.files_modified == ["a.txt", "sub/b.txt"]
    assert any("nothing was written" in note and "a.txt, sub/b.txt" in note
               for note in result.notes)
    assert lackpy_leftovers(workspace, sandbox) == []


def test_a_program_that_succeeds_commits_both(sandbox, workspace):
    result = sandbox.run(WRITE_TWO + "'done'", KIT)
    assert result.success, result.error
    assert tree(workspace) == {"a.txt": "new a", "sub/b.txt": "new b"}
    assert result.trace.files_modified == ["a.txt", "sub/b.txt"]
    assert lackpy_leftovers(workspace, sandbox) == []
    assert len(os.listdir(workspace / ".lackpy" / "undo")) == 1  # its record, for %undo


def test_a_program_reads_and_finds_what_it_wrote_before_it_ends(sandbox, workspace):
    program = (WRITE_TWO + "edit_file('sub/b.txt', 'new', 'edited')\n"
               "[read_file('a.txt'), read_file('sub/b.txt'), find_files('**/*.txt')]")
    result = sandbox.run(program + "\nread_file('missing.txt')", KIT)
    assert result.error_type == "FileNotFoundError"
    assert tree(workspace) == {"a.txt": "old a"}
    result = sandbox.run(program, KIT)
    assert result.output == ["new a", "edited b", ["a.txt", "sub/b.txt"]]
    assert tree(workspace) == {"a.txt": "new a", "sub/b.txt": "edited b"}


def test_a_program_stopped_by_its_time_limit_after_writing_leaves_nothing(sandbox, workspace):
    before = tree(workspace)
    result = sandbox.run(WRITE_TWO + "sum(range(1000000000000))", KIT)
    assert result.error_type == "TimeoutError"
    assert tree(workspace) == before
    assert result.trace.files_modified == ["a.txt", "sub/b.txt"]
    assert lackpy_leftovers(workspace, sandbox) == []
    assert sandbox.run(WRITE_TWO, KIT).success  # the next program writes as ever
    assert tree(workspace) == {"a.txt": "new a", "sub/b.txt": "new b"}


def test_a_program_interrupted_after_writing_leaves_nothing(sandbox, workspace):
    before = tree(workspace)
    sandbox.run("1", KIT)  # the worker is up: the interrupt comes while the program runs
    timer = threading.Timer(1.0, sandbox.interrupt)
    timer.start()
    result = sandbox.run(WRITE_TWO + "sum(range(1000000000000))", KIT)
    timer.join()
    assert result.error_type in ("KeyboardInterrupt", "TimeoutError")
    assert tree(workspace) == before


def test_a_failed_program_keeps_neither_its_variables_nor_its_files(sandbox, workspace):
    assert sandbox.run("kept = 1", KIT).success
    result = sandbox.run("kept = 2\nwrite_file('a.txt', 'x')\nread_file('missing.txt')", KIT)
    assert not result.success
    assert sandbox.run("kept", KIT).output == 1
    assert tree(workspace) == {"a.txt": "old a"}


def test_a_link_planted_during_the_run_is_refused_at_the_commit(workspace, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    (workspace / "sub").mkdir()

    def plant() -> str:
        """Swap the folder the program wrote into for a link that leads out."""
        (workspace / "sub").rmdir()
        os.symlink(outside, workspace / "sub")
        return "planted"

    toolbox = builtin_toolbox(workspace)
    toolbox.register_tool(ToolSpec("plant", "custom"), plant)
    with Sandbox(workspace, LIMITS, toolbox=toolbox, approve_writes=False) as box:
        result = box.run("write_file('a.txt', 'new a')\nwrite_file('sub/x.txt', 'evil')\n"
                         "plant()", [*KIT, "plant"])
    assert not result.success
    assert "outside the workspace" in result.error and "not written" in result.error
    assert list(outside.iterdir()) == []
    assert (workspace / "a.txt").read_text() == "old a"  # all or none


def test_the_config_folder_stays_out_of_reach(sandbox, workspace):
    (workspace / ".lackpy").mkdir()
    result = sandbox.run("write_file('a.txt', 'x')\nwrite_file('.lackpy/config.toml', 'x')",
                         KIT)
    assert result.error_type == "WorkspaceError"
    assert not (workspace / ".lackpy" / "config.toml").exists()
    assert (workspace / "a.txt").read_text() == "old a"


def test_a_one_file_commit_is_in_place_at_once_and_made_durable_after(workspace, monkeypatch):
    # the worker replies between the commit and finish(): the file must be whole by then,
    # and finish() must still wait for the disk (os.fsync spied on, not replaced)
    synced: list[int] = []
    fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.fstat(fd).st_ino), fsync(fd)))
    stage = staged(workspace, {"a.txt": "new a"})
    landed = commit_stage(Workspace(workspace), stage.folder, ["a.txt"])
    assert (workspace / "a.txt").read_text() == "new a"
    assert synced == []  # no wait for the disk before the reply
    landed.finish()
    assert synced == [(workspace / "a.txt").stat().st_ino]
    discard_stage(stage.folder)


def test_a_worker_killed_just_after_a_write_reply_leaves_the_file_whole(workspace):
    sandbox = Sandbox(workspace, LIMITS, approve_writes=False)
    try:
        text = "new a " * 50_000
        assert sandbox.run(f"write_file('a.txt', {text!r})", KIT).success
        assert sandbox.worker_pid is not None
        os.kill(sandbox.worker_pid, signal.SIGKILL)  # before or while it syncs the file
    finally:
        sandbox.close()
    assert tree(workspace) == {"a.txt": text}
