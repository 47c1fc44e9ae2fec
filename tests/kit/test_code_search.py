"""find_definitions and find_callers at repository scale: the same results as parsing every
file, a cache that never answers for a file that changed, and no refusal by file count."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from lackpy_kernel.kit import FileToolsProvider, TooManyMatchesError, Workspace, code_search
from tests.support import code_search_reference as reference

NAMES = ["target", "helper", "Widget", "run", "find", "join", "café", "inner", "missing",
         "__init__", "print", "x"]


@pytest.fixture(autouse=True)
def empty_cache() -> Iterator[None]:
    code_search._CACHE.clear()
    yield
    code_search._CACHE.clear()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A workspace with ordinary, odd and hostile Python files."""
    root = tmp_path / "ws"
    for package in range(6):
        for module in range(8):
            _write(root, f"pkg{package}/sub{module % 3}/mod{module}.py", _module(package, module))
    _write(root, "nfkc.py", "def ﬁnd():\n    return ﬁnd()\n")  # the parser reads "find"
    _write(root, "accents.py", "def café():\n    return café() + target()\n")
    (root / "latin.py").write_bytes(b"# -*- coding: latin-1 -*-\ndef target():\n    s = '\xe9'\n")
    (root / "bom.py").write_bytes(b"\xef\xbb\xbfdef helper():\n    return target()\n")
    (root / "binary.py").write_bytes(b"\xff\xfe\x00target(")
    _write(root, "broken.py", "def target(:\n")
    _write(root, "huge.py", "def target():\n    pass\n" + "#" * (code_search.MAX_SOURCE_BYTES + 1))
    _write(root, "deep.py", "x = " + "not " * 600 + "target()\n")
    _write(root, ".venv/lib/hidden.py", "def target():\n    pass\n")
    os.mkfifo(root / "fifo.py")  # opening it must not block
    os.symlink(root / "pkg0", root / "pkg0" / "loop")  # a folder link loop
    os.symlink("self", root / "self")  # a link to itself
    os.symlink(root / "accents.py", root / "alias.py")  # searched under its own name only
    return root


def _module(package: int, module: int) -> str:
    return f'''\
"""Module {package}.{module}."""
import os


def target(value):
    return helper(value) + {module}


class Widget{module % 2 and "" or "Base"}:
    def __init__(self):
        self.value = target({package})

    def run(self):
        def inner():
            return os.path.join("a", "b")
        return inner() + self.run() if {module} else print("run")


async def helper(value):
    await target(value)
    return [target(i) for i in range(value)]


class Widget(WidgetBase if {module % 2} else object):
    pass
'''


def _write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _searches(workspace: Workspace, name: str) -> tuple[object, object]:
    return (code_search.find_definitions(workspace, name), code_search.find_callers(workspace, name))


def _reference(workspace: Workspace, name: str) -> tuple[object, object]:
    return (reference.find_definitions(workspace, name), reference.find_callers(workspace, name))


def test_results_are_those_of_parsing_every_file(tree):
    workspace = Workspace(tree)
    for name in NAMES:
        expected = _reference(workspace, name)
        assert _searches(workspace, name) == expected, name
        assert _searches(workspace, name) == expected, name  # again, from the cache


def test_identifiers_are_found_as_the_parser_normalizes_them(tree):
    workspace = Workspace(tree)
    assert code_search.find_definitions(workspace, "find") == {
        "nfkc.py": [{"file": "nfkc.py", "line": 1, "kind": "function", "name": "find"}]}
    assert list(code_search.find_callers(workspace, "café")) == ["accents.py"]
    assert code_search.find_definitions(workspace, "ﬁnd") == {}  # not a name the parser makes


def test_odd_files_are_skipped(tree):
    files = set(code_search.find_definitions(Workspace(tree), "target"))
    assert {"latin.py", "pkg0/sub0/mod0.py"} <= files
    assert files.isdisjoint({"binary.py", "broken.py", "huge.py", ".venv/lib/hidden.py", "fifo.py",
                             "pkg0/loop/sub0/mod0.py"})


