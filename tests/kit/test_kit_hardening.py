"""Hardening of the file tools: symlink races, deep trees, write budgets and long names."""

from __future__ import annotations

import ctypes
import os
import platform
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lackpy_kernel.kit import (
    FileToolsProvider,
    Workspace,
    WorkspaceError,
    code_search,
    effects,
    recording,
)

RACE_SECONDS = 2.0
RENAME_EXCHANGE = 2
AT_FDCWD = -100
# renameat2 by syscall number, for a libc without the renameat2 symbol.
_RENAMEAT2_SYSCALL = {"x86_64": 316, "aarch64": 276}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def tools(ws: Path) -> FileToolsProvider:
    return FileToolsProvider(ws)


@pytest.fixture
def deep_ws(ws: Path):
    """``ws``, removed afterwards with rm: shutil.rmtree (which pytest uses) recurses per folder."""
    yield ws
    subprocess.run(["rm", "-rf", "--", str(ws)], check=False)


def _mkdirs_deep(root: Path, name: str, depth: int) -> None:
    """``depth`` nested folders below ``root``, made through fds (paths may exceed PATH_MAX)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = child
    finally:
        os.close(fd)


# --- F1: symlink swaps between the check and the use -----------------------------------------

SWAPPER = textwrap.dedent(
    """
    import ctypes, sys, time
    a, b, seconds, number = sys.argv[1].encode(), sys.argv[2].encode(), float(sys.argv[3]), int(sys.argv[4])
    libc = ctypes.CDLL(None, use_errno=True)
    if number:
        swap = lambda: libc.syscall(number, -100, a, -100, b, 2)
    else:
        swap = lambda: libc.renameat2(-100, a, -100, b, 2)
    swaps, deadline = 0, time.monotonic() + seconds
    while time.monotonic() < deadline:
        for _ in range(100):
            swaps += swap() == 0
    print(swaps)
    """
)


def _renameat2_number() -> int | None:
    """0 to call libc's renameat2, a syscall number to go through syscall(); None: no way."""
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    if hasattr(libc, "renameat2"):
        return 0
    return _RENAMEAT2_SYSCALL.get(platform.machine())


def _exchange(number: int, a: Path, b: Path) -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    args = (AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE)
    result = libc.syscall(number, *args) if number else libc.renameat2(*args)
    return result == 0


