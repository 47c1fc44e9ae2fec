"""Strip what models wrap around a program: preamble sentences and code fences."""

from __future__ import annotations

import re

_PREAMBLE = re.compile(r"^\s*(here'?s|here is|the following|the solution|sure\b|certainly\b)", re.I)
_FENCE = re.compile(r"^\s*```[\w+-]*\s*$")


def sanitize_output(raw: str | None) -> str:
    """The program inside ``raw``: leading preamble lines and ``` fences removed.

    When the text holds a fenced block, only the first block is kept (models
    often add an explanation after it). Blank input gives "".
    """
    if not raw or not raw.strip():
        return ""
    lines = raw.strip("\n").splitlines()
    fenced = _first_fenced_block(lines)
    if fenced is not None:
        lines = fenced
    while lines and (_PREAMBLE.match(lines[0]) or not lines[0].strip()):
        lines.pop(0)
    return "\n".join(lines).strip("\n")


def _first_fenced_block(lines: list[str]) -> list[str] | None:
    opening = next((i for i, line in enumerate(lines) if _FENCE.match(line)), None)
    if opening is None:
        return None
    closing = next(
        (i for i in range(opening + 1, len(lines)) if _FENCE.match(lines[i])), len(lines)
    )
    return lines[opening + 1:closing]
