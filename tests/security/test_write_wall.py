"""The write wall: a program's process writes its own staging folder and nothing else.

With the Python checks bypassed (each attempt is a raw system call in a forked child
behind the walls exactly as the sandbox's worker builds them, its stage made as a
sandbox child makes it), the Linux kernel refuses every change to the workspace, to
``.lackpy/`` (the config, the journal, other children's stages), to a tool source's
folder and to anything outside: creating, changing, truncating, deleting, renaming and
linking, and the ways around them (links from the stage, ``/proc/self/fd``, folders
opened before). Issue 24.
"""

from __future__ import annotations

import ast
import errno
import os
import sys
from pathlib import Path

import pytest

from lackpy_kernel.kit.staging import make_stage, make_stages, stage_folder
from lackpy_kernel.run.child import wall_plan
from lackpy_kernel.run.protocol import RunRequest
from lackpy_kernel.run.walls import WRITE_WALL
from tests.support.walls import in_walled_child, needs

pytestmark = [pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux walls"),
              needs(WRITE_WALL)]
REFUSED = {errno.EACCES, errno.EPERM, errno.EXDEV}  # EXDEV: Landlock's refusal to reparent
CONFIG = "[sandbox]\ntimeout = 5\n"


@pytest.fixture
def arena(tmp_path):
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    for folder in (workspace / "tools", workspace / ".lackpy" / "journal", outside):
        folder.mkdir(parents=True)
    (workspace / "notes.txt").write_text("notes")
    (workspace / ".lackpy" / "config.toml").write_text(CONFIG)
    (workspace / "tools" / "mine.py").write_text("def f():\n    return 1\n")
    (outside / "kept.txt").write_text("kept")
    return workspace.resolve(), outside.resolve()


def snapshot(*folders: Path) -> dict[str, bytes | None]:
    """Every path below ``folders`` (the stages' folder left out), with each file's bytes."""
    seen: dict[str, bytes | None] = {}
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if "staging" not in path.parts:
                seen[str(path)] = path.read_bytes() if path.is_file() else None
    return seen


def refused(outcome: dict) -> bool:
    return outcome.get("errno") in REFUSED


def own_stage() -> Path:
    """The stage of this (walled) process, as the sandbox's child has it."""
    return Path(stage_folder(os.path.realpath("."), os.getpid()))


ATTEMPTS = {
    "create a file": lambda ws, out: open(ws / "new.txt", "x"),
    "change a file": lambda ws, out: open(ws / "notes.txt", "r+").write("x"),
    "truncate a file": lambda ws, out: os.truncate(ws / "notes.txt", 0),
    "append to a file": lambda ws, out: open(ws / "notes.txt", "a").write("x"),
    "delete a file": lambda ws, out: os.unlink(ws / "notes.txt"),
    "rename a file": lambda ws, out: os.rename(ws / "notes.txt", ws / "moved.txt"),
    "make a folder": lambda ws, out: os.mkdir(ws / "folder"),
    "remove a folder": lambda ws, out: os.rmdir(ws / "tools"),
    "make a symlink": lambda ws, out: os.symlink("notes.txt", ws / "link"),
    "make a fifo": lambda ws, out: os.mkfifo(ws / "fifo"),
    "rewrite the config": lambda ws, out: open(ws / ".lackpy" / "config.toml", "w").write("x"),
    "delete the config": lambda ws, out: os.unlink(ws / ".lackpy" / "config.toml"),
    "write a journal": lambda ws, out: open(ws / ".lackpy" / "journal" / "1-ab.journal", "w"),
    "rewrite a tool module": lambda ws, out: open(ws / "tools" / "mine.py", "w").write("x"),
    "add a helper beside a tool": lambda ws, out: open(ws / "tools" / "helper.py", "w"),
    "write a pycache": lambda ws, out: os.mkdir(ws / "tools" / "__pycache__"),
    "write outside": lambda ws, out: open(out / "kept.txt", "w"),
    "create outside": lambda ws, out: open(out / "new.txt", "x"),
    "write /tmp": lambda ws, out: open(f"/tmp/lackpy-wall-{os.getpid()}", "x"),
    "rename a file into the stage": lambda ws, out: os.rename(ws / "notes.txt",
                                                              own_stage() / "notes.txt"),
    "hard link a file into the stage": lambda ws, out: os.link(ws / "notes.txt",
                                                               own_stage() / "notes.txt"),
    "hard link the config into the stage": lambda ws, out: os.link(
        ws / ".lackpy" / "config.toml", own_stage() / "config.toml"),
    "symlink in the stage": lambda ws, out: os.symlink(ws / "notes.txt",
                                                       own_stage() / "notes.txt"),
    "rename the stage away": lambda ws, out: os.rename(own_stage(), own_stage().parent / "x"),
    "remove the stage": lambda ws, out: os.rmdir(own_stage()),
    "make a stage for another pid": lambda ws, out: os.mkdir(own_stage().parent / "99999999"),
    "reopen a file for writing through /proc": lambda ws, out: _reopen_for_writing(
        ws / "notes.txt"),
    "create in a folder opened after the walls": lambda ws, out: _create_at(ws / "tools"),
}


