"""Plain data: the only values that cross the tool boundary."""

from __future__ import annotations

import math
from typing import Any

from .trace import summarize

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


MAX_DISPLAY_DEPTH = 100
MAX_DISPLAY_NODES = 100_000
MAX_INT_BITS = 14_000  # about the 4,300 digits Python will turn into text


def display_problem(value: Any) -> str | None:
    """Why ``value`` cannot be shown in full (self-referencing, too deep, too many parts
    once shared parts are counted each time, an int too long), or None when it can."""
    visits = 0
    on_path: set[int] = set()
    stack: list[tuple[Any, int, bool]] = [(value, 0, False)]
    while stack:
        item, depth, leaving = stack.pop()
        if leaving:
            on_path.discard(id(item))
            continue
        kind = type(item)
        if kind is int and item.bit_length() > MAX_INT_BITS:
            return "an int too long to show"
        if kind not in CONTAINERS:
            continue
        visits += 1
        if visits > MAX_DISPLAY_NODES:
            return "too large to show in full"
        if depth > MAX_DISPLAY_DEPTH:
            return "nested too deeply to show"
        if id(item) in on_path:
            return "self-referencing"
        on_path.add(id(item))
        stack.append((item, depth, True))
        children = [*item.keys(), *item.values()] if kind is dict else item
        stack.extend((child, depth + 1, False) for child in children)
    return None


def jsonable(value: Any) -> Any:
    """``value`` as JSON data: containers become lists and dicts with string keys; parts that
    cannot be shown (see ``display_problem``) and other objects become short text."""
    budget = [MAX_DISPLAY_NODES]
    on_path: set[int] = set()

    def convert(item: Any, depth: int) -> Any:
        kind = type(item)
        if item is None or kind in (str, bool):
            return item
        if kind is int:
            return item if item.bit_length() <= MAX_INT_BITS else summarize(item)
        if kind is float:
            return item if math.isfinite(item) else repr(item)
        budget[0] -= 1
        if kind not in CONTAINERS or budget[0] < 0 or depth >= MAX_DISPLAY_DEPTH \
                or id(item) in on_path:
            return str(summarize(item))
        on_path.add(id(item))
        try:
            if kind is dict:
                return {key if type(key) is str else str(summarize(key)): convert(entry, depth + 1)
                        for key, entry in item.items()}
            return [convert(entry, depth + 1) for entry in item]
        finally:
            on_path.discard(id(item))

    return convert(value, 0)
