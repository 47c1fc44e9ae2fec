"""What live validation finds in a cell: each problem with its place and the kernel's words.

A lackpy notebook's cell is split as the kernel splits it (``split_cell``): its magic lines
are read by the magic's own declaration (an unknown magic or option is a problem), its code
is validated as the kernel validates it, and so is the body of a cell magic whose body is a
program (``%%validate``; ``%%step``, whose program sees the kit, ``task`` and ``context``).
In a Python notebook only those cells and ``%%lackpy`` cells are lackpy. Nothing here runs
a program.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import asdict, dataclass
from typing import Any, Literal

from lackpy_kernel.engines.plans import PROGRAM_PARAMS
from lackpy_kernel.errors import UsageError
from lackpy_kernel.extension import IPYTHON_LACKS
from lackpy_kernel.kernel.output import KERNEL_LACKS
from lackpy_kernel.lang import Issue, free_names, validate
from lackpy_kernel.notebook.declare import Magic, plan_command, step_line
from lackpy_kernel.notebook.magics import NotebookMagics
from lackpy_kernel.notebook.syntax import MagicLine, split_cell

__all__ = ["MAX_SOURCE_CHARS", "PROGRAM_CELLS", "Problem", "check_cell"]

Language = Literal["lackpy", "python"]

MAX_SOURCE_CHARS = 200_000  # a larger cell is not checked as you type (the kernel still checks it)
DEADLINE_S = 2.0  # a cell that takes longer to validate is reported as too large to check
PROGRAM_CELLS = ("lackpy", "step", "validate")  # the cell magics whose body is a lackpy program
_LINE_READERS: dict[str, Callable[[Magic, MagicLine], object]] = {"step": step_line,
                                                                 "plan": plan_command}
_WORD = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


@dataclass(frozen=True)
class Problem:
    """One problem: from (line, col) to (end_line, end_col), 1-based, end excluded, and the
    message as the kernel prints it."""

    line: int
    col: int
    end_line: int
    end_col: int
    message: str

    def to_dict(self) -> dict[str, Any]:
        """The problem as JSON's object."""
        return asdict(self)


def _offered(lacks: frozenset[str]) -> dict[str, Magic]:
    return NotebookMagics.offered(lambda magic: magic not in lacks)


_MAGICS: dict[Language, dict[str, Magic]] = {"lackpy": _offered(KERNEL_LACKS),
                                             "python": _offered(IPYTHON_LACKS)}


def check_cell(source: str, language: Language, names: Collection[str] | None,
               tools: Collection[str] = ()) -> list[Problem]:
    """The problems of cell ``source`` in a ``language`` notebook, in order.

    ``names`` are the names the session knows (tools, parameters, variables), as the kernel
    last said; None when it has not said yet: then no name is unknown. ``tools`` may not be
    rebound. Raises UsageError for a cell over ``MAX_SOURCE_CHARS``.
    """
    if len(source) > MAX_SOURCE_CHARS:
        raise UsageError(f"the cell has {len(source)} characters; live validation checks at "
                         f"most {MAX_SOURCE_CHARS} (the kernel still checks it when it runs)")
    lines = source.split("\n")
    if language == "python":
        return _check_python(lines, names, tools)
    problems: list[Problem] = []
    at = 0  # the line of the last magic checked: the next one is on a later line
    for segment in split_cell(source):
        if segment.kind == "code":
            problems += _check_program(segment.text, lines, names, tools)
        elif segment.kind == "cell_magic":
            problems += _check_program_cell(_MAGICS["lackpy"], segment.name, segment.line, lines,
                                            names, tools)
        else:
            at = _magic_line(lines, segment.name, at)
            problems += _check_magic(_MAGICS["lackpy"], segment.name, segment.line, False, lines, at)
    return problems


def _check_python(lines: list[str], names: Collection[str] | None,
                  tools: Collection[str]) -> list[Problem]:
    """A Python notebook's cell: only a cell magic of ``PROGRAM_CELLS`` is checked (its line
    by the magic syntax, its body as lackpy); any other cell is Python's own."""
    name, _, line = lines[0].removeprefix("%%").partition(" ")
    if not lines[0].startswith("%%") or name not in PROGRAM_CELLS:
        return []
    return _check_program_cell(_MAGICS["python"], name, line.strip(), lines, names, tools)