def test_a_name_that_is_no_identifier_finds_nothing(tree):
    workspace = Workspace(tree)
    for name in ("target(", "def target", "a.b", "\ud800"):
        assert _searches(workspace, name) == ({}, {})


def test_a_changed_file_is_read_again_even_with_the_same_size_and_time(tree):
    workspace = Workspace(tree)
    path = _write(tree, "changing.py", "def alpha():\n    pass\n")
    assert list(code_search.find_definitions(workspace, "alpha")) == ["changing.py"]
    before = path.stat()
    path.write_text("def omega():\n    pass\n")  # same length
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert code_search.find_definitions(workspace, "alpha") == {}
    assert list(code_search.find_definitions(workspace, "omega")) == ["changing.py"]


def test_a_file_that_grows_or_gains_a_call_is_seen(tree):
    workspace = Workspace(tree)
    path = _write(tree, "growing.py", "def alpha():\n    pass\n")
    assert code_search.find_callers(workspace, "alpha") == {}
    path.write_text("def alpha():\n    pass\n\n\nalpha()\n")
    assert code_search.find_callers(workspace, "alpha") == {"growing.py": [
        {"file": "growing.py", "line": 5, "caller": "<module>", "text": "alpha()"}]}


def test_a_file_deleted_between_searches_is_gone(tree):
    workspace = Workspace(tree)
    path = _write(tree, "gone.py", "def alpha():\n    pass\n")
    assert list(code_search.find_definitions(workspace, "alpha")) == ["gone.py"]
    path.unlink()
    assert code_search.find_definitions(workspace, "alpha") == {}


def test_a_file_that_gains_a_second_name_is_no_longer_read(tree, tmp_path):
    workspace = Workspace(tree)
    path = _write(tree, "linked.py", "def alpha():\n    pass\n")
    assert list(code_search.find_definitions(workspace, "alpha")) == ["linked.py"]
    os.link(path, tmp_path / "outside.py")
    assert code_search.find_definitions(workspace, "alpha") == {}


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_an_unreadable_file_is_skipped(tree):
    workspace = Workspace(tree)
    path = _write(tree, "secret.py", "def alpha():\n    pass\n")
    assert list(code_search.find_definitions(workspace, "alpha")) == ["secret.py"]
    path.chmod(0)
    assert code_search.find_definitions(workspace, "alpha") == {}


def test_a_small_cache_gives_the_same_results(tree, monkeypatch):
    monkeypatch.setattr(code_search, "CACHE_RECORDS", 20)
    workspace = Workspace(tree)
    for name in NAMES:
        assert _searches(workspace, name) == _reference(workspace, name), name
    assert code_search._CACHE._records <= 20 or len(code_search._CACHE._entries) == 1


def test_results_are_bounded(tree, monkeypatch):
    monkeypatch.setattr(code_search, "MAX_RESULTS", 3)
    tools = FileToolsProvider(tree)
    with pytest.raises(TooManyMatchesError, match="more than 3 calls of 'target'.*more specific"):
        tools.find_callers("target")
    with pytest.raises(TooManyMatchesError, match="more than 3 definitions of 'target'"):
        tools.find_definitions("target")
    assert len(tools.find_definitions("café")) == 1


def test_a_workspace_of_more_than_ten_thousand_files_is_searched(tmp_path):
    root = tmp_path / "ws"
    for folder in range(101):
        (root / f"d{folder}").mkdir(parents=True)
        for module in range(100):
            (root / f"d{folder}" / f"m{module}.py").write_text(f"def f{module}():\n    pass\n")
    _write(root, "d50/needle.py", "def needle():\n    pass\n")
    tools = FileToolsProvider(root)
    assert tools.find_definitions("needle") == [
        {"file": "d50/needle.py", "line": 1, "kind": "function", "name": "needle"}]
