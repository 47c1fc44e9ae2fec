"""Optional rules that tighten validation: each is ``(ast.Module) -> list[Issue]``."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from .validator import Issue, NoRebinding, Rule, issue_at

_BLOCKS = (ast.If, ast.For, ast.With)


def no_loops(tree: ast.Module) -> list[Issue]:
    """Reject every for loop (and every comprehension, which is a loop too)."""
    loops = (ast.For, ast.ListComp, ast.SetComp, ast.DictComp)
    return [
        issue_at(node, "loops are not allowed by this rule; call a tool on the whole collection")
        for node in ast.walk(tree)
        if isinstance(node, loops)
    ]


def max_depth(limit: int) -> Rule:
    """Return a rule rejecting if/for/with blocks nested deeper than ``limit``."""

    def check(tree: ast.Module) -> list[Issue]:
        errors = []
        stack: list[tuple[ast.AST, int]] = [(tree, 0)]
        while stack:
            node, depth = stack.pop()
            if isinstance(node, _BLOCKS):
                depth += 1
                if depth > limit:
                    errors.append(issue_at(node, f"blocks nested {depth} deep; the limit is {limit}"))
                    continue
            stack.extend((child, depth) for child in ast.iter_child_nodes(node))
        return sorted(errors, key=lambda issue: (issue.line, issue.col))

    check.__name__ = f"max_depth({limit})"
    return check


def max_calls(limit: int) -> Rule:
    """Return a rule rejecting programs that contain more than ``limit`` calls."""

    def check(tree: ast.Module) -> list[Issue]:
        count = sum(isinstance(node, ast.Call) for node in ast.walk(tree))
        if count > limit:
            return [Issue(0, 0, f"the program makes {count} calls; the limit is {limit}")]
        return []

    check.__name__ = f"max_calls({limit})"
    return check


def no_nested_calls(tree: ast.Module) -> list[Issue]:
    """Reject a call used directly as an argument of another call."""
    errors: list[Issue] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        arguments = [*node.args, *(keyword.value for keyword in node.keywords)]
        errors.extend(
            issue_at(arg, "nested call: assign the inner call's result to a variable first")
            for arg in arguments
            if isinstance(arg, ast.Call)
        )
    return errors


def no_rebinding(names: Iterable[str]) -> Rule:
    """Return a rule refusing every binding of ``names`` (the kit's tools).

    Assignments, ``for`` and comprehension targets, ``del``, walrus and lambda
    parameters all count. ``validate`` checks it in its own pass, as
    ``protected_names``.
    """
    return NoRebinding(names)