def _check_program_cell(magics: dict[str, Magic], name: str, line: str, lines: list[str],
                        names: Collection[str] | None, tools: Collection[str]) -> list[Problem]:
    """A cell magic's line, then its body where the body is a program: a ``%%step``'s sees
    its kit's tools, ``task`` and ``context`` (any name, when ``--kit`` names another kit)."""
    problems = _check_magic(magics, name, line, True, lines, 1)
    if name not in PROGRAM_CELLS or name not in magics:
        return problems
    if name == "step" and names is not None:
        names = None if _step_options(magics[name], line).get("--kit") else [*tools,
                                                                               *PROGRAM_PARAMS]
    body = "\n".join(["", *lines[1:]])  # line numbers as the person sees them
    return problems + _check_program(body, lines, names, tools)


def _step_options(declared: Magic, line: str) -> dict[str, Any]:
    """The options of a ``%%step`` line (none when it cannot be read: it is a problem too)."""
    try:
        return step_line(declared, declared.parse(line))[1]
    except UsageError:
        return {}


def _check_magic(magics: dict[str, Magic], name: str, line: str, cell: bool,
                 lines: list[str], at: int) -> list[Problem]:
    """The problem of the magic on line ``at`` (an unknown magic, a bad option), as the
    kernel words it."""
    declared = magics.get(name.removesuffix("?"))
    if declared is None:
        return [_whole_line(lines, at, f"unknown magic %{name}; %lsmagic lists them")]
    if name.endswith("?"):
        return []
    if declared.cell and not cell:
        message = (f"%%{name} is a cell magic: put it on the cell's first line, with the program "
                   "below")
        return [_whole_line(lines, at, message)]
    if cell and not declared.cell:
        return [_whole_line(lines, at, f"%{name} is a line magic; %lsmagic lists the cell magics")]
    try:
        parsed = declared.parse(line)
        if name in _LINE_READERS:  # the words after the options, as the magic reads them
            _LINE_READERS[name](declared, parsed)
    except UsageError as exc:
        return [_whole_line(lines, at, str(exc))]
    return []


def _magic_line(lines: list[str], name: str, seen: int) -> int:
    """The 1-based number of the first line after line ``seen`` that starts magic ``name``."""
    start = "%" + name
    for number in range(seen + 1, len(lines) + 1):
        text = lines[number - 1]
        if text.startswith(start) and text[len(start):][:1] in ("", " ", "\\"):
            return number
    return max(seen, 1)


def _check_program(program: str, lines: list[str], names: Collection[str] | None,
                   tools: Collection[str]) -> list[Problem]:
    """The validator's issues, with every free name known when ``names`` is None."""
    known = set(free_names(program)) if names is None else set(names)
    result = validate(program, known | set(tools), protected_names=tools,
                      deadline=time.monotonic() + DEADLINE_S)
    return [_at_issue(lines, issue) for issue in result.issues]


def _at_issue(lines: list[str], issue: Issue) -> Problem:
    """An issue's problem, over the word (or the character) at its place; the whole first
    line when it has none."""
    if not 0 < issue.line <= len(lines):
        return _whole_line(lines, 1, issue.message)
    text = lines[issue.line - 1]
    start = min(max(issue.col, 1), len(text) + 1) - 1
    return Problem(issue.line, start + 1, issue.line, _word_end(text, start) + 1, issue.message)


def _word_end(text: str, start: int) -> int:
    """Where the word that starts at ``start`` ends (at least one character on, within the
    line; at a line's end, the line's end)."""
    end = start
    while end < len(text) and text[end] in _WORD:
        end += 1
    return max(end, min(start + 1, len(text)))


def _whole_line(lines: list[str], number: int, message: str) -> Problem:
    text = lines[number - 1] if 0 < number <= len(lines) else ""
    return Problem(number, 1, number, len(text) + 1, message)

