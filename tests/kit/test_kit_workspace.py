"""Workspace confinement: every way out of the workspace is refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lackpy_kernel.kit import FileToolsProvider, Workspace, WorkspaceError, WorkspacePathTypeError


@pytest.fixture
def layout(tmp_path: Path) -> dict[str, Path]:
    """ws/ (the workspace), ws-evil/ (a prefix sibling) and outside/, each with files."""
    base = tmp_path / "x"
    ws = base / "ws"
    evil = base / "ws-evil"
    outside = tmp_path / "outside"
    for folder in (ws / "sub", ws / ".lackpy", evil, outside / "deeper"):
        folder.mkdir(parents=True)
    (ws / "inside.txt").write_text("inside\n")
    (ws / "sub" / "mod.py").write_text("def f():\n    pass\n")
    (ws / ".lackpy" / "config.toml").write_text("[kit]\ndefault = 'debug'\n")
    (evil / "secret.txt").write_text("evil secret\n")
    (outside / "secret.txt").write_text("outside secret\n")
    (outside / "deeper" / "secret.py").write_text("def leaked():\n    pass\n")
    return {"ws": ws, "evil": evil, "outside": outside}


@pytest.fixture
def tools(layout: dict[str, Path]) -> FileToolsProvider:
    return FileToolsProvider(Workspace(layout["ws"]))


def _assert_refused(call, *args, **kwargs) -> WorkspaceError:
    with pytest.raises(WorkspaceError) as caught:
        call(*args, **kwargs)
    return caught.value


# --- reading -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "../ws-evil/secret.txt",
        "../../outside/secret.txt",
        "sub/../../ws-evil/secret.txt",
        "sub/../../../outside/secret.txt",
        "./../ws-evil/secret.txt",
        "/etc/passwd",
        "//etc/passwd",
        "../" * 40 + "etc/passwd",
    ],
)
def test_read_dotdot_and_absolute_escapes_are_refused(tools, path):
    error = _assert_refused(tools.read_file, path)
    assert "outside the workspace" in str(error)
    assert str(tools.workspace.root) in str(error)


def test_absolute_path_outside_is_refused(tools, layout):
    _assert_refused(tools.read_file, str(layout["outside"] / "secret.txt"))


def test_prefix_sibling_directory_is_not_inside(tools, layout):
    # "/x/ws-evil" starts with the string "/x/ws" but is not inside it.
    _assert_refused(tools.read_file, str(layout["evil"] / "secret.txt"))
    assert not tools.workspace.contains(str(layout["evil"] / "secret.txt"))


def test_absolute_path_inside_is_allowed(tools, layout):
    assert tools.read_file(str(layout["ws"] / "inside.txt")) == "inside\n"


def test_symlink_file_to_outside_is_refused(tools, layout):
    os.symlink(layout["outside"] / "secret.txt", layout["ws"] / "link.txt")
    _assert_refused(tools.read_file, "link.txt")


def test_symlink_dir_to_outside_is_refused(tools, layout):
    os.symlink(layout["outside"], layout["ws"] / "out")
    _assert_refused(tools.read_file, "out/secret.txt")
    _assert_refused(tools.read_file, "out/deeper/secret.py")


def test_symlink_chain_inside_leading_outside_is_refused(tools, layout):
    ws = layout["ws"]
    os.symlink(layout["outside"] / "secret.txt", ws / "sub" / "hop2")
    os.symlink(ws / "sub" / "hop2", ws / "hop1")
    _assert_refused(tools.read_file, "hop1")


def test_relative_symlink_climbing_out_is_refused(tools, layout):
    os.symlink("../../outside/secret.txt", layout["ws"] / "sub" / "rel")
    _assert_refused(tools.read_file, "sub/rel")


def test_dangling_symlink_to_outside_is_refused(tools, layout):
    os.symlink(layout["outside"] / "missing.txt", layout["ws"] / "dangling")
    _assert_refused(tools.read_file, "dangling")
    _assert_refused(tools.write_file, "dangling", "x")
    assert not (layout["outside"] / "missing.txt").exists()


def test_symlink_inside_to_inside_is_allowed(tools, layout):
    os.symlink(layout["ws"] / "inside.txt", layout["ws"] / "alias.txt")
    assert tools.read_file("alias.txt") == "inside\n"


def test_symlink_loop_gives_clear_error_for_read(tools, layout):
    ws = layout["ws"]
    os.symlink(ws / "b", ws / "a")
    os.symlink(ws / "a", ws / "b")
    error = _assert_refused(tools.read_file, "a")
    assert "symlink loop" in str(error)
    _assert_refused(tools.read_file, "a/deeper/file.txt")


def test_self_loop_gives_clear_error_for_write(tools, layout):
    os.symlink(layout["ws"] / "me", layout["ws"] / "me")
    assert "symlink loop" in str(_assert_refused(tools.write_file, "me", "x"))


@pytest.mark.parametrize("fd", [0, 1, 2, 3])
def test_int_file_descriptors_are_refused(tools, fd):
    with pytest.raises(WorkspacePathTypeError, match="file descriptor") as caught:
        tools.read_file(fd)
    assert isinstance(caught.value, TypeError)
    assert isinstance(caught.value, PermissionError)


@pytest.mark.parametrize(
    "path", [b"inside.txt", None, Path("inside.txt"), 3.0, ["inside.txt"], True]
)
def test_non_str_paths_are_refused(tools, path):
    with pytest.raises(WorkspacePathTypeError, match="must be a str"):
        tools.read_file(path)


@pytest.mark.parametrize("path", ["inside.txt\0", "\0/etc/passwd", "sub/\0x"])
def test_nul_bytes_are_refused(tools, path):
    assert "NUL" in str(_assert_refused(tools.read_file, path))


def test_empty_path_is_refused(tools):
    assert "empty" in str(_assert_refused(tools.read_file, ""))


def test_tilde_is_not_expanded(tools, layout):
    home_like = layout["ws"] / "~"
    home_like.mkdir()
    (home_like / "notes.txt").write_text("tilde folder\n")
    assert tools.read_file("~/notes.txt") == "tilde folder\n"
    assert tools.workspace.resolve("~") == home_like


def test_workspace_root_given_through_a_symlink(layout, tmp_path):
    os.symlink(layout["ws"], tmp_path / "ws-link")
    tools = FileToolsProvider(tmp_path / "ws-link")
    assert tools.read_file("inside.txt") == "inside\n"
    _assert_refused(tools.read_file, "../ws-evil/secret.txt")


# --- writing ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        ".lackpy/config.toml",
        ".lackpy/kits/evil.kit",
        ".lackpy/templates/new.tmpl",
        "sub/../.lackpy/config.toml",
        "./.lackpy/config.toml",
        ".lackpy",
        ".LACKPY/config.toml",
    ],
)
def test_writes_into_lackpy_are_refused(tools, layout, path):
    error = _assert_refused(tools.write_file, path, "[kit]\ndefault = 'evil'\n")
    assert ".lackpy" in str(error)
    assert (layout["ws"] / ".lackpy" / "config.toml").read_text() == "[kit]\ndefault = 'debug'\n"


def test_write_into_lackpy_by_absolute_path_is_refused(tools, layout):
    _assert_refused(tools.write_file, str(layout["ws"] / ".lackpy" / "config.toml"), "x")


def test_write_via_symlink_dir_pointing_to_lackpy_is_refused(tools, layout):
    os.symlink(layout["ws"] / ".lackpy", layout["ws"] / "cfg")
    _assert_refused(tools.write_file, "cfg/config.toml", "x")
    _assert_refused(tools.edit_file, "cfg/config.toml", "debug", "evil")


def test_write_via_symlink_file_pointing_into_lackpy_is_refused(tools, layout):
    os.symlink(layout["ws"] / ".lackpy" / "config.toml", layout["ws"] / "settings.toml")
    _assert_refused(tools.write_file, "settings.toml", "x")


def test_lackpy_itself_a_symlink_to_another_inside_folder_is_protected(layout):
    ws = layout["ws"]
    (ws / ".lackpy" / "config.toml").unlink()
    (ws / ".lackpy").rmdir()
    (ws / "real-config").mkdir()
    os.symlink(ws / "real-config", ws / ".lackpy")
    tools = FileToolsProvider(ws)
    _assert_refused(tools.write_file, "real-config/config.toml", "x")


def test_reading_lackpy_is_allowed(tools):
    assert "default" in tools.read_file(".lackpy/config.toml")


def test_write_via_symlink_file_pointing_outside_is_refused(tools, layout):
    os.symlink(layout["outside"] / "secret.txt", layout["ws"] / "out.txt")
    _assert_refused(tools.write_file, "out.txt", "pwned")
    assert (layout["outside"] / "secret.txt").read_text() == "outside secret\n"


def test_edit_via_symlink_file_pointing_outside_is_refused(tools, layout):
    os.symlink(layout["outside"] / "secret.txt", layout["ws"] / "out.txt")
    _assert_refused(tools.edit_file, "out.txt", "outside", "pwned")
    assert (layout["outside"] / "secret.txt").read_text() == "outside secret\n"


@pytest.mark.parametrize(
    "path", ["../ws-evil/new.txt", "../outside.txt", "/tmp/lackpy-escape.txt", "sub/../../x.txt"]
)
def test_writes_outside_are_refused(tools, layout, path):
    _assert_refused(tools.write_file, path, "x")
    assert not (layout["evil"] / "new.txt").exists()


def test_write_into_symlinked_dir_outside_is_refused(tools, layout):
    os.symlink(layout["outside"], layout["ws"] / "out")
    _assert_refused(tools.write_file, "out/new.txt", "x")
    _assert_refused(tools.write_file, "out/newdir/new.txt", "x")
    assert sorted(p.name for p in layout["outside"].iterdir()) == ["deeper", "secret.txt"]


def test_edit_outside_is_refused(tools, layout):
    _assert_refused(tools.edit_file, "../ws-evil/secret.txt", "evil", "good")
    assert (layout["evil"] / "secret.txt").read_text() == "evil secret\n"


@pytest.mark.parametrize("fd", [0, 3])
def test_write_to_int_fd_is_refused(tools, fd):
    with pytest.raises(WorkspacePathTypeError):
        tools.write_file(fd, "x")


# --- find_files ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pattern", ["../*", "../**/*", "/etc/*", "/etc/passwd", "**/../../*", "sub/../../*", "\\etc"]
)
def test_find_files_refuses_patterns_that_leave(tools, pattern):
    _assert_refused(tools.find_files, pattern)


def test_find_files_does_not_descend_symlinked_dir_outside(tools, layout):
    os.symlink(layout["outside"], layout["ws"] / "out")
    found = tools.find_files("**/*")
    assert found == ["inside.txt", "sub/mod.py"]
    assert tools.find_files("out/*") == []
    assert tools.find_definitions("leaked") == []


def test_find_files_skips_symlinked_file_outside(tools, layout):
    os.symlink(layout["outside"] / "secret.txt", layout["ws"] / "secret.txt")
    assert "secret.txt" not in tools.find_files("*.txt")


def test_find_files_lists_symlinked_file_inside(tools, layout):
    os.symlink(layout["ws"] / "inside.txt", layout["ws"] / "alias.txt")
    assert tools.find_files("*.txt") == ["alias.txt", "inside.txt"]


def test_find_files_terminates_on_symlink_loops(tools, layout):
    ws = layout["ws"]
    os.symlink(ws / "b", ws / "a")
    os.symlink(ws / "a", ws / "b")
    os.symlink(ws, ws / "sub" / "root-again")
    os.symlink("..", ws / "sub" / "parent")
    assert tools.find_files("**/*") == ["inside.txt", "sub/mod.py"]


def test_find_files_never_returns_paths_outside(tools, layout):
    os.symlink(layout["outside"], layout["ws"] / "out")
    os.symlink(layout["evil"], layout["ws"] / "evil")
    for pattern in ["**/*", "**", "*", "**/*.txt", "**/secret*", "out/**", "evil/*"]:
        for found in tools.find_files(pattern):
            real = os.path.realpath(layout["ws"] / found)
            assert tools.workspace.contains(real), (pattern, found)


def test_find_files_keeps_lackpy_and_git_out(tools, layout):
    (layout["ws"] / ".git").mkdir()
    (layout["ws"] / ".git" / "config").write_text("x")
    assert tools.find_files(".lackpy/*") == []
    assert tools.find_files(".git/*") == []
    assert tools.find_files("**/*.toml") == []


# --- the Workspace object --------------------------------------------------------------------


def test_resolve_returns_real_paths_and_relative_forms(layout):
    workspace = Workspace(layout["ws"])
    assert workspace.resolve("sub/../inside.txt") == layout["ws"] / "inside.txt"
    assert workspace.resolve("new/file.txt", write=True) == layout["ws"] / "new" / "file.txt"
    assert workspace.relative(workspace.resolve("sub/mod.py")) == "sub/mod.py"
    assert workspace.relative(workspace.resolve(".")) == "."
    assert repr(workspace) == f"Workspace({str(layout['ws'])!r})"


def test_a_prefix_sibling_is_neither_contained_nor_made_relative_as_if_inside(layout):
    workspace = Workspace(layout["ws"])
    sibling = str(layout["evil"] / "secret.txt")
    assert not workspace.contains(sibling)
    assert not workspace.contains(str(layout["ws"]) + "x")
    assert workspace.contains(str(layout["ws"] / "sub" / "mod.py"))
    assert workspace.relative(sibling) == "../ws-evil/secret.txt"
    assert workspace.relative(layout["outside"]) == "../../outside"


def test_a_workspace_at_the_file_system_root_holds_every_absolute_path():
    workspace = Workspace("/")
    assert workspace.contains("/etc") and workspace.contains("/")
    assert workspace.relative("/etc/hostname") == "etc/hostname"
    assert workspace.relative("/") == "."


def test_warm_up_changes_nothing_and_fails_for_a_root_that_went(layout, tmp_path):
    before = sorted(p.relative_to(layout["ws"]) for p in layout["ws"].rglob("*"))
    Workspace(layout["ws"]).warm_up()
    assert sorted(p.relative_to(layout["ws"]) for p in layout["ws"].rglob("*")) == before
    gone = tmp_path / "gone"
    gone.mkdir()
    workspace = Workspace(gone)
    gone.rmdir()
    with pytest.raises(OSError):
        workspace.warm_up()


def test_error_message_says_path_reason_and_remedy(layout):
    workspace = Workspace(layout["ws"])
    message = str(_assert_refused(workspace.resolve, "../ws-evil/secret.txt"))
    assert "'../ws-evil/secret.txt'" in message
    assert f"paths must stay inside the workspace {layout['ws']}" in message


def test_long_symlink_chain_inside_resolves(layout):
    ws = layout["ws"]
    previous = ws / "inside.txt"
    for i in range(60):
        link = ws / f"chain{i}"
        os.symlink(previous, link)
        previous = link
    assert FileToolsProvider(ws).read_file("chain59") == "inside\n"


def test_edit_into_lackpy_is_refused(tools, layout):
    _assert_refused(tools.edit_file, ".lackpy/config.toml", "debug", "evil")
    _assert_refused(tools.edit_file, "sub/../.lackpy/config.toml", "debug", "evil")
    assert "debug" in (layout["ws"] / ".lackpy" / "config.toml").read_text()
