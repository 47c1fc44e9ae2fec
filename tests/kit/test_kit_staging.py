"""Staged writes and their commit: what the file tools do inside a stage, the checks the
worker's commit makes on every path, and the journal that makes a commit all or nothing
across a kill."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from lackpy_kernel.errors import WorkspaceError
from lackpy_kernel.kit import FileToolsProvider, Workspace
from lackpy_kernel.kit.journal import commit_stage, recover
from lackpy_kernel.kit.staging import Stage, discard_stage, stage_folder, staging
from tests.support.staging import staged as stage_files


def staged(ws: Path, files: dict[str, str]) -> str:
    """The folder of a stage of this process holding ``files``."""
    return stage_files(ws, files).folder


def test_inside_a_stage_the_tools_write_the_stage_and_read_it_back(ws):
    stage = Stage(str(ws), stage_folder(ws, os.getpid()))
    tools = FileToolsProvider(ws)
    with staging(stage):
        tools.write_file("a.txt", "new a")
        tools.write_file("d/e/b.txt", "new b")
        tools.edit_file("d/e/b.txt", "new", "edited")
        assert tools.read_file("a.txt") == "new a"
        assert tools.find_files("**/*.txt") == ["a.txt", "d/e/b.txt"]
    assert (ws / "a.txt").read_text() == "old a" and not (ws / "d").exists()
    assert tools.read_file("a.txt") == "old a"  # outside the block: the workspace
    commit_stage(Workspace(ws), stage.folder, sorted(stage.files)).finish()
    discard_stage(stage.folder)
    assert os.listdir(ws / ".lackpy" / "journal") == []
    assert (ws / "a.txt").read_text() == "new a"
    assert (ws / "d/e/b.txt").read_text() == "edited b"
    assert not os.path.exists(stage.folder)


def test_a_staged_write_where_the_workspace_has_a_file_in_the_way_fails_at_once(ws):
    with pytest.raises(NotADirectoryError, match="a file is in the way"):
        staged(ws, {"a.txt/b.txt": "x"})


@pytest.mark.parametrize("path", [".lackpy/config.toml", "../outside.txt", ".LACKPY/kits/k.kit"])
def test_the_commit_refuses_paths_the_program_may_not_write(ws, path):
    folder = stage_folder(ws, os.getpid())
    target = Path(folder, path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("planted")
    with pytest.raises(WorkspaceError):
        commit_stage(Workspace(ws), folder, ["a.txt", path])
    discard_stage(folder)
    assert (ws / "a.txt").read_text() == "old a"
    assert not (ws / ".lackpy" / "config.toml").exists()
    assert not (ws.parent / "outside.txt").exists()


def test_the_commit_refuses_a_protected_file(ws):
    (ws / "tool.py").write_text("def tool(): ...")
    folder = staged(ws, {"tool.py": "import os"})
    with pytest.raises(WorkspaceError, match="tool source"):
        commit_stage(Workspace(ws, {str(ws / "tool.py")}), folder, ["tool.py"])
    assert (ws / "tool.py").read_text() == "def tool(): ..."


def test_the_commit_refuses_a_link_made_on_the_way_during_the_run(ws, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "sub").mkdir()
    folder = staged(ws, {"a.txt": "new a", "sub/x.txt": "evil"})
    (ws / "sub").rmdir()
    os.symlink(outside, ws / "sub")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        commit_stage(Workspace(ws), folder, ["a.txt", "sub/x.txt"])
    assert list(outside.iterdir()) == [] and (ws / "a.txt").read_text() == "old a"


def test_the_commit_refuses_a_link_inside_the_workspace_made_during_the_run(ws):
    (ws / "real").mkdir()
    (ws / "sub").mkdir()
    folder = staged(ws, {"sub/x.txt": "new"})
    (ws / "sub").rmdir()
    os.symlink(ws / "real", ws / "sub")
    with pytest.raises(WorkspaceError, match="made during the run"):
        commit_stage(Workspace(ws), folder, ["sub/x.txt"])
    assert list((ws / "real").iterdir()) == []


def test_the_commit_refuses_a_staged_copy_that_is_a_link_or_has_other_names(ws, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    folder = staged(ws, {"b.txt": "b"})
    os.symlink(secret, Path(folder, "c.txt"))
    with pytest.raises(WorkspaceError, match="cannot be read"):
        commit_stage(Workspace(ws), folder, ["b.txt", "c.txt"])
    os.unlink(Path(folder, "c.txt"))
    os.link(secret, Path(folder, "c.txt"))
    with pytest.raises(WorkspaceError, match="not a plain file"):
        commit_stage(Workspace(ws), folder, ["b.txt", "c.txt"])
    assert sorted(p.name for p in ws.iterdir()) == [".lackpy", "a.txt"]


def test_the_commit_refuses_a_target_with_hard_links(ws, tmp_path):
    os.link(ws / "a.txt", tmp_path / "other-name.txt")
    folder = staged(ws, {"b.txt": "b"})
    Path(folder, "a.txt").write_text("new")
    with pytest.raises(WorkspaceError, match="hard links"):
        commit_stage(Workspace(ws), folder, ["b.txt", "a.txt"])
    assert (tmp_path / "other-name.txt").read_text() == "old a"
    assert not (ws / "b.txt").exists()


# -- the journal: a kill at any point of a commit leaves all of it or none -------------------

KILLED_COMMIT = textwrap.dedent("""
    import os, sys
    from lackpy_kernel.kit import Workspace
    from lackpy_kernel.kit.journal import commit_stage
    ws, folder, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    print("go", flush=True)
    commit_stage(Workspace(ws), folder, [f"f{i}.txt" for i in range(count)]).finish()
    print("done", flush=True)
