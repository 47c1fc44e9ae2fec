"""Plain data as the run layer shows it and sends it on: one bounded writer (``write``) that
counts a value's text as it would be written, for display limits, the size of a call's
arguments and error descriptions; and JSON. The plain-data check is ``kit.plain``'s."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from lackpy_kernel.kit.plain import CONTAINERS, SCALARS, find_non_plain

from .trace import summarize

__all__ = ["CONTAINERS", "SCALARS", "Bounds", "bounded_repr", "display_problem",
           "find_non_plain", "jsonable", "write"]

MAX_DISPLAY_DEPTH = 100
MAX_DISPLAY_NODES = 100_000  # containers, each shared one counted every time it would be shown
MAX_DISPLAY_ITEMS = 1_000_000  # values of any kind, counted the same way
MAX_DISPLAY_BYTES = 10_000_000  # characters of text the value would render to
MAX_INT_BITS = 14_000  # about the 4,300 digits Python will turn into text
_DIGITS_PER_BIT = 0.30103
_VALUE, _TEXT, _LEAVE, _PARTS = 0, 1, 2, 3  # what an entry of the writer's stack holds
_END = object()
_BRACKETS: dict[type, tuple[str, str]] = {list: ("[", "]"), tuple: ("(", ")"), set: ("{", "}"),
                                          dict: ("{", "}"), frozenset: ("frozenset({", "})")}
TOO_LARGE = "too large to show in full"  # how the problem of a value over its bounds starts


@dataclass(frozen=True, slots=True)
class Bounds:
    """What ``write`` lets a value expand to: characters of text, parts (values of any kind)
    and containers, each shared one counted every time it is written, and nesting depth."""

    chars: int = MAX_DISPLAY_BYTES
    parts: int = MAX_DISPLAY_ITEMS
    containers: int = MAX_DISPLAY_NODES
    depth: int = MAX_DISPLAY_DEPTH

    @classmethod
    def of_text(cls, chars: int) -> Bounds:
        """Bounds of ``chars`` characters only (each part is at least one)."""
        return cls(chars, chars, chars)


DISPLAY = Bounds()


def display_problem(value: Any, bounds: Bounds = DISPLAY) -> str | None:
    """Why ``value`` cannot be shown in full (within ``bounds``), or None when it can.

    It cannot when it references itself, is nested too deeply, holds an int too long to
    turn into text, or would render to too much: parts and characters are counted each time
    they would be shown, so shared references (``[s] * 60000``) count as often as they
    appear. The walk stops at the first limit, so it costs at most ``bounds.parts`` steps.
    """
    return write(value, bounds, None)


def bounded_repr(value: Any, max_chars: int) -> str:
    """``repr(value)`` of plain data, written piece by piece and cut after ``max_chars``
    characters (then ending in ``...``); what is not plain data shows as ``<type>``."""
    out: list[str] = []
    problem = write(value, Bounds.of_text(max_chars), out)
    text = "".join(out)
    return text if problem is None else text[:max_chars] + "..."


def write(value: Any, bounds: Bounds, out: list[str] | None) -> str | None:
    """Write ``value``'s text (``repr`` for plain data) to ``out`` piece by piece, or only
    count it when ``out`` is None; stop at the first of ``bounds`` it would pass and say
    why (see ``display_problem``), else None. What ``out`` gets stays within about
    ``bounds.chars`` characters: a long string is cut to what is left."""
    parts = containers = size = 0
    on_path: set[int] = set()
    stack: list[tuple[int, Any, int]] = [(_VALUE, value, 0)]
    while stack:
        tag, item, depth = stack.pop()
        if tag == _LEAVE:
            on_path.discard(item)
            continue
        if tag == _PARTS:
            _push_next(item, depth, stack)
            continue
        if tag == _TEXT:
            size += len(item)
            if out is not None:
                out.append(item)
        else:
            parts += 1
            kind = type(item)
            if kind is int and item.bit_length() > MAX_INT_BITS:
                return "an int too long to show"
            if kind in CONTAINERS:
                containers += 1
                if containers > bounds.containers:
                    return too_large(parts, size, bounds)
                if depth > bounds.depth:
                    return "nested too deeply to show"
                if id(item) in on_path:
                    return "self-referencing"
                on_path.add(id(item))
                stack.append((_LEAVE, id(item), depth))
                _push_container(item, kind, depth, stack)
                continue
            grown = _text_size(item, kind)
            if out is not None:
                out.append(_leaf_text(item, kind, bounds.chars - size))
            size += grown
        if size > bounds.chars or parts > bounds.parts:
            return too_large(parts, size, bounds)
    return None


def _push_container(item: Any, kind: type, depth: int, stack: list[tuple[int, Any, int]]
                    ) -> None:
    """Push what writes container ``item`` (in reverse, for the stack): its opening, its
    parts one at a time (see ``_push_next``), its closing."""
    opening, closing = _BRACKETS[kind]
    if not item and kind in (set, frozenset):
        opening, closing = f"{kind.__name__}(", ")"
    if kind is tuple and len(item) == 1:
        closing = ",)"
    entries = iter(item.items()) if kind is dict else iter(item)
    stack.extend([(_TEXT, closing, depth), (_PARTS, [entries, kind is dict, ""], depth),
                  (_TEXT, opening, depth)])


def _push_next(state: list[Any], depth: int, stack: list[tuple[int, Any, int]]) -> None:
    """Push a container's next part and its separator, then the rest of it (``state``: its
    iterator, whether it is a dict's, the separator)."""
    entries, pairs, separator = state
    entry: Any = next(entries, _END)
    if entry is _END:
        return
    stack.append((_PARTS, state, depth))
    if pairs:
        key, value = entry
        stack.extend([(_VALUE, value, depth + 1), (_TEXT, ": ", depth), (_VALUE, key, depth + 1)])
    else:
        stack.append((_VALUE, entry, depth + 1))
    if separator:
        stack.append((_TEXT, separator, depth))
    state[2] = ", "


def _leaf_text(item: Any, kind: type, room: int) -> str:
    """The text of a value that is not a container, cut to about ``room`` characters."""
    if kind is str:
        return repr(item) if len(item) <= room else repr(item[:max(room, 0)])
    if kind in SCALARS:
        return repr(item)
    return f"<{kind.__name__}>"


def too_large(parts: int, size: int, bounds: Bounds = DISPLAY) -> str:
    """How a value over ``bounds`` is described: the limit it passed."""
    if size > bounds.chars:
        return f"{TOO_LARGE} (over {bounds.chars:,} characters of text)"
    return f"{TOO_LARGE} (over {min(parts, bounds.parts):,} parts)"


def _text_size(item: Any, kind: type) -> int:
    """About how many characters ``item`` adds when shown (a container: its brackets and commas)."""
    if kind is str:
        return len(item) + 2 if item.isprintable() else 4 * len(item) + 2
    if kind is int:
        return int(item.bit_length() * _DIGITS_PER_BIT) + 2
    if kind in CONTAINERS:
        return 2 + 2 * len(item)  # its brackets and commas
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
