"""Plain data as the run layer shows it: display limits and JSON; the check is ``kit.plain``'s."""

from __future__ import annotations

import math
from typing import Any

from lackpy_kernel.kit.plain import CONTAINERS, SCALARS, find_non_plain

from .trace import summarize

__all__ = ["CONTAINERS", "SCALARS", "display_problem", "find_non_plain", "jsonable"]

MAX_DISPLAY_DEPTH = 100
MAX_DISPLAY_NODES = 100_000  # containers, each shared one counted every time it would be shown
MAX_DISPLAY_ITEMS = 1_000_000  # values of any kind, counted the same way
MAX_DISPLAY_BYTES = 10_000_000  # characters of text the value would render to
MAX_INT_BITS = 14_000  # about the 4,300 digits Python will turn into text
_DIGITS_PER_BIT = 0.30103


def display_problem(value: Any) -> str | None:
    """Why ``value`` cannot be shown in full, or None when it can.

    It cannot when it references itself, is nested too deeply, holds an int too long to
    turn into text, or would render to too much: parts and characters are counted each time
    they would be shown, so shared references (``[s] * 60000``) count as often as they
    appear. The walk stops at the first limit, so it costs at most ``MAX_DISPLAY_ITEMS`` steps.
    """
    items = containers = size = 0
    on_path: set[int] = set()
    stack: list[tuple[Any, int, bool]] = [(value, 0, False)]
    while stack:
        item, depth, leaving = stack.pop()
        if leaving:
            on_path.discard(id(item))
            continue
        items += 1
        kind = type(item)
        if kind is int and item.bit_length() > MAX_INT_BITS:
            return "an int too long to show"
        size += _text_size(item, kind)
        if size > MAX_DISPLAY_BYTES or items > MAX_DISPLAY_ITEMS:
            return too_large(items, size)
        if kind not in CONTAINERS:
            continue
        containers += 1
        if containers > MAX_DISPLAY_NODES:
            return too_large(items, size)
        if depth > MAX_DISPLAY_DEPTH:
            return "nested too deeply to show"
        if id(item) in on_path:
            return "self-referencing"
        on_path.add(id(item))
        stack.append((item, depth, True))
        children = [*item.keys(), *item.values()] if kind is dict else item
        stack.extend((child, depth + 1, False) for child in children)
    return None


def too_large(items: int, size: int) -> str:
    """How a value over the display limits is described: the limit it passed."""
    if size > MAX_DISPLAY_BYTES:
        return f"too large to show in full (over {MAX_DISPLAY_BYTES:,} characters of text)"
    return f"too large to show in full (over {min(items, MAX_DISPLAY_ITEMS):,} parts)"


def _text_size(item: Any, kind: type) -> int:
    """About how many characters ``item`` adds when shown (a container: its brackets and commas)."""
    if kind is str:
        return len(item) + 2 if item.isprintable() else 4 * len(item) + 2
    if kind is int:
        return int(item.bit_length() * _DIGITS_PER_BIT) + 2
    if kind in CONTAINERS:
        return 2 + 2 * len(item)
    return 24  # float, complex, bool, None: short


def jsonable(value: Any) -> Any:
    """``value`` as JSON data: containers become lists and dicts with string keys; parts that
    cannot be shown (see ``display_problem``) and other objects become short text.

    What it returns is bounded like ``display_problem``: once the parts converted so far
    reach its limits (characters, parts, containers), the rest become short summaries, so
    shared references cannot make the JSON explode.
    """
    budget = {"items": MAX_DISPLAY_ITEMS, "nodes": MAX_DISPLAY_NODES, "bytes": MAX_DISPLAY_BYTES}
    on_path: set[int] = set()

    def spent() -> bool:
        return budget["items"] < 0 or budget["bytes"] < 0 or budget["nodes"] < 0

    def convert(item: Any, depth: int) -> Any:
        kind = type(item)
        budget["items"] -= 1
        if item is None or kind is bool:
            return item
        if kind is float:
            return item if math.isfinite(item) else repr(item)
        if spent() or (kind is int and item.bit_length() > MAX_INT_BITS):
            return summarize(item) if kind in (str, int) else str(summarize(item))
        budget["bytes"] -= _text_size(item, kind)
        if kind in (str, int):
            return item if not spent() else summarize(item)
        budget["nodes"] -= 1
        if kind not in CONTAINERS or spent() or depth >= MAX_DISPLAY_DEPTH or id(item) in on_path:
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
