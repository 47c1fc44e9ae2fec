"""Kits: resolve_kit in all its forms, .kit files, the shipped debug kit."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lackpy_kernel.errors import KitError, UnknownKitError
from lackpy_kernel.kit import (
    ToolSpec,
    available_kits,
    builtin_toolbox,
    parse_kit_file,
    resolve_kit,
    workspace_kits_dir,
    write_kit_file,
)
from lackpy_kernel.kit.registry import SHIPPED_KITS_DIR, find_kit_file
from lackpy_kernel.lang import Grade

READ_ONLY = ["read_file", "find_files", "find_definitions", "find_callers"]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".lackpy" / "kits").mkdir(parents=True)
    (root / "hello.txt").write_text("hello\n")
    return root


@pytest.fixture
def kits_dir(ws: Path) -> Path:
    return ws / ".lackpy" / "kits"


@pytest.fixture
def toolbox(ws: Path):
    return builtin_toolbox(ws)


# --- the forms of a kit ----------------------------------------------------------------------


def test_debug_kit_is_shipped_and_read_only(toolbox, kits_dir):
    kit = resolve_kit("debug", toolbox, kits_dir=kits_dir)
    assert list(kit.tools) == READ_ONLY
    assert list(kit.callables) == READ_ONLY
    assert kit.grade == Grade(1, 1)
    assert kit.description.splitlines()[0].startswith("read_file(path: str) -> str: ")
    assert len(kit.description.splitlines()) == 4
    assert kit.callables["read_file"]("hello.txt") == "hello\n"
    assert kit.docs == []


def test_debug_kit_file_content():
    kit_file = parse_kit_file(SHIPPED_KITS_DIR / "debug.kit")
    assert kit_file.name == "debug"
    assert kit_file.tools == READ_ONLY
    assert "Read-only" in kit_file.description


def test_kits_are_found_in_the_kits_dir_never_in_the_current_directory(toolbox, ws, kits_dir,
                                                                        monkeypatch):
    write_kit_file(kits_dir / "mine.kit", "mine", ["read_file"])
    monkeypatch.chdir(ws)
    assert list(resolve_kit("mine", toolbox, workspace_kits_dir(ws)).tools) == ["read_file"]
    with pytest.raises(UnknownKitError, match="no kit named 'mine'"):
        resolve_kit("mine", toolbox)  # no kits_dir: the shipped kits only
    assert "mine" not in available_kits()
    assert list(resolve_kit("debug", toolbox).tools) == READ_ONLY


def test_list_kit(toolbox):
    kit = resolve_kit(["read_file", "write_file"], toolbox)
    assert list(kit.tools) == ["read_file", "write_file"]
    assert kit.grade == Grade(3, 3)
    assert resolve_kit(("find_files",), toolbox).grade == Grade(1, 1)


def test_empty_list_kit(toolbox):
    kit = resolve_kit([], toolbox)
    assert (kit.tools, kit.callables, kit.grade, kit.description) == ({}, {}, Grade(0, 0), "")


def test_dict_kit_with_aliases(toolbox):
    kit = resolve_kit({"read": "read_file", "glob": {"tool": "find_files"}}, toolbox)
    assert list(kit.tools) == ["read", "glob"]
    assert kit.tools["read"].name == "read_file"
    assert kit.callables["read"]("hello.txt") == "hello\n"
    assert kit.callables["glob"]("*.txt") == ["hello.txt"]
    assert kit.description.splitlines()[0].startswith("read(path: str) -> str")
    assert kit.grade == Grade(1, 1)


def test_extra_tools_are_merged_and_duplicates_ignored(toolbox, kits_dir):
    kit = resolve_kit("debug", toolbox, kits_dir, extra_tools=["write_file", "read_file"])
    assert list(kit.tools) == [*READ_ONLY, "write_file"]
    assert kit.grade == Grade(3, 3)
    aliased = resolve_kit({"read_file": "find_files"}, toolbox, extra_tools=["read_file"])
    assert aliased.tools["read_file"].name == "find_files"


def test_grade_uses_custom_tool_grades(toolbox):
    toolbox.register_tool(
        ToolSpec(name="pure", provider="inline", grade_w=0, effects_ceiling=0), fn=len
    )
    toolbox.register_tool(ToolSpec(name="scoped", provider="inline", grade_w=2), fn=len)
    assert resolve_kit(["pure"], toolbox).grade == Grade(0, 0)
    assert resolve_kit(["pure", "scoped"], toolbox).grade == Grade(2, 3)


# --- errors ----------------------------------------------------------------------------------


def test_none_kit_is_not_implemented(toolbox):
    with pytest.raises(NotImplementedError, match="kit name"):
        resolve_kit(None, toolbox)


@pytest.mark.parametrize("kit", [42, 3.5, {"read_file"}, b"debug", object()])
def test_unsupported_kit_types(toolbox, kit):
    with pytest.raises(KitError, match="a kit must be"):
        resolve_kit(kit, toolbox)


@pytest.mark.parametrize(
    ("kit", "problem"),
    [
        (["read_file", 3], "must hold tool names"),
        ([None], "must hold tool names"),
        ({"read": 3}, "kit entry 'read' must be a tool name"),
        ({"read": {"name": "read_file"}}, "kit entry 'read' must be a tool name"),
        ({1: "read_file"}, "kit aliases must be str"),
        ({"not valid": "read_file"}, "not a valid name for programs to call"),
        ({"class": "read_file"}, "not a valid name for programs to call"),
    ],
)
def test_bad_kit_entries(toolbox, kit, problem):
    with pytest.raises(KitError, match=problem):
        resolve_kit(kit, toolbox)


def test_extra_tools_must_be_a_list(toolbox):
    with pytest.raises(KitError, match="extra_tools"):
        resolve_kit(["read_file"], toolbox, extra_tools="write_file")


@pytest.mark.parametrize("kit", [["read_fil"], {"r": "read_fiel"}, {"r": {"tool": "reed_file"}}])
def test_unknown_tool_names_the_tool_and_close_matches(toolbox, kit):
    with pytest.raises(KeyError, match="did you mean 'read_file'"):
        resolve_kit(kit, toolbox)


def test_unknown_tool_in_kit_file(toolbox, kits_dir):
    (kits_dir / "bad.kit").write_text("find_filez\n")
    with pytest.raises(KeyError, match="unknown tool 'find_filez'.*'find_files'"):
        resolve_kit("bad", toolbox, kits_dir)


def test_resolve_kit_raises_file_not_found_error_for_a_missing_kit_file(toolbox, kits_dir):
    """The seed (002, resolve_kit): FileNotFoundError if a named kit file is not found."""
    with pytest.raises(FileNotFoundError, match="no kit named 'nosuch'"):
        resolve_kit("nosuch", toolbox, kits_dir)


def test_missing_kit_says_where_it_looked(toolbox, kits_dir):
    write_kit_file(kits_dir / "mine.kit", "mine", ["read_file"])
    with pytest.raises(UnknownKitError) as caught:
        resolve_kit("nosuch", toolbox, kits_dir)
    message = str(caught.value)
    assert str(kits_dir) in message and str(SHIPPED_KITS_DIR) in message
    assert "debug" in message and "mine" in message


@pytest.mark.parametrize(
    "name",
    [
        "../debug",
        "../../etc/passwd",
        "sub/debug",
        "/etc/passwd",
        "..",
        ".",
        "",
        "a\\b",
        "..\\debug",
        "debug\0",
        ".hidden",
        "kits/../debug",
        "~",
        "name with spaces",
    ],
)
def test_kit_name_traversal_is_refused(toolbox, kits_dir, name):
    with pytest.raises(KitError, match="invalid kit name"):
        resolve_kit(name, toolbox, kits_dir)


def test_kit_name_with_suffix_is_accepted(toolbox, kits_dir):
    assert list(resolve_kit("debug.kit", toolbox, kits_dir).tools) == READ_ONLY


def test_workspace_kits_take_precedence_over_shipped(toolbox, kits_dir):
    write_kit_file(kits_dir / "debug.kit", "debug", ["read_file"], "my own debug")
    assert list(resolve_kit("debug", toolbox, kits_dir).tools) == ["read_file"]
    kits = available_kits(kits_dir)
    assert kits["debug"] == kits_dir / "debug.kit"
    assert find_kit_file("debug", kits_dir) == kits_dir / "debug.kit"


@pytest.mark.parametrize("folder", ["not\0a folder", "a.kit-file-not-a-folder"])
def test_a_kits_folder_that_cannot_hold_kits_leaves_the_shipped_ones(toolbox, kits_dir, folder):
    (kits_dir / "a.kit-file-not-a-folder").write_text("read_file\n")
    assert list(resolve_kit("debug", toolbox, kits_dir / folder).tools) == READ_ONLY


def test_a_kit_file_changed_in_place_is_read_again(toolbox, kits_dir):
    """A kernel resolves its kit for every cell: an edit between two cells counts at once,
    even one that keeps the file's size and inode (an editor writing in place)."""
    path = kits_dir / "mine.kit"
    path.write_text("read_file\nfind_files\n")
    resolved = resolve_kit("mine", toolbox, kits_dir)
    assert list(resolved.tools) == ["read_file", "find_files"]
    resolved.docs.append("changed by a caller")
    before = path.stat()
    with open(path, "r+") as stream:  # the same inode, the same size
        stream.write("find_files\nread_file\n")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1000))
    assert (path.stat().st_ino, path.stat().st_size) == (before.st_ino, before.st_size)
    again = resolve_kit("mine", toolbox, kits_dir)
    assert list(again.tools) == ["find_files", "read_file"]
    assert again.docs == []
    path.write_text("write_file\n")  # rewritten: another size
    assert list(resolve_kit("mine", toolbox, kits_dir).tools) == ["write_file"]