def _reopen_for_writing(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    os.open(f"/proc/self/fd/{fd}", os.O_WRONLY)


def _create_at(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    os.open("planted.py", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd)


@pytest.mark.parametrize("attempt", list(ATTEMPTS))
def test_the_os_refuses_every_change_but_the_childs_own_stage(arena, attempt, monkeypatch):
    workspace, outside = arena
    monkeypatch.chdir(workspace)  # the sandbox's child runs in the workspace
    before = snapshot(workspace, outside)
    outcome = in_walled_child(workspace, lambda: ATTEMPTS[attempt](workspace, outside))
    assert refused(outcome), outcome
    assert snapshot(workspace, outside) == before
    stages = workspace / ".lackpy" / "staging"
    assert [(stage.name, os.listdir(stage)) for stage in stages.iterdir()] == \
        [(str(outcome["pid"]), [])]  # its own stage, empty, and no other


def test_the_childs_own_stage_takes_files_folders_and_changes(arena, monkeypatch):
    workspace, _ = arena
    monkeypatch.chdir(workspace)

    def fill() -> list[str]:
        stage = own_stage()
        (stage / "sub").mkdir()
        (stage / "sub" / "a.txt").write_text("one")
        with open(stage / "sub" / "a.txt", "r+") as stream:
            stream.truncate(0)
        (stage / "b.txt").write_text("two")
        os.rename(stage / "b.txt", stage / "sub" / "b.txt")
        os.unlink(stage / "sub" / "a.txt")
        return sorted(os.listdir(stage / "sub"))

    outcome = in_walled_child(workspace, fill)
    assert "error" not in outcome, outcome
    assert ast.literal_eval(outcome["value"]) == ["b.txt"]


def test_a_child_cannot_touch_a_twins_stage(arena, monkeypatch):
    """A held twin, forked before a program ran, has its stage made already: the running
    child can neither plant a file there nor change or remove the twin's."""
    workspace, _ = arena
    monkeypatch.chdir(workspace)
    twin = Path(stage_folder(workspace, 4_000_000))  # above any pid the system hands out
    make_stage(str(twin))
    (twin / "staged.txt").write_text("the twin's")
    attempts = [lambda: open(twin / "planted.txt", "x"),
                lambda: open(twin / "staged.txt", "w"),
                lambda: os.unlink(twin / "staged.txt"),
                lambda: os.rename(twin / "staged.txt", own_stage() / "taken.txt"),
                lambda: os.link(twin / "staged.txt", own_stage() / "taken.txt")]
    for attempt in attempts:
        assert refused(in_walled_child(workspace, attempt))
    assert sorted(os.listdir(twin)) == ["staged.txt"]
    assert (twin / "staged.txt").read_text() == "the twin's"


def test_a_stage_left_by_a_dead_process_with_the_same_pid_starts_empty(arena):
    """A stage is made fresh before the walls go up: what a dead process with the same pid
    left (or anyone planted under that name) is gone before the new child writes."""
    workspace, _ = arena
    folder = stage_folder(workspace, 4_000_001)
    make_stage(folder)
    Path(folder, "planted.txt").write_text("left behind")
    make_stage(folder)
    assert os.listdir(folder) == []


def test_a_stages_folder_made_again_after_the_walls_were_built_is_still_writable(arena,
                                                                                 monkeypatch):
    """The shared ruleset names the folder of the stages that existed when it was built; a
    child whose workspace's ``.lackpy/staging`` was removed and made again since builds its
    own, so its stage works, and the rest stays refused."""
    workspace, _ = arena
    monkeypatch.chdir(workspace)
    plan = wall_plan(RunRequest(program="", workspace=str(workspace)))
    os.rmdir(workspace / ".lackpy" / "staging")
    assert make_stages(workspace) is not None

    def write_both() -> list[str]:
        (own_stage() / "ok.txt").write_text("staged")
        try:
            open(workspace / "notes.txt", "w")
        except PermissionError:
            return ["staged", "refused"]
        return ["staged", "written"]

    outcome = in_walled_child(workspace, write_both, plan)
    assert ast.literal_eval(outcome.get("value", "None")) == ["staged", "refused"], outcome
