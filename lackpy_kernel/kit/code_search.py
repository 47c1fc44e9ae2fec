"""Find Python definitions and call sites in the workspace with ``ast``.

A search reads every ``.py`` file but parses only those whose bytes contain the name (a
file whose identifiers NFKC-normalize to it included), as ``grep`` would find them. What a
parse found, every definition and call in the file, is kept for the next search while the
file's size, modification time and bytes are unchanged (a bounded, least recently used
cache in this process). How many files are searched is bounded only by the program's time
and memory limits; how many results come back, by ``MAX_RESULTS``.
"""

from __future__ import annotations

import ast
import os
import stat
import threading
import unicodedata
import warnings
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.util import decode_source
from typing import TypedDict

from .errors import TooManyMatchesError
from .pathmatch import compile_pattern, match_files
from .workspace import Workspace

MAX_SOURCE_BYTES = 4 * 1024 * 1024
MAX_RESULTS = 10_000
CACHE_RECORDS = 200_000  # definitions and calls kept from earlier parses, all files together
_TEXT_LIMIT = 200
_KINDS: dict[type[ast.AST], str] = {
    ast.FunctionDef: "function",
    ast.AsyncFunctionDef: "async_function",
    ast.ClassDef: "class",
}
# O_NOFOLLOW: a file that is a link is searched under its target's own name, not this one.
_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
               | getattr(os, "O_NOFOLLOW", 0))


class Definition(TypedDict):
    """One definition found by :func:`find_definitions`."""

    file: str
    line: int
    kind: str
    name: str


class CallSite(TypedDict):
    """One call found by :func:`find_callers`; ``text`` is its line, stripped and shortened."""

    file: str
    line: int
    caller: str
    text: str


def find_definitions(workspace: Workspace, name: str) -> dict[str, list[Definition]]:
    """Definitions named ``name``, grouped by file: ``{file: [{file, line, kind, name}]}``.

    Raises TooManyMatchesError when there are more than ``MAX_RESULTS``.
    """
    found: dict[str, list[Definition]] = {}
    count = 0
    for relative, index, _source in _indexed_candidates(workspace, name):
        hits = index.definitions.get(name)
        if hits:
            count = _counted(count, len(hits), "definitions", name)
            found[relative] = [{"file": relative, "line": line, "kind": kind, "name": name}
                               for line, kind in hits]
    return found


def find_callers(workspace: Workspace, name: str) -> dict[str, list[CallSite]]:
    """Calls of ``name`` (as ``name(...)`` or ``obj.name(...)``), grouped by file.

    Raises TooManyMatchesError when there are more than ``MAX_RESULTS``.
    """
    found: dict[str, list[CallSite]] = {}
    count = 0
    for relative, index, source in _indexed_candidates(workspace, name):
        hits = index.calls.get(name)
        if hits:
            count = _counted(count, len(hits), "calls", name)
            lines = decode_source(source).split("\n")  # every line ends "\n" after decoding
            found[relative] = [
                {"file": relative, "line": line, "caller": caller,
                 "text": lines[line - 1].strip()[:_TEXT_LIMIT] if line <= len(lines) else ""}
                for line, caller in hits
            ]
    return found


def _counted(count: int, more: int, what: str, name: str) -> int:
    count += more
    if count > MAX_RESULTS:
        raise TooManyMatchesError(
            f"more than {MAX_RESULTS} {what} of {name!r} in the workspace; search for a more "
            f"specific name"
        )
    return count


@dataclass(frozen=True, slots=True)
class _FileIndex:
    """Every definition and call of one parsed file, by name, each list sorted by line:
    ``definitions[name]`` is ``[(line, kind)]``, ``calls[name]`` is ``[(line, caller)]``."""

    definitions: dict[str, list[tuple[int, str]]]
    calls: dict[str, list[tuple[int, str]]]
    records: int


def _index_tree(tree: ast.AST) -> _FileIndex:
    """The definitions and calls of ``tree``; a call's caller is the qualified name of the
    innermost enclosing function, e.g. ``Service.run``, or ``<module>``."""
    definitions: dict[str, list[tuple[int, str]]] = {}
    calls: dict[str, list[tuple[int, str]]] = {}
    # A stack, not ast.NodeVisitor: a deeply nested expression would exhaust recursion.
    # Each node comes with the qualified name of its scope and the caller its calls have.
    stack: list[tuple[ast.AST, str, str]] = [(tree, "", "<module>")]
    while stack:
        node, scope, caller = stack.pop()
        if isinstance(node, ast.Call):
            called = _call_name(node.func)
            if called is not None:
                calls.setdefault(called, []).append((node.lineno, caller))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            definitions.setdefault(node.name, []).append((node.lineno, _KINDS[type(node)]))
            scope = f"{scope}.{node.name}" if scope else node.name
            if not isinstance(node, ast.ClassDef):
                caller = scope
        stack.extend((child, scope, caller) for child in ast.iter_child_nodes(node))
    for hits in (*definitions.values(), *calls.values()):
        hits.sort()
    records = sum(map(len, definitions.values())) + sum(map(len, calls.values()))
    return _FileIndex(definitions, calls, records)