def test_available_kits(tmp_path):
    kits_dir = tmp_path / "kits"
    assert available_kits(kits_dir) == {"debug": SHIPPED_KITS_DIR / "debug.kit"}
    write_kit_file(kits_dir / "alpha.kit", "alpha", [])
    assert list(available_kits(kits_dir)) == ["alpha", "debug"]


# --- the .kit format -------------------------------------------------------------------------


def test_parse_kit_file_format(tmp_path):
    path = tmp_path / "review.kit"
    path.write_text(
        "\n"
        "---\n"
        "name: code-review\n"
        "# a comment in the frontmatter\n"
        'description: "Read: and \\"find\\" things"\n'
        "docs: docs/review.md, docs/style.md\n"
        "---\n"
        "\n"
        "# tools\n"
        "read_file\n"
        "   find_files   # trailing comment\n"
        "read_file\n"
    )
    kit = parse_kit_file(path)
    assert kit.name == "code-review"
    assert kit.description == 'Read: and "find" things'
    assert kit.tools == ["read_file", "find_files"]
    assert kit.docs == ["docs/review.md", "docs/style.md"]
    assert kit.path == path


def test_kit_docs_reach_the_resolved_kit(toolbox, kits_dir):
    (kits_dir / "documented.kit").write_text("---\ndocs: kits/documented.md\n---\nread_file\n")
    assert resolve_kit("documented", toolbox, kits_dir).docs == ["kits/documented.md"]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("description: 'single quoted'", "single quoted"),
        ("description: bare words", "bare words"),
        ("description:", ""),
        ('description: ""', ""),
    ],
)
def test_frontmatter_values(tmp_path, text, value):
    path = tmp_path / "k.kit"
    path.write_text(f"---\n{text}\n---\n")
    assert parse_kit_file(path).description == value


