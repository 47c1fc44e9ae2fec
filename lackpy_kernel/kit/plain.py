"""Plain data: the only values that cross the tool boundary."""

from __future__ import annotations

from typing import Any

SCALARS = frozenset({str, int, float, bool, complex, type(None)})
CONTAINERS = frozenset({list, tuple, set, frozenset, dict})


def find_non_plain(value: Any) -> type | None:
    """The type of the first value inside ``value`` that is not plain data, or None.

    Plain data is str, int, float, bool, complex, None, and lists, tuples, sets
    and dicts of them. Exact types only: a subclass could carry methods. Walks
    iteratively, so deep or self-referencing values are fine.
    """
    if type(value) in SCALARS:
        return None
    seen: set[int] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind in SCALARS:
            continue
        if kind not in CONTAINERS:
            return kind
        if id(item) in seen:
            continue
        seen.add(id(item))
        if kind is dict:
            stack.extend(item.keys())
            stack.extend(item.values())
        else:
            stack.extend(item)
    return None


def not_plain_message(tool: str, source: str, kind: type) -> str:
    """What a call says when tool ``tool`` from ``source`` returned a ``kind``, which is not
    plain data."""
    return (f"tool {tool!r} from {source} returned a {kind.__name__}, which is not plain data; "
            "make it return str, int, float, bool, None, or lists, tuples, sets and dicts of "
            "them (a generator or iterator: return list(...))")


def nesting_problem(value: Any, max_depth: int, max_parts: int) -> str | None:
    """What makes ``value`` (plain or JSON data) too big to process safely: nested more than
    ``max_depth`` deep, or more than ``max_parts`` values (each shared one counted every
    time it appears); None when neither. Walks iteratively and stops at the first limit."""
    parts = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        parts += 1
        if parts > max_parts:
            return f"more than {max_parts:,} values"
        kind = type(item)
        if kind not in CONTAINERS:
            continue
        if depth >= max_depth:
            return f"nested more than {max_depth} deep"
        children = [*item.keys(), *item.values()] if kind is dict else item
        stack.extend((child, depth + 1) for child in children)
    return None
