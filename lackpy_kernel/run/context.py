"""A bounded description of a session's variables, for the prompt of a model tier.

It lives beside the sandbox because a sandboxed session's values live in its worker,
which describes them there: the caller never loads them.

One line per variable: its name, type, size and a short preview of its
value. The whole description stays within a character limit: the largest
values lose their preview first, and when even the bare lines do not fit,
the last variables are only named.
"""

from __future__ import annotations

import reprlib
from collections.abc import Mapping
from typing import Any

CONTEXT_LIMIT = 2048  # characters of the whole description
PREVIEW_CHARS = 80  # characters of one value's preview

_REPR = reprlib.Repr()  # Python 3.11's Repr takes no arguments
_REPR.maxlevel, _REPR.maxlist, _REPR.maxtuple, _REPR.maxset, _REPR.maxdict = 2, 4, 4, 4, 3
_REPR.maxstring, _REPR.maxlong, _REPR.maxother = 50, 30, 50


def describe_variables(values: Mapping[str, Any], *, previews: bool = True,
                       limit: int = CONTEXT_LIMIT) -> str:
    """``name: type, size = preview`` per variable, within ``limit`` characters in all.

    With ``previews=False`` only names, types and sizes are given. When the
    lines are over ``limit``, previews are dropped from the largest values
    first; when still over, the remaining names are listed on a last line
    (cut to the limit). An empty mapping gives "".
    """
    names = sorted(values)
    heads = {name: _head(name, values[name]) for name in names}
    shown = {name: _preview(values[name]) if previews else "" for name in names}
    by_size = sorted(names, key=lambda name: _size_rank(values[name]), reverse=True)
    for name in by_size:
        if _length(heads, shown) <= limit:
            break
        shown[name] = ""
    lines = [heads[name] + (f" = {shown[name]}" if shown[name] else "") for name in names]
    return _fit(lines, names, limit)


def _head(name: str, value: Any) -> str:
    size = size_of(value)
    return f"{name}: {type(value).__name__}" + (f", {size}" if size else "")


def size_of(value: Any) -> str:
    """The size of a value as a person would say it ("17 chars", "3 items", "shape (2, 3)"), or ""."""
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple):
        return f"shape {shape}"
    if isinstance(value, str):
        return f"{len(value)} chars, {value.count(chr(10)) + 1 if value else 0} lines"
    if isinstance(value, bytes | bytearray):
        return f"{len(value)} bytes"
    if isinstance(value, Mapping):
        return f"{len(value)} keys"
    try:
        return f"{len(value)} items"
    except TypeError:  # no length: numbers, None, objects
        return ""


def _preview(value: Any) -> str:
    text = " ".join(_REPR.repr(value).split())  # reprlib survives a broken __repr__
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS - 3] + "..."


def _size_rank(value: Any) -> int:
    try:
        return len(value)
    except TypeError:
        return 0


def _length(heads: Mapping[str, str], shown: Mapping[str, str]) -> int:
    return sum(len(heads[name]) + (len(shown[name]) + 3 if shown[name] else 0) + 1 for name in heads)


def _fit(lines: list[str], names: list[str], limit: int) -> str:
    text = "\n".join(lines)
    if len(text) <= limit:
        return text
    kept: list[str] = []
    for index, line in enumerate(lines):
        rest = names[index + 1:]
        tail = f"and {len(rest)} more: {', '.join(rest)}" if rest else ""
        if len("\n".join([*kept, line, tail])) > limit:
            rest = names[index:]
            tail = f"and {len(rest)} more: {', '.join(rest)}"
            return "\n".join([*kept, tail])[:limit]
        kept.append(line)
    return "\n".join(kept)[:limit]
