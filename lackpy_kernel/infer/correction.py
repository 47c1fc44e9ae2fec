"""Deterministic cleanup of model output: the first step of the correction chain."""

from __future__ import annotations

import ast
from collections.abc import Set

from .sanitize import sanitize_output


def deterministic_cleanup(program: str, allowed_names: Set[str]) -> str | None:
    """Fix what models commonly get wrong, or None when nothing could be changed.

    Drops imports and a trailing ``if __name__ == '__main__':`` guard (keeping
    its body), rewrites ``open(p).read()`` and ``Path(p).read_text()`` to
    ``read_file(p)`` when the kit has ``read_file``, and unwraps
    ``print(x)`` on the last line into the expression ``x``.
    """
    text = sanitize_output(program)
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    before = ast.dump(tree)
    tree.body = _clean_statements(tree.body)
    tree = _ReadRewriter(allowed_names).visit(tree)
    if tree.body and _is_print_call(tree.body[-1]):
        call = tree.body[-1].value
        tree.body[-1] = ast.Expr(call.args[0])
    if ast.dump(tree) == before:
        return None
    ast.fix_missing_locations(tree)
    return ast.unparse(tree)


def _clean_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    kept: list[ast.stmt] = []
    for statement in body:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            continue
        if _is_main_guard(statement):
            kept.extend(_clean_statements(statement.body))
            continue
        kept.append(statement)
    return kept


def _is_main_guard(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.If)
        and isinstance(statement.test, ast.Compare)
        and isinstance(statement.test.left, ast.Name)
        and statement.test.left.id == "__name__"
    )


def _is_print_call(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and isinstance(statement.value.func, ast.Name)
        and statement.value.func.id == "print"
        and len(statement.value.args) == 1
        and not statement.value.keywords
    )


class _ReadRewriter(ast.NodeTransformer):
    """``open(p).read()`` / ``Path(p).read_text()`` -> ``read_file(p)``."""

    def __init__(self, allowed_names: Set[str]) -> None:
        self.enabled = "read_file" in allowed_names

    def visit_Call(self, node: ast.Call) -> ast.AST:
        node = self.generic_visit(node)
        if not self.enabled or not isinstance(node.func, ast.Attribute) or node.args:
            return node
        inner = node.func.value
        if (
            node.func.attr in ("read", "read_text")
            and isinstance(inner, ast.Call)
            and isinstance(inner.func, ast.Name)
            and inner.func.id in ("open", "Path")
            and len(inner.args) >= 1
        ):
            call = ast.Call(ast.Name("read_file", ast.Load()), [inner.args[0]], [])
            return ast.copy_location(call, node)
        return node