def test_kit_file_without_frontmatter(tmp_path):
    path = tmp_path / "plain.kit"
    path.write_text("read_file\nfind_files\n")
    kit = parse_kit_file(path)
    assert (kit.name, kit.description, kit.tools) == ("plain", None, ["read_file", "find_files"])


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("---\nname: x\n", 1),  # frontmatter never closed
        ("---\nname: x\nread_file\n", 3),  # a tool inside unclosed frontmatter
        ("---\nname x\n---\n", 2),  # no colon
        ("---\nname: x\n: value\n---\n", 3),  # no key
        ('---\ndescription: "unclosed\n---\n', 2),
        ("---\nname: x\n---\nread_file\nfind files\n", 5),
        ("read_file\n../etc/passwd\n", 2),
        ("read_file\nimport\n", 2),
        ("\n\n---\nname: x\n---\n---\n", 6),
    ],
)
def test_malformed_kit_file_names_file_and_line(tmp_path, text, line):
    path = tmp_path / "broken.kit"
    path.write_text(text)
    with pytest.raises(KitError, match=rf"malformed kit file .*broken\.kit, line {line}:"):
        parse_kit_file(path)


def test_malformed_kit_file_through_resolve_kit(toolbox, kits_dir):
    (kits_dir / "broken.kit").write_text("---\nname broken\n---\n")
    with pytest.raises(KitError, match="broken.kit, line 2"):
        resolve_kit("broken", toolbox, kits_dir)