@pytest.fixture
def race(tmp_path: Path, ws: Path):
    """ws/rdir (a real folder with a decoy) and ws/L (a link to outside/), swappable."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET")
    (ws / "rdir").mkdir()
    (ws / "rdir" / "secret.txt").write_text("decoy")
    os.symlink(outside, ws / "L")
    number = _renameat2_number()
    if number is None or not (_exchange(number, ws / "rdir", ws / "L")
                              and _exchange(number, ws / "rdir", ws / "L")):
        pytest.skip("renameat2(RENAME_EXCHANGE) is not available here")
    assert (ws / "rdir").is_dir() and not (ws / "rdir").is_symlink()
    return outside, number


def test_symlink_swap_race_never_leaks_or_writes_outside(tools, ws, race):
    outside, number = race
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(ws / "rdir"), str(ws / "L"), str(RACE_SECONDS), str(number)],
        stdout=subprocess.PIPE,
        text=True,
    )
    tries = leaks = reads = writes = 0
    try:
        while swapper.poll() is None:
            tries += 1
            try:
                text = tools.read_file("rdir/secret.txt")
            except (OSError, ValueError):
                pass
            else:
                reads += 1
                leaks += "SECRET" in text
            try:
                tools.write_file("rdir/pwned.txt", "pwned")
                writes += 1
            except (OSError, ValueError):
                pass
    finally:
        swaps = int(swapper.communicate(timeout=30)[0] or 0)
    left_outside = sorted(os.listdir(outside))
    print(f"race: {tries} tries, {swaps} swaps, {reads} reads, {writes} writes, "
          f"{leaks} leaks, outside holds {left_outside}")
    assert swaps > 1000 and tries > 100
    assert leaks == 0
    assert left_outside == ["secret.txt"]  # no pwned.txt, no temp files
    assert not [name for _, _, names in os.walk(ws) for name in names if name.startswith(".lackpy-tmp-")]


def test_a_link_swapped_in_after_the_check_is_refused(tools, ws, tmp_path, monkeypatch):
    # Deterministic form of the race: resolve() saw a real folder, the tool finds a link.
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("SECRET")
    os.symlink(outside, ws / "L")
    monkeypatch.setattr(Workspace, "resolve", lambda self, path, write=False: self.root / path)
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        tools.read_file("L/secret.txt")
    with pytest.raises(WorkspaceError):
        tools.write_file("L/pwned.txt", "x")
    with pytest.raises(WorkspaceError):
        tools.edit_file("L/secret.txt", "SECRET", "x")
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "SECRET"


def test_a_link_swapped_in_for_a_new_folder_is_refused(tools, ws, tmp_path, monkeypatch):
    # The parent of the file does not exist yet: the tool creates it, and must not follow
    # a link that appears under that name instead.
    outside = tmp_path / "outside"
    outside.mkdir()
    real_mkdir = os.mkdir

    def mkdir_then_swap(path, *args, **kwargs):
        real_mkdir(path, *args, **kwargs)
        if os.fspath(path) == "new" or str(path).endswith("/new"):
            dir_fd = kwargs.get("dir_fd")
            os.rmdir(path, dir_fd=dir_fd) if dir_fd is not None else os.rmdir(path)
            os.symlink(outside, ws / "new")

    monkeypatch.setattr(os, "mkdir", mkdir_then_swap)
    with pytest.raises(WorkspaceError):
        tools.write_file("new/pwned.txt", "x")
    monkeypatch.undo()
    assert os.listdir(outside) == []


def test_the_config_folder_is_refused_for_what_was_opened(tools, ws, monkeypatch):
    # Were the name check in resolve() skipped or raced, the opened folder is checked too.
    (ws / ".lackpy").mkdir()
    os.symlink(ws / ".lackpy", ws / "cfg")
    monkeypatch.setattr(Workspace, "resolve", lambda self, path, write=False: self.root / path)
    with pytest.raises(WorkspaceError, match=r"\.lackpy/ folder"):
        tools.write_file(".lackpy/config.toml", "x")
    with pytest.raises(WorkspaceError):
        tools.write_file("cfg/config.toml", "x")
    assert os.listdir(ws / ".lackpy") == []


def test_code_search_checks_what_it_opened(tools, ws, tmp_path, monkeypatch):
    # find_files never lists a file behind a folder link; were one swapped in after the
    # listing, the search must still not read it (find_callers returns source lines).
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "mod.py").write_text("def target():\n    target()  # SECRET\n")
    os.symlink(outside, ws / "L")
    monkeypatch.setattr(code_search, "match_files", lambda *args: ["L/mod.py"])
    assert tools.find_definitions("target") == []
    assert tools.find_callers("target") == []


def test_links_that_stay_inside_still_work(tools, ws):
    (ws / "real").mkdir()
    (ws / "real" / "f.txt").write_text("old")
    os.symlink(ws / "real", ws / "alias")
    assert tools.read_file("alias/f.txt") == "old"
    assert tools.write_file("alias/f.txt", "new") == "wrote 3 chars to real/f.txt"
    assert tools.write_file("alias/sub/g.txt", "g") == "wrote 1 chars to real/sub/g.txt"
    assert (ws / "real" / "f.txt").read_text() == "new"
    assert (ws / "real" / "sub" / "g.txt").read_text() == "g"
    assert (ws / "alias").is_symlink()


def test_reading_a_fifo_does_not_block(tools, ws):
    os.mkfifo(ws / "pipe")
    with pytest.raises(ValueError, match="not a regular file"):
        tools.read_file("pipe")


# --- F7: deep trees and deeply nested code ---------------------------------------------------


def test_deep_folders_do_not_break_the_search(tools, deep_ws):
    ws = deep_ws
    (ws / "top.py").write_text("def top():\n    pass\n")
    _mkdirs_deep(ws, "d", 2_000)
    deep = "/".join(["d"] * 1_500)
    (ws / deep / "leaf.py").write_text("def leaf():\n    top()\n")
    found = tools.find_files("**")
    assert "top.py" in found and f"{deep}/leaf.py" in found
    assert tools.find_files("**/leaf.py") == [f"{deep}/leaf.py"]
    assert [hit["file"] for hit in tools.find_definitions("top")] == ["top.py"]
    assert [hit["file"] for hit in tools.find_definitions("leaf")] == [f"{deep}/leaf.py"]
    assert [hit["caller"] for hit in tools.find_callers("top")] == ["leaf"]


def test_deeply_nested_code_does_not_break_find_callers(tools, ws):
    (ws / "deep.py").write_text("x = " + "not " * 600 + "target()\n")
    (ws / "calls.py").write_text("def f():\n    return target()\n")
    assert tools.find_callers("target") == [
        {"file": "calls.py", "line": 2, "caller": "f", "text": "return target()"},
        {"file": "deep.py", "line": 1, "caller": "<module>", "text": ("x = " + "not " * 600)[:200]},
    ]


def test_write_file_with_very_many_folders(tools, deep_ws):
    ws = deep_ws
    path = "/".join(["a"] * 1_900) + "/f.txt"
    assert tools.write_file(path, "deep") == f"wrote 4 chars to {path}"
    assert tools.read_file(path) == "deep"
    assert tools.edit_file(path, "deep", "deeper").startswith("edited")
    assert (ws / path).read_text() == "deeper"


# --- F10: a write budget per program ---------------------------------------------------------


def test_write_budget_limits_bytes_per_program(tools, ws, monkeypatch):
    monkeypatch.setattr(effects, "WRITE_BUDGET_BYTES", 10)
    with recording() as log:
        tools.write_file("a.txt", "123456")
        with pytest.raises(OSError, match="write budget exceeded.*per program"):
            tools.write_file("b.txt", "12345")
        with pytest.raises(OSError, match="write budget exceeded"):
            tools.edit_file("a.txt", "123456", "abcdef")
        tools.write_file("c.txt", "1234")  # exactly the rest of the budget
    assert not (ws / "b.txt").exists()
    assert (ws / "a.txt").read_text() == "123456"
    assert log.files_modified == ["a.txt", "c.txt"]
    assert log.bytes_written == 10
    with recording():  # the next program starts afresh
        tools.write_file("b.txt", "12345")


def test_write_budget_limits_files_per_program(tools, ws, monkeypatch):
    monkeypatch.setattr(effects, "WRITE_BUDGET_FILES", 2)
    with recording():
        tools.write_file("a.txt", "a")
        tools.write_file("b.txt", "b")
        tools.write_file("a.txt", "again")  # the same file again is fine
        tools.edit_file("b.txt", "b", "B")
        with pytest.raises(OSError, match="write budget exceeded.*2 files.*per program"):
            tools.write_file("c.txt", "c")
    assert sorted(os.listdir(ws)) == ["a.txt", "b.txt"]


def test_write_budget_counts_utf8_bytes(tools, monkeypatch):
    monkeypatch.setattr(effects, "WRITE_BUDGET_BYTES", 5)
    with recording():
        with pytest.raises(OSError, match="write budget exceeded"):
            tools.write_file("e.txt", "ééé")  # 6 bytes


def test_no_write_budget_without_recording(tools, monkeypatch):
    monkeypatch.setattr(effects, "WRITE_BUDGET_BYTES", 1)
    monkeypatch.setattr(effects, "WRITE_BUDGET_FILES", 1)
    tools.write_file("a.txt", "plenty")
    tools.write_file("b.txt", "plenty")


def test_by_default_a_program_may_write_256_mib_and_10_000_files(tools, ws):
    with recording() as log:
        log.bytes_written = 256 * 1024 * 1024 - 2  # as if it had written all but two bytes
        tools.write_file("a.txt", "ab")
        with pytest.raises(OSError, match="already wrote 268435456 bytes.*at most 256 MiB"):
            tools.write_file("b.txt", "c")
    with recording() as log:
        log.files_modified.extend(f"f{index}.txt" for index in range(9_999))
        tools.write_file("last.txt", "x")
        tools.write_file("last.txt", "again")  # the same file again is fine
        with pytest.raises(OSError, match="already created or modified 10000 files"):
            tools.write_file("one-more.txt", "x")
    assert sorted(os.listdir(ws)) == ["a.txt", "last.txt"]


# --- F12: long file names --------------------------------------------------------------------


@pytest.mark.parametrize("length", [245, 255])
def test_long_file_names_can_be_written(tools, ws, length):
    name = "y" * length
    assert tools.write_file(name, "a") == f"wrote 1 chars to {name}"
    tools.edit_file(name, "a", "b")
    assert sorted(os.listdir(ws)) == [name]
    assert (ws / name).read_text() == "b"


def test_a_name_too_long_names_the_users_file(tools, ws):
    with pytest.raises(OSError) as caught:
        tools.write_file("y" * 256, "a")
    assert os.path.basename(caught.value.filename) == "y" * 256  # not a temporary file's name
    assert os.listdir(ws) == []
