"""Magic syntax shared by the kernel and the IPython extension.

A magic is a logical line at bracket depth 0 whose first character is ``%``
(``%%`` on a cell's first line for a cell magic). Options come first; the text
after the first word that is not an option (or after ``--``) is the rest,
taken literally: braces, quotes and ``$`` included.
"""

from __future__ import annotations

import ast
import keyword
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from lackpy_kernel.errors import UsageError

# A magic line whose options cannot be read; the message says what it takes.
MagicUsageError = UsageError

# One shell-like word: unquoted runs and quoted parts, glued together.
_WORD = re.compile(r"""\s*((?:[^\s'"]+|'[^']*'|"(?:[^"\\]|\\.)*")+)""")

Kind = Literal["flag", "value", "multi"]


@dataclass
class MagicLine:
    """The options a magic line gave (flags True, values text, ``multi`` lists) and the rest."""

    options: dict[str, Any] = field(default_factory=dict)
    rest: str = ""


def parse_magic_line(line: str, spec: Mapping[str, Kind], usage: str) -> MagicLine:
    """Read ``line``'s leading options as ``spec`` describes them; ``usage`` goes into errors."""
    parsed = MagicLine()
    pos = 0
    while True:
        match = _WORD.match(line, pos)
        if match is None or match.group(1) == "--" or not match.group(1).startswith("--"):
            start = match.end() if match and match.group(1) == "--" else pos
            parsed.rest = line[start:].strip()
            return parsed
        pos = match.end()
        name, eq, inline = match.group(1).partition("=")
        kind = spec.get(name)
        if kind is None:
            raise MagicUsageError(f"unknown option {name}; usage: {usage}")
        if kind == "flag":
            if eq:
                raise MagicUsageError(f"{name} takes no value; usage: {usage}")
            parsed.options[name] = True
            continue
        if eq:
            raw = inline
        else:
            value = _WORD.match(line, pos)
            if value is None or value.group(1).startswith("--"):
                raise MagicUsageError(f"{name} needs a value; usage: {usage}")
            raw, pos = value.group(1), value.end()
        if kind == "multi":
            parsed.options.setdefault(name, []).append(raw)
        else:
            parsed.options[name] = unquote(raw)


def shell_words(text: str) -> list[str]:
    """The shell-like words of ``text``, quotes kept (``"xs=[1, 2]"`` is one word)."""
    return [match.group(1) for match in _WORD.finditer(text) if match.group(1)]


def unquote(text: str) -> str:
    """Shell-style quotes removed (the text as it is when they do not balance)."""
    try:
        return "".join(shlex.split(text))
    except ValueError:
        return text


def parse_param(raw: str) -> tuple[str, Any]:
    """``name=value``: the value is a Python literal where it parses as one, else a string."""
    text = unquote(raw) if raw[:1] in "'\"" else raw
    name, sep, value = text.partition("=")
    if not sep or not name.isidentifier() or keyword.iskeyword(name):
        raise MagicUsageError(f"a parameter is name=value, not {raw!r}")
    try:
        return name, ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return name, value  # not a literal: the text as typed, spaces included


@dataclass
class Segment:
    """Part of a cell: a line magic, a cell magic (with its body), or code.

    ``text`` of code keeps the cell's line numbers: lines outside the segment
    are blank, so errors point at the line the user sees.
    """

    kind: Literal["magic", "cell_magic", "code"]
    name: str = ""
    line: str = ""
    body: str = ""
    text: str = ""


def split_cell(cell: str) -> list[Segment]:
    """The cell's line magics, cell magic and code, in order."""
    lines = cell.split("\n")
    if lines and lines[0].startswith("%%"):
        name, _, args = lines[0][2:].partition(" ")
        return [Segment("cell_magic", name.strip(), args.strip(), "\n".join(lines[1:]))]
    segments: list[Segment] = []
    code_lines: list[int] = []
    for start, end in _logical_lines(lines):
        if lines[start].startswith("%"):
            _flush_code(segments, code_lines, lines)
            joined = " ".join(line.removesuffix("\\") for line in lines[start:end])
            name, _, args = joined.lstrip("%").partition(" ")
            segments.append(Segment("magic", name.strip(), args.strip()))
        else:
            code_lines.extend(range(start, end))
    _flush_code(segments, code_lines, lines)
    return segments


def _flush_code(segments: list[Segment], numbers: list[int], lines: list[str]) -> None:
    if any(lines[number].strip() for number in numbers):
        keep = set(numbers)
        text = "\n".join(line if i in keep else "" for i, line in enumerate(lines))
        segments.append(Segment("code", text=text))
    numbers.clear()


def _logical_lines(lines: list[str]) -> list[tuple[int, int]]:
    """(first, end) line indexes of each logical line: brackets, strings and ``\\`` join
    code lines; a magic's line (one starting with ``%``) ends at its end unless it ends
    with ``\\``, as in IPython, so a ``(`` in an intent cannot swallow the cell."""
    spans, start, state = [], 0, _ScanState()
    for index, line in enumerate(lines):
        if lines[start].startswith("%"):  # a magic continues only past a trailing backslash
            if not line.endswith("\\"):
                spans.append((start, index + 1))
                start = index + 1
            continue
        state.scan(line)
        if not state.open():
            spans.append((start, index + 1))
            start = index + 1
    if start < len(lines):
        spans.append((start, len(lines)))
    return spans


class _ScanState:
    """Tracks bracket depth, an open triple-quoted string and a trailing backslash."""

    def __init__(self) -> None:
        self.depth = 0
        self.triple: str | None = None
        self.continued = False

    def open(self) -> bool:
        return self.depth > 0 or self.triple is not None or self.continued

    def scan(self, line: str) -> None:
        i, self.continued = 0, False
        while i < len(line):
            if self.triple:
                end = line.find(self.triple, i)
                if end < 0:
                    return
                i, self.triple = end + 3, None
                continue
            char = line[i]
            if char == "#":
                return
            if line.startswith(('"""', "'''"), i):
                self.triple, i = line[i:i + 3], i + 3
                continue
            if char in "'\"":
                i = _skip_string(line, i)
                continue
            if char in "([{":
                self.depth += 1
            elif char in ")]}":
                self.depth = max(0, self.depth - 1)
            elif char == "\\" and i == len(line) - 1:
                self.continued = True
            i += 1


def _skip_string(line: str, i: int) -> int:
    quote, i = line[i], i + 1
    while i < len(line) and line[i] != quote:
        i += 2 if line[i] == "\\" else 1
    return i + 1