""")


def journals(ws: Path) -> list[Path]:
    folder = ws / ".lackpy" / "journal"
    return list(folder.iterdir()) if folder.exists() else []


@pytest.mark.parametrize("delay", [0.0, 0.002, 0.01, 0.05])
def test_a_commit_killed_at_any_point_is_finished_or_undone_by_recover(ws, delay):
    count = 200
    for index in range(count):
        (ws / f"f{index}.txt").write_text("old")
    folder = staged(ws, {f"f{index}.txt": f"new {index}" * 1000 for index in range(count)})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    process = subprocess.Popen([sys.executable, "-c", KILLED_COMMIT, str(ws), folder,
                                str(count)], stdout=subprocess.PIPE, env=env)
    assert process.stdout is not None and process.stdout.readline() == b"go\n"
    deadline = time.monotonic() + 30
    while not journals(ws) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.0005)
    time.sleep(delay)
    process.send_signal(signal.SIGKILL)
    process.wait()
    recover(ws)
    texts = {(ws / f"f{index}.txt").read_text() for index in range(count)}
    assert texts in ({"old"}, {f"new {index}" * 1000 for index in range(count)})
    assert journals(ws) == []
    discard_stage(folder)


def test_recover_drops_a_torn_journal_and_the_stages_of_dead_processes(ws):
    journal = ws / ".lackpy" / "journal"
    journal.mkdir(parents=True)
    (journal / "1-torn.journal").write_bytes(b"lackpy-journal 1\n12\n5 a.txt\0")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    stale = Path(stage_folder(ws, int(dead)), "deep", "x.txt")
    stale.parent.mkdir(parents=True)
    stale.write_text("x")
    assert recover(ws).written == []
    assert list(journal.iterdir()) == [] and not stale.parent.parent.exists()
    assert (ws / "a.txt").read_text() == "old a"


def test_recover_never_writes_an_applied_commit_again_over_a_later_change(ws):
    folder = staged(ws, {"a.txt": "new a", "b.txt": "new b"})
    landed = commit_stage(Workspace(ws), folder, ["a.txt", "b.txt"])
    assert landed.journal is not None
    for fd in (landed.journal[0], landed.journal[2]):  # as a kill before finish() leaves it
        os.close(fd)
    assert [p.suffix for p in journals(ws)] == [".applied"]
    (ws / "a.txt").write_text("edited since")
    assert recover(ws).written == []
    assert (ws / "a.txt").read_text() == "edited since" and journals(ws) == []
    discard_stage(folder)
