"""Find Python definitions and call sites in the workspace with ``ast``."""

from __future__ import annotations

import ast
import os
import warnings
from collections.abc import Iterator
from importlib.util import decode_source

from .pathmatch import compile_pattern, match_files
from .workspace import Workspace

MAX_PYTHON_FILES = 10_000
MAX_SOURCE_BYTES = 4 * 1024 * 1024
_TEXT_LIMIT = 200
_KINDS = {
    ast.FunctionDef: "function",
    ast.AsyncFunctionDef: "async_function",
    ast.ClassDef: "class",
}


def find_definitions(workspace: Workspace, name: str) -> dict[str, list[dict]]:
    """Definitions named ``name``, grouped by file: ``{file: [{file, line, kind, name}]}``."""
    found: dict[str, list[dict]] = {}
    for relative, tree, _lines in _parsed_python_files(workspace):
        hits = [
            {"file": relative, "line": node.lineno, "kind": _KINDS[type(node)], "name": node.name}
            for node in ast.walk(tree)
            if type(node) in _KINDS and node.name == name
        ]
        if hits:
            found[relative] = sorted(hits, key=lambda hit: hit["line"])
    return found


def find_callers(workspace: Workspace, name: str) -> dict[str, list[dict]]:
    """Calls of ``name`` (as ``name(...)`` or ``obj.name(...)``), grouped by file."""
    found: dict[str, list[dict]] = {}
    for relative, tree, lines in _parsed_python_files(workspace):
        finder = _CallFinder(name)
        finder.visit(tree)
        hits = [
            {
                "file": relative,
                "line": line,
                "caller": caller,
                "text": lines[line - 1].strip()[:_TEXT_LIMIT] if line <= len(lines) else "",
            }
            for line, caller in sorted(finder.calls)
        ]
        if hits:
            found[relative] = hits
    return found


class _CallFinder(ast.NodeVisitor):
    def __init__(self, name: str) -> None:
        self.name = name
        self.scopes: list[tuple[str, bool]] = []  # (name, is_function)
        self.calls: list[tuple[int, str]] = []

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._visit_scope(node, is_function=True)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._visit_scope(node, is_function=False)

    def visit_Call(self, node: ast.Call) -> None:
        if _call_name(node.func) == self.name:
            self.calls.append((node.lineno, self._caller()))
        self.generic_visit(node)

    def _visit_scope(self, node: ast.AST, *, is_function: bool) -> None:
        self.scopes.append((node.name, is_function))
        self.generic_visit(node)
        self.scopes.pop()

    def _caller(self) -> str:
        # The qualified name of the innermost enclosing function, e.g. "Service.run".
        function_levels = [i for i, (_, is_function) in enumerate(self.scopes) if is_function]
        if not function_levels:
            return "<module>"
        return ".".join(name for name, _ in self.scopes[: function_levels[-1] + 1])


def _call_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _parsed_python_files(workspace: Workspace) -> Iterator[tuple[str, ast.Module, list[str]]]:
    for relative in match_files(workspace, compile_pattern("**/*.py"), MAX_PYTHON_FILES):
        path = os.path.join(workspace.root, relative)
        if os.path.islink(path):  # its target is searched under its own name
            continue
        parsed = _parse(path)
        if parsed is not None:
            yield relative, *parsed


def _parse(path: str) -> tuple[ast.Module, list[str]] | None:
    """The syntax tree and lines of a Python file, or None when it cannot be read or parsed."""
    try:
        if os.path.getsize(path) > MAX_SOURCE_BYTES:
            return None
        with open(path, "rb") as stream:
            source = decode_source(stream.read())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. SyntaxWarning for invalid escapes
            tree = ast.parse(source, filename=path)
    except (OSError, SyntaxError, ValueError, LookupError, RecursionError, MemoryError):
        return None
    return tree, source.split("\n")  # decode_source made every line end "\n"
