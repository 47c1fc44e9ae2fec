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
