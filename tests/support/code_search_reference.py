"""The code search as it was before it looked only where the name occurs: parse every
file, walk every tree. The tests compare the tools' results with this one's."""

from __future__ import annotations

import ast
import os
import stat
import warnings
from collections.abc import Iterator
from importlib.util import decode_source

from lackpy_kernel.kit.code_search import CallSite, Definition
from lackpy_kernel.kit.pathmatch import compile_pattern, match_files
from lackpy_kernel.kit.workspace import Workspace

MAX_SOURCE_BYTES = 4 * 1024 * 1024
_TEXT_LIMIT = 200
_KINDS: dict[type[ast.AST], str] = {
    ast.FunctionDef: "function",
    ast.AsyncFunctionDef: "async_function",
    ast.ClassDef: "class",
}


def find_definitions(workspace: Workspace, name: str) -> dict[str, list[Definition]]:
    """Definitions named ``name``, grouped by file: ``{file: [{file, line, kind, name}]}``."""
    found: dict[str, list[Definition]] = {}
    for relative, tree, _lines in _parsed_python_files(workspace):
        hits: list[Definition] = [
            {"file": relative, "line": node.lineno, "kind": _KINDS[type(node)], "name": node.name}
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and type(node) in _KINDS and node.name == name
        ]
        if hits:
            found[relative] = sorted(hits, key=lambda hit: hit["line"])
    return found


def find_callers(workspace: Workspace, name: str) -> dict[str, list[CallSite]]:
    """Calls of ``name`` (as ``name(...)`` or ``obj.name(...)``), grouped by file."""
    found: dict[str, list[CallSite]] = {}
    for relative, tree, lines in _parsed_python_files(workspace):
        hits: list[CallSite] = [
            {
                "file": relative,
                "line": line,
                "caller": caller,
                "text": lines[line - 1].strip()[:_TEXT_LIMIT] if line <= len(lines) else "",
            }
            for line, caller in sorted(_calls(tree, name))
        ]
        if hits:
            found[relative] = hits
    return found


def _calls(tree: ast.AST, name: str) -> list[tuple[int, str]]:
    """(line, caller) of each call of ``name``; the caller is the qualified name of the
    innermost enclosing function, e.g. ``Service.run``, or ``<module>``."""
    # A stack, not ast.NodeVisitor: a deeply nested expression would exhaust recursion.
    calls: list[tuple[int, str]] = []
    stack: list[tuple[ast.AST, tuple[tuple[str, bool], ...]]] = [(tree, ())]
    while stack:
        node, scopes = stack.pop()  # scopes: (name, is_function) from the outside in
        if isinstance(node, ast.Call) and _call_name(node.func) == name:
            calls.append((node.lineno, _caller(scopes)))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            scopes = (*scopes, (node.name, not isinstance(node, ast.ClassDef)))
        stack.extend((child, scopes) for child in ast.iter_child_nodes(node))
    return calls


def _caller(scopes: tuple[tuple[str, bool], ...]) -> str:
    function_levels = [i for i, (_, is_function) in enumerate(scopes) if is_function]
    if not function_levels:
        return "<module>"
    return ".".join(name for name, _ in scopes[: function_levels[-1] + 1])


def _call_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _parsed_python_files(workspace: Workspace) -> Iterator[tuple[str, ast.Module, list[str]]]:
    for relative in match_files(workspace, compile_pattern("**/*.py"), None):
        path = os.path.join(workspace.root, relative)
        if os.path.islink(path):  # its target is searched under its own name
            continue
        parsed = _parse(workspace, path)
        if parsed is not None:
            yield relative, *parsed


def _parse(workspace: Workspace, path: str) -> tuple[ast.Module, list[str]] | None:
    """The syntax tree and lines of a Python file, or None when it cannot be read or parsed."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        with open(os.open(path, flags), "rb") as stream:
            # Check what was opened: a folder on the way may have become a link meanwhile.
            workspace.check_opened(stream.fileno(), path)
            info = os.fstat(stream.fileno())
            # a file with another name (a hard link) may be one outside: not searched
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_SOURCE_BYTES \
                    or info.st_nlink > 1:
                return None
            source = decode_source(stream.read(MAX_SOURCE_BYTES + 1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. SyntaxWarning for invalid escapes
            tree = ast.parse(source, filename=path)
    except (OSError, SyntaxError, ValueError, LookupError, RecursionError, MemoryError):
        return None
    return tree, source.split("\n")  # decode_source made every line end "\n"