def _call_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _indexed_candidates(workspace: Workspace, name: str) -> Iterator[tuple[str, _FileIndex, bytes]]:
    """(relative path, index, bytes) of each Python file, in path order, that may hold
    ``name`` and parses. Only an identifier can name a definition or a call."""
    if not name.isidentifier():
        return
    needle = name.encode("utf-8")
    for relative in match_files(workspace, compile_pattern("**/*.py"), None):
        path = os.path.join(workspace.root, relative)
        read = _read_source(workspace, path)
        if read is None or not _may_hold(read[1], needle, name):
            continue
        index = _CACHE.index(path, *read)
        if index is not None:
            yield relative, index, read[1]


def _read_source(workspace: Workspace, path: str) -> tuple[tuple[int, int], bytes] | None:
    """((size, mtime) of the file, its bytes), or None when it is not a regular file with one
    name inside the workspace of at most ``MAX_SOURCE_BYTES``, or cannot be read."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        return None
    try:
        # Check what was opened: a folder on the way may have become a link meanwhile.
        workspace.check_opened(fd, path)
        info = os.fstat(fd)
        # a file with another name (a hard link) may be one outside: not searched
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SOURCE_BYTES or info.st_nlink > 1:
            return None
        data = os.read(fd, info.st_size + 1)
        while len(data) > info.st_size and len(data) <= MAX_SOURCE_BYTES:  # it grew meanwhile
            more = os.read(fd, MAX_SOURCE_BYTES + 1 - len(data))
            if not more:
                break
            data += more
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > MAX_SOURCE_BYTES:
        return None
    return (len(data), info.st_mtime_ns), data


def _may_hold(data: bytes, needle: bytes, name: str) -> bool:
    """Whether a source may define or call ``name``: its bytes hold it, or, for a source that
    is not plain ASCII (or names its encoding), its NFKC-normalized text does, as the parser
    normalizes identifiers."""
    if needle in data:
        return True
    if data.isascii() and b"coding" not in _first_two_lines(data):
        return False
    try:
        text = decode_source(data)
    except (SyntaxError, ValueError, LookupError):
        return False  # it would not parse either
    return name in unicodedata.normalize("NFKC", text)


def _first_two_lines(data: bytes) -> bytes:
    """Where an encoding declaration may be (PEP 263)."""
    end = data.find(b"\n")
    if end >= 0:
        end = data.find(b"\n", end + 1)
    return data if end < 0 else data[:end]


def _parse(path: str, data: bytes) -> _FileIndex | None:
    """The index of a Python source, or None when it does not parse."""
    try:
        source = decode_source(data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. SyntaxWarning for invalid escapes
            tree = ast.parse(source, filename=path)
        return _index_tree(tree)
    except (SyntaxError, ValueError, LookupError, RecursionError, MemoryError):
        return None


class _IndexCache:
    """The indexes of files parsed before, by path, each kept with the file's size,
    modification time and the hash of its bytes; at most ``CACHE_RECORDS`` records in all,
    the least recently used dropped first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, tuple[tuple[int, int, int], _FileIndex | None]] = OrderedDict()
        self._records = 0

    def index(self, path: str, stamp: tuple[int, int], data: bytes) -> _FileIndex | None:
        """The index of ``data``, the bytes just read from ``path``; None when they do not parse."""
        key = (*stamp, hash(data))
        with self._lock:
            cached = self._entries.get(path)
            if cached is not None and cached[0] == key:
                self._entries.move_to_end(path)
                return cached[1]
        index = _parse(path, data)
        with self._lock:
            self._forget(path)
            self._entries[path] = (key, index)
            self._records += _records(index)
            while self._records > CACHE_RECORDS and len(self._entries) > 1:
                self._forget(next(iter(self._entries)))
        return index

    def clear(self) -> None:
        """Forget every index."""
        with self._lock:
            self._entries.clear()
            self._records = 0

    def _forget(self, path: str) -> None:
        old = self._entries.pop(path, None)
        if old is not None:
            self._records -= _records(old[1])


def _records(index: _FileIndex | None) -> int:
    return 1 if index is None else 1 + index.records


_CACHE = _IndexCache()
