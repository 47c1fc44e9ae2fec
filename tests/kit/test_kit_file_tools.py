"""The built-in file tools: behaviour, atomic writes, code search and recorded effects."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from lackpy_kernel.kit import (
    FileToolsProvider,
    TooManyMatchesError,
    Workspace,
    builtin_toolbox,
    builtin_tools,
    recording,
)
from lackpy_kernel.lang import validate

PLAIN_TYPES = (str, int, float, bool, type(None))


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def tools(ws: Path) -> FileToolsProvider:
    return FileToolsProvider(ws)


def _write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _temp_files(root: Path) -> list[str]:
    return [p.name for p in root.rglob("*") if p.name.startswith(".lackpy-tmp-") or p.name.endswith(".tmp")]


# --- read_file -------------------------------------------------------------------------------


def test_read_file_returns_text_unchanged(tools, ws):
    (ws / "crlf.txt").write_bytes("é line1\r\nline2\n".encode())
    assert tools.read_file("crlf.txt") == "é line1\r\nline2\n"


def test_read_file_missing_file(tools):
    with pytest.raises(FileNotFoundError, match="find_files"):
        tools.read_file("nope.txt")


def test_read_file_refuses_directories(tools, ws):
    (ws / "folder").mkdir()
    with pytest.raises(IsADirectoryError, match="folder"):
        tools.read_file("folder")
    with pytest.raises(IsADirectoryError):
        tools.read_file(".")


def test_read_file_refuses_non_utf8(tools, ws):
    (ws / "latin1.txt").write_bytes(b"caf\xe9")
    with pytest.raises(ValueError, match=r"not UTF-8.*0xe9.*offset 3"):
        tools.read_file("latin1.txt")


def test_read_file_refuses_special_files(tools, ws):
    os.mkfifo(ws / "pipe")
    with pytest.raises(ValueError, match="not a regular file"):
        tools.read_file("pipe")


def test_read_file_size_limit(tools, ws, monkeypatch):
    monkeypatch.setattr(builtin_tools, "MAX_READ_BYTES", 10)
    _write(ws, "small.txt", "0123456789")
    _write(ws, "big.txt", "0123456789X")
    assert tools.read_file("small.txt") == "0123456789"
    with pytest.raises(ValueError, match="larger than 10 bytes"):
        tools.read_file("big.txt")


def _understating_fstat(monkeypatch, size: int) -> None:
    """os.fstat that says a file holds ``size`` bytes: one that grew after it was looked at."""
    real_fstat = os.fstat

    def fstat(fd: int) -> os.stat_result:
        info = real_fstat(fd)
        return os.stat_result((*info[:6], size, *info[7:10]))

    monkeypatch.setattr(os, "fstat", fstat)


def test_read_file_reads_all_of_a_file_that_grew_after_its_size_was_read(tools, ws, monkeypatch):
    _write(ws, "grew.txt", "0123456789" * 100)
    _understating_fstat(monkeypatch, 3)
    assert tools.read_file("grew.txt") == "0123456789" * 100


def test_read_file_size_limit_holds_for_a_file_that_grew(tools, ws, monkeypatch):
    monkeypatch.setattr(builtin_tools, "MAX_READ_BYTES", 10)
    _write(ws, "grew.txt", "0123456789X")
    _understating_fstat(monkeypatch, 2)
    with pytest.raises(ValueError, match="larger than 10 bytes"):
        tools.read_file("grew.txt")


# --- write_file ------------------------------------------------------------------------------


def test_write_file_creates_parents_and_confirms(tools, ws):
    assert tools.write_file("a/b/c.txt", "hello\n") == "wrote 6 chars to a/b/c.txt"
    assert (ws / "a" / "b" / "c.txt").read_text() == "hello\n"


def test_write_file_replaces_and_keeps_line_endings(tools, ws):
    _write(ws, "f.txt", "old")
    tools.write_file("f.txt", "new\r\nline\n")
    assert (ws / "f.txt").read_bytes() == b"new\r\nline\n"


def test_write_file_keeps_permissions(tools, ws):
    path = _write(ws, "script.sh", "echo hi\n")
    path.chmod(0o750)
    tools.write_file("script.sh", "echo bye\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o750


def test_write_file_leaves_no_temp_files(tools, ws):
    for i in range(5):
        tools.write_file("f.txt", f"version {i}")
        tools.edit_file("f.txt", f"version {i}", f"edited {i}")
    assert _temp_files(ws) == []
    assert sorted(os.listdir(ws)) == ["f.txt"]


def test_failed_write_keeps_old_content_and_no_temp(tools, ws, monkeypatch):
    _write(ws, "f.txt", "old content")

    def broken_replace(src, dst, **dir_fds):
        raise OSError("disk on fire")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk on fire"):
        tools.write_file("f.txt", "new content")
    monkeypatch.undo()
    assert (ws / "f.txt").read_text() == "old content"
    assert _temp_files(ws) == []


def test_unencodable_content_keeps_old_content(tools, ws):
    _write(ws, "f.txt", "old")
    with pytest.raises(ValueError, match="UTF-8"):
        tools.write_file("f.txt", "bad \udc80 surrogate")
    assert (ws / "f.txt").read_text() == "old"
    assert _temp_files(ws) == []


@pytest.mark.parametrize("content", [b"bytes", 42, None, ["a"]])
def test_write_file_content_must_be_str(tools, ws, content):
    with pytest.raises(TypeError, match="content must be a str"):
        tools.write_file("f.txt", content)
    assert not (ws / "f.txt").exists()


def test_write_file_refuses_a_folder(tools, ws):
    (ws / "folder").mkdir()
    with pytest.raises(IsADirectoryError):
        tools.write_file("folder", "x")


def test_write_file_with_a_file_in_the_way(tools, ws):
    _write(ws, "a", "a file")
    with pytest.raises(NotADirectoryError, match="in the way"):
        tools.write_file("a/b.txt", "x")


def test_write_file_size_limit(tools, ws, monkeypatch):
    monkeypatch.setattr(builtin_tools, "MAX_WRITE_BYTES", 4)
    with pytest.raises(ValueError, match="16 MiB"):
        tools.write_file("f.txt", "12345")
    assert not (ws / "f.txt").exists()


def test_write_through_symlink_inside_writes_the_target(tools, ws):
    _write(ws, "target.txt", "old")
    os.symlink(ws / "target.txt", ws / "link.txt")
    assert tools.write_file("link.txt", "new") == "wrote 3 chars to target.txt"
    assert (ws / "target.txt").read_text() == "new"
    assert (ws / "link.txt").is_symlink()


# --- edit_file -------------------------------------------------------------------------------


def test_edit_file_replaces_exactly_one_occurrence(tools, ws):
    _write(ws, "f.py", "x = 1\ny = 2\n")
    assert tools.edit_file("f.py", "y = 2", "y = 3") == "edited f.py: replaced 5 chars with 5 chars"
    assert (ws / "f.py").read_text() == "x = 1\ny = 3\n"


def test_edit_file_not_found_says_zero(tools, ws):
    _write(ws, "f.py", "x = 1\n")
    with pytest.raises(ValueError, match="does not occur"):
        tools.edit_file("f.py", "z = 1", "z = 2")
    assert (ws / "f.py").read_text() == "x = 1\n"


def test_edit_file_ambiguous_says_how_many(tools, ws):
    _write(ws, "f.py", "x = 1\nx = 1\nx = 1\n")
    with pytest.raises(ValueError, match="occurs 3 times"):
        tools.edit_file("f.py", "x = 1", "x = 2")
    assert (ws / "f.py").read_text() == "x = 1\nx = 1\nx = 1\n"


def test_edit_file_argument_checks(tools, ws):
    _write(ws, "f.py", "x\n")
    with pytest.raises(ValueError, match="old is empty"):
        tools.edit_file("f.py", "", "y")
    with pytest.raises(TypeError, match="new must be a str"):
        tools.edit_file("f.py", "x", 1)
    with pytest.raises(FileNotFoundError):
        tools.edit_file("missing.py", "x", "y")


def test_edit_file_keeps_crlf(tools, ws):
    (ws / "w.txt").write_bytes(b"a\r\nb\r\n")
    tools.edit_file("w.txt", "b", "c")
    assert (ws / "w.txt").read_bytes() == b"a\r\nc\r\n"


# --- find_files ------------------------------------------------------------------------------


@pytest.fixture
def tree(ws: Path) -> Path:
    for relative in [
        "README.md",
        "setup.py",
        "src/app/__init__.py",
        "src/app/core.py",
        "src/app/data.json",
        "src/app/sub/deep.py",
        "docs/guide.md",
        "docs/api/ref.md",
        ".hidden.py",
        ".venv/lib/site.py",
        ".github/workflows/ci.yml",
        "src/.cache/junk.py",
    ]:
        _write(ws, relative, "x = 1\n")
    (ws / "empty-folder").mkdir()
    return ws


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("*.py", ["setup.py"]),
        ("*.md", ["README.md"]),
        ("src/app/*.py", ["src/app/__init__.py", "src/app/core.py"]),
        (
            "**/*.py",
            ["setup.py", "src/app/__init__.py", "src/app/core.py", "src/app/sub/deep.py"],
        ),
        ("src/**/*.py", ["src/app/__init__.py", "src/app/core.py", "src/app/sub/deep.py"]),
        ("docs/**", ["docs/api/ref.md", "docs/guide.md"]),
        ("docs/**/*.md", ["docs/api/ref.md", "docs/guide.md"]),
        ("**/ref.md", ["docs/api/ref.md"]),
        ("src/**/sub/*.py", ["src/app/sub/deep.py"]),
        ("**/**/deep.py", ["src/app/sub/deep.py"]),
        ("src/app/c?re.py", ["src/app/core.py"]),
        ("src/app/[cd]*", ["src/app/core.py", "src/app/data.json"]),
        (".*.py", [".hidden.py"]),
        (".github/**", [".github/workflows/ci.yml"]),
        (".venv/**/*.py", [".venv/lib/site.py"]),
        ("./setup.py", ["setup.py"]),
        ("src//app/core.py", ["src/app/core.py"]),
        ("src", []),
        ("empty-folder/*", []),
        ("nothing/**", []),
        ("*.PY", []),
    ],
)
def test_find_files_patterns(tools, tree, pattern, expected):
    assert tools.find_files(pattern) == expected


@pytest.mark.parametrize("pattern", ["", "src/**x/*.py", ".", "./"])
def test_find_files_invalid_patterns(tools, pattern):
    with pytest.raises(ValueError):
        tools.find_files(pattern)


def test_find_files_pattern_must_be_str(tools):
    with pytest.raises(TypeError):
        tools.find_files(b"*.py")


def test_find_files_caps_results(tools, ws, monkeypatch):
    monkeypatch.setattr(builtin_tools, "MAX_FIND_RESULTS", 3)
    for i in range(4):
        _write(ws, f"f{i}.txt", "")
    with pytest.raises(TooManyMatchesError, match="more than 3 files.*narrower"):
        tools.find_files("*.txt")
    monkeypatch.setattr(builtin_tools, "MAX_FIND_RESULTS", 4)
    assert len(tools.find_files("*.txt")) == 4


def test_find_files_many_double_stars_stay_fast(tools, ws):
    deep = ws
    for i in range(12):
        deep = deep / f"d{i}"
    _write(deep, "leaf.py", "")
    found = tools.find_files("**/**/d3/**/**/**/d9/**/**/leaf.py")
    assert found == ["/".join(f"d{i}" for i in range(12)) + "/leaf.py"]


# --- find_definitions / find_callers ---------------------------------------------------------

SOURCE = """\
import os