def test_write_kit_file_round_trips(tmp_path):
    path = tmp_path / "new" / "dir" / "mine.kit"
    description = 'Line one\nline "two": # not a comment'
    assert write_kit_file(path, "mine", ["read_file", "find_files"], description) == path
    kit = parse_kit_file(path)
    assert (kit.name, kit.tools, kit.description) == (
        "mine",
        ["read_file", "find_files"],
        description,
    )
    assert [p.name for p in path.parent.iterdir()] == ["mine.kit"]  # no temp files


def test_write_kit_file_without_description(tmp_path):
    path = write_kit_file(tmp_path / "k.kit", "k", [])
    assert path.read_text() == "---\nname: k\n---\n"
    assert parse_kit_file(path).description is None


def test_write_kit_file_overwrites_atomically(tmp_path):
    path = write_kit_file(tmp_path / "k.kit", "k", ["read_file"])
    write_kit_file(path, "k", ["find_files"])
    assert parse_kit_file(path).tools == ["find_files"]
    assert os.listdir(tmp_path) == ["k.kit"]


@pytest.mark.parametrize(
    ("name", "tools", "problem"),
    [("../x", [], "invalid kit name"), ("ok", ["bad name"], "not a valid tool name"),
     ("ok", "read_file", "not a single str")],
)
def test_write_kit_file_validates(tmp_path, name, tools, problem):
    with pytest.raises(KitError, match=problem):
        write_kit_file(tmp_path / "k.kit", name, tools)
    assert not (tmp_path / "k.kit").exists()


# --- kit strings as a command line writes them -------------------------------------------------


def test_a_comma_separated_string_is_a_list_of_tools(toolbox, kits_dir):
    assert list(resolve_kit("read_file, find_files", toolbox, kits_dir).tools) == [
        "read_file",
        "find_files",
    ]


def test_a_single_tool_name_is_a_one_tool_kit(toolbox, kits_dir):
    assert list(resolve_kit("read_file", toolbox, kits_dir).tools) == ["read_file"]


def test_a_kit_file_wins_over_a_tool_of_the_same_name(toolbox, kits_dir):
    write_kit_file(kits_dir / "read_file.kit", "read_file", ["read_file", "find_files"])
    assert list(resolve_kit("read_file", toolbox, kits_dir).tools) == ["read_file", "find_files"]


def test_a_name_that_is_neither_kit_nor_tool_is_still_an_error(toolbox, kits_dir):
    with pytest.raises(UnknownKitError, match="no kit named 'read_fil'"):
        resolve_kit("read_fil", toolbox, kits_dir)