def target(x):
    return helper(x)


async def target_async():
    await target(1)


class Target:
    def method(self):
        return target(2) + self.target(3)

    def target(self, y):
        def inner():
            return target(4)
        return inner()


value = target(5)
os.path.join("a", "b")
"""


@pytest.fixture
def code(ws: Path) -> Path:
    _write(ws, "pkg/mod.py", SOURCE)
    _write(ws, "pkg/other.py", "from pkg.mod import target\n\nclass target:\n    pass\n")
    _write(ws, "broken.py", "def target(:\n")
    (ws / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\ndef target():\n    s = '\xe9'\n")
    (ws / "binary.py").write_bytes(b"\xff\xfe\x00garbage")
    _write(ws, ".venv/lib/hidden.py", "def target():\n    pass\n")
    return ws


def test_find_definitions(tools, code):
    assert tools.find_definitions("target") == [
        {"file": "latin.py", "line": 2, "kind": "function", "name": "target"},
        {"file": "pkg/mod.py", "line": 4, "kind": "function", "name": "target"},
        {"file": "pkg/mod.py", "line": 16, "kind": "function", "name": "target"},
        {"file": "pkg/other.py", "line": 3, "kind": "class", "name": "target"},
    ]
    assert tools.find_definitions("target_async") == [
        {"file": "pkg/mod.py", "line": 8, "kind": "async_function", "name": "target_async"}
    ]
    assert tools.find_definitions("Target")[0]["kind"] == "class"
    assert tools.find_definitions("nothing_here") == []


def test_find_callers(tools, code):
    assert tools.find_callers("target") == [
        {"file": "pkg/mod.py", "line": 9, "caller": "target_async", "text": "await target(1)"},
        {
            "file": "pkg/mod.py",
            "line": 14,
            "caller": "Target.method",
            "text": "return target(2) + self.target(3)",
        },
        {
            "file": "pkg/mod.py",
            "line": 14,
            "caller": "Target.method",
            "text": "return target(2) + self.target(3)",
        },
        {
            "file": "pkg/mod.py",
            "line": 18,
            "caller": "Target.target.inner",
            "text": "return target(4)",
        },
        {"file": "pkg/mod.py", "line": 22, "caller": "<module>", "text": "value = target(5)"},
    ]


def test_find_callers_matches_attribute_calls(tools, code):
    assert [c["line"] for c in tools.find_callers("join")] == [23]
    assert [c["caller"] for c in tools.find_callers("helper")] == ["target"]


def test_code_search_rejects_bad_names(tools):
    with pytest.raises(ValueError, match="empty"):
        tools.find_definitions("")
    with pytest.raises(TypeError):
        tools.find_callers(None)


# --- plain data, specs, provider -------------------------------------------------------------


def _is_plain(value) -> bool:
    if isinstance(value, PLAIN_TYPES):
        return True
    if isinstance(value, list):
        return all(_is_plain(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_plain(v) for k, v in value.items())
    return False


def test_tools_return_plain_data(tools, code):
    results = [
        tools.read_file("pkg/mod.py"),
        tools.find_files("**/*.py"),
        tools.find_definitions("target"),
        tools.find_callers("target"),
        tools.write_file("new.txt", "x"),
        tools.edit_file("new.txt", "x", "y"),
    ]
    assert all(_is_plain(result) for result in results)


def test_specs_are_complete(tools):
    specs = {spec.name: spec for spec in tools.tool_specs()}
    assert set(specs) == {
        "read_file",
        "find_files",
        "find_definitions",
        "find_callers",
        "write_file",
        "edit_file",
    }
    for spec in specs.values():
        assert spec.provider == "builtin"
        assert spec.description and spec.returns != "Any"
        assert all(arg.type == "str" and arg.description for arg in spec.args)
        assert len(spec.examples) >= 2
        assert spec.docs == f"kit/docs/{spec.name}.md"
        assert tools.resolve_docs(spec).is_file()
    for name in ("read_file", "find_files", "find_definitions", "find_callers"):
        assert (specs[name].grade_w, specs[name].effects_ceiling) == (1, 1)
    for name in ("write_file", "edit_file"):
        assert (specs[name].grade_w, specs[name].effects_ceiling) == (3, 3)


def test_examples_are_valid_lackpy(tools):
    names = [spec.name for spec in tools.tool_specs()]
    for spec in tools.tool_specs():
        for example in spec.examples:
            assert set(example) == {"intent", "code", "tags"}
            result = validate(example["code"], allowed_names=names)
            assert result.valid, (spec.name, example["code"], result.errors)


def test_provider_resolve(tools):
    spec = tools.tool_specs()[0]
    assert tools.resolve(spec) == tools.read_file
    with pytest.raises(KeyError):
        tools.resolve(type(spec)(name="rm_rf", provider="builtin"))


def test_builtin_toolbox(ws):
    toolbox = builtin_toolbox(ws)
    _write(ws, "a.txt", "A")
    assert toolbox.resolve("read_file")("a.txt") == "A"
    assert toolbox.resolve_docs("find_files", "/nonexistent").name == "find_files.md"
    assert set(toolbox.docs_index()) == {spec.name for spec in toolbox.list_tools()}


def test_provider_accepts_workspace_object(ws):
    workspace = Workspace(ws)
    assert FileToolsProvider(workspace).workspace is workspace
    with pytest.raises(NotADirectoryError):
        Workspace(ws / "missing")


# --- effects ---------------------------------------------------------------------------------


def test_tools_record_effects(tools, code):
    os.symlink(code / "pkg" / "mod.py", code / "alias.py")
    with recording() as effects:
        tools.read_file("pkg/mod.py")
        tools.read_file("./pkg/../pkg/mod.py")
        tools.read_file("alias.py")
        tools.find_files("**/*")
        tools.find_definitions("Target")
        tools.write_file("out/new.txt", "x")
        tools.edit_file("out/new.txt", "x", "y")
        tools.write_file("out/other.txt", "x")
    assert effects.files_read == ["pkg/mod.py"]
    assert effects.files_modified == ["out/new.txt", "out/other.txt"]


def test_find_callers_records_only_files_with_results(tools, code):
    with recording() as effects:
        tools.find_callers("helper")
    assert effects.files_read == ["pkg/mod.py"]


def test_failed_tools_record_nothing(tools, code):
    with recording() as effects:
        for call in (
            lambda: tools.read_file("missing.txt"),
            lambda: tools.write_file("../x", "x"),
            lambda: tools.edit_file("pkg/mod.py", "no such text", "y"),
        ):
            with pytest.raises((OSError, ValueError)):
                call()
    assert effects.files_read == [] and effects.files_modified == []
