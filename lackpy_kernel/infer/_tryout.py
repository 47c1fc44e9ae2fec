"""Dry runs of generated programs, and what their failures tell the model.

The dispatcher hands each valid program a model wrote to a :data:`TryoutRunner` (the
service's: the program validated and run under the limits, in the sandbox, its file changes
staged and dropped) and gets a :class:`Tryout` back. :func:`runtime_feedback` turns a
failed tryout, or an answer of the wrong shape, into the errors of one more correction
round: the error and the context that would fix it (for a missing file, the workspace paths
nearest the name asked for; for an unknown key, the keys the value has; what the tools
returned), bounded. Without a model call, :func:`path_repair` fixes a missing file that
can only mean one workspace file (the same path in another case, or the only file of
that name), :func:`literal_repair` a literal the intent does not name where the grounding
check has exactly one candidate for it, and :func:`shape_repair` (which tries
:func:`literal_repair` first) an answer of the wrong shape where the value returned says how
(the size of a list where a number is asked, its first item where one is).
"""

from __future__ import annotations

import ast
import difflib
import io
import json
import re
import reprlib
import tokenize
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from lackpy_kernel.kit import ResolvedKit
from lackpy_kernel.kit.pathmatch import compile_pattern, match_files
from lackpy_kernel.kit.spec import CHILD
from lackpy_kernel.kit.workspace import Workspace
from lackpy_kernel.lang import ALLOWED_BUILTINS

from ._grounding import check_of, grounding_feedback, sure_replacement, ungrounded_literals
from .prompt import FILE_NAME

SHOWN_CHARS = 160  # at most this much of a value in a message to the model
NEAREST_PATHS = 4  # workspace paths offered for a missing file
SHOWN_CALLS = 3  # tool calls whose results are shown
MAX_KEYS = 20  # keys offered for an unknown key
LISTED_PATHS = 2000  # workspace files compared with a missing file's name
READ_GRADE_W = 1  # the highest world coupling a program run outside the sandbox may dry-run
_MISSING_FILE = re.compile(r"no file '(?P<name>[^']*)' in the workspace")
_KEY_ERROR = re.compile(r"^KeyError: (?P<key>'[^']*'|\S+)")
_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = SHOWN_CHARS
_SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxdict = _SHORT.maxset = 12
_SHORT.maxlevel = 3
_REPR_KEY = re.compile(r"[{,]\s*'([^'\\]{1,60})':")
_NAMES_FILE = "the intent names"


@dataclass(frozen=True)
class _Shape:
    """An answer check: an intent that ``asks`` matches wants an output that ``fits`` (given
    the output and the match)."""

    asks: re.Pattern[str]
    fits: Callable[[Any, re.Match[str]], bool]
    wanted: str  # "the intent asks for {wanted}, but ..."; ``{n}``: the match's group "n"
    how: str  # what to return instead


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_collection(value: Any) -> bool:
    return isinstance(value, list | tuple | set | frozenset | dict)


_NUMBER_WORDS = ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def _parts_of(asked: re.Match[str]) -> bool:
    """Whether the intent asks for parts of the one item ("the words of the first line")."""
    return re.search(r"\b\w{2,}s of $", asked.string[:asked.start()], re.IGNORECASE) is not None


def _asked_count(asked: re.Match[str]) -> int:
    """The number of items an intent asks for ("first 3", "top five")."""
    word = asked.group("n").lower()
    return int(word) if word.isdigit() else _NUMBER_WORDS.index(word) + 2


def _at_most(value: Any, asked: re.Match[str]) -> bool:
    """Whether ``value`` is a collection of no more items than the intent's number."""
    return _is_collection(value) and len(value) <= _asked_count(asked)


# The answer checks, in the order they are made (see runtime_feedback); each is fed back once.
SHAPES: dict[str, _Shape] = {
    "number": _Shape(re.compile(r"\b(how many|count|number of|length of)\b", re.IGNORECASE),
                     lambda value, _: _is_number(value), "a number", "len(...), sum(...) or count(...)"),
    "truth": _Shape(re.compile(r"^\s*(does|do|is|are|has|have|can)\b", re.IGNORECASE),
                    lambda value, _: isinstance(value, bool), "yes or no",
                    "True or False: a test such as 'word' in text, or a comparison"),
    "many": _Shape(re.compile(r"^\s*(which|list|find all)\b", re.IGNORECASE),
                   lambda value, _: _is_collection(value) or isinstance(value, str), "the items that match",
                   "a list of them"),
    "one": _Shape(re.compile(r"\bthe (first|last|second|third|header|top|final|longest|shortest) "
                             r"(line|word|row|entry|item|name|file)\b(?!s)", re.IGNORECASE),
                  lambda value, asked: not _is_collection(value) or _parts_of(asked), "one item",
                  "the one item, by its index (items[0], items[-1]) or max(...)/min(...)"),
    "few": _Shape(re.compile(rf"\b(first|last|top) (?P<n>\d+|{'|'.join(_NUMBER_WORDS)}) \w+s\b",
                             re.IGNORECASE),
                  _at_most, "at most {n} items", "a list of them, a slice such as items[:{n}]"),
}
ANSWER_CHECKS = frozenset({*SHAPES, "file", "folder", "operation", "words"})  # see runtime_feedback
# The methods whose first argument is a text a program looks for ("words", see runtime_feedback)
NEEDLE_METHODS = frozenset({"count", "startswith", "endswith", "find", "rfind", "index", "rindex"})
_LETTERS = re.compile(r"[a-z]{2,}")
_LOOKS_FOR = "the program looks for"
_LOOKS_IN = "the program looks in the folder"
SHOWN_FOLDERS = 12  # workspace folders offered for one that is not there


@dataclass(frozen=True)
class ToolCallSeen:
    """One tool call of a dry run: ``shown`` is the call as text, ``result`` its value."""

    shown: str
    result: Any = None
    success: bool = True


@dataclass(frozen=True)
class Tryout:
    """What the dry run of one program did.

    ``skipped`` says why it was not run (a tool that cannot be staged; the program then
    counts as passing); ``paths`` are the workspace's files, for the hints;
    ``trace`` the run's trace as plain data, for the person to see (``%trace``).
    """

    success: bool
    output: Any = None
    error: str | None = None
    calls: tuple[ToolCallSeen, ...] = ()
    paths: tuple[str, ...] = ()
    skipped: str | None = None
    trace: Mapping[str, Any] | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """What the attempts log keeps of it: plain data, bounded."""
        return {"success": self.success, "skipped": self.skipped, "error": self.error,
                "output": shown(self.output) if self.success else None}


TryoutRunner = Callable[[str], Awaitable[Tryout]]


class _Entry(Protocol):
    @property
    def tool(self) -> str: ...

    @property
    def args(self) -> Mapping[str, Any]: ...

    @property
    def result(self) -> Any: ...

    @property
    def success(self) -> bool: ...


class _Trace(Protocol):
    @property
    def entries(self) -> Sequence[_Entry]: ...

    def to_dict(self) -> dict[str, Any]: ...


class RunResult(Protocol):
    """What a run returns (``lackpy_kernel.run.ExecutionResult``), as far as a tryout reads it."""

    @property
    def success(self) -> bool: ...

    @property
    def output(self) -> Any: ...

    @property
    def error(self) -> str | None: ...

    @property
    def trace(self) -> _Trace: ...


def tryout_of(result: RunResult, workspace: str | None = None) -> Tryout:
    """The tryout of a finished dry run, with ``workspace``'s files (for the hints)."""
    calls = tuple(ToolCallSeen(_call_text(entry.tool, entry.args), entry.result, entry.success)
                  for entry in result.trace.entries)
    paths = tuple(workspace_files(workspace)) if workspace else ()
    return Tryout(result.success, result.output, result.error, calls, paths,
                  trace=result.trace.to_dict())


def not_dry_runnable(calls: Iterable[str], kit: ResolvedKit, *, sandboxed: bool) -> str | None:
    """Why a program calling ``calls`` is not dry-run, or None: in the sandbox, a tool graded
    above read that runs outside the program's process (its effect cannot be staged);
    outside the sandbox, any tool graded above read."""
    for name in sorted(set(calls)):
        spec = kit.tools.get(name)
        if spec is None or spec.grade_w <= READ_GRADE_W:
            continue
        if not sandboxed:
            return f"it calls {name}, which may change things, and programs run without the sandbox"
        if spec.where != CHILD:
            return f"it calls {name}, which acts outside the sandbox and cannot be staged"
    return None


def workspace_files(root: str) -> list[str]:
    """Up to ``LISTED_PATHS`` of the workspace's files, workspace-relative; [] when unreadable."""
    try:
        return match_files(Workspace(root), compile_pattern("**/*"), LISTED_PATHS)
    except (OSError, ValueError):
        return []


def _call_text(tool: str, args: Mapping[str, Any]) -> str:
    return f"{tool}({', '.join(shown(value) for value in args.values())})"


def runtime_feedback(intent: str, tryout: Tryout, *, checks: Collection[str] = ANSWER_CHECKS,
                     program: str = "") -> list[str]:
    """The errors one more correction round shows the model; ``[]`` when the program passed.

    A failure gives its error and the context that would fix it. Of the answer ``checks``
    of a program that ran (:data:`SHAPES`, then ``"file"``), the first that fails gives
    its error: ``"number"``, a non-number for an intent that asks "how many", "count",
    "number of" or "length of"; ``"truth"``, a non-bool for a yes/no question ("does",
    "is", ...); ``"many"``, a number or a bool for "which", "list" or "find all";
    ``"one"``, a list for "the first/last/longest/... line" (or word, row, name, file);
    ``"few"``, anything but a list of at most N items for "the first/last/top N ...s";
    ``"file"``, a ``program`` that neither names nor reads a workspace file the intent names;
    ``"folder"``, a pattern that looks in a folder the workspace does not have
    (:func:`absent_folders`); ``"operation"``, a ``program`` that counts, cases, picks an end or
    an extreme other than the intent names, and ``"words"``, one whose literals (files, patterns,
    names, texts) the intent does not name, with its candidates (:mod:`._grounding`), then one that
    looks for a word the intent does not use (:func:`unasked_needles`).
    """
    if tryout.skipped is not None:
        return []
    if not tryout.success:
        error = " ".join((tryout.error or "the program failed").split())
        return [f"the program ran and failed: {error}", *_hints(error, tryout)]
    for name, shape in SHAPES.items():
        asked = shape.asks.search(intent) if name in checks else None
        if asked is not None and not shape.fits(tryout.output, asked):
            named = asked.groupdict()
            return [f"the intent asks for {shape.wanted.format_map(named)}, but the program returned "
                    f"{type(tryout.output).__name__} {shown(tryout.output)}; "
                    f"return {shape.how.format_map(named)}"]
    unread = unread_files(intent, program, tryout) if "file" in checks else []
    if unread:
        path = meant_path(unread[0], tryout.paths) or unread[0]
        return [f"{_NAMES_FILE} {unread[0]!r}, but the program never reads it; "
                f"read_file({path!r}) gives its text"]
    absent = absent_folders(program, tryout.paths) if "folder" in checks and tryout.paths else []
    if absent:
        folders = sorted({path.split("/", 1)[0] for path in tryout.paths if "/" in path})
        return [f"{_LOOKS_IN} {absent[0]!r}, which the workspace does not have; its folders: "
                f"{', '.join(folders[:SHOWN_FOLDERS]) or 'none'}"]
    grounding = grounding_feedback(intent, program, tryout.paths, checks)  # "operation", "words"
    if grounding:
        return grounding
    unasked = unasked_needles(intent, program) if "words" in checks else []
    if unasked:
        return [f"{_LOOKS_FOR} {unasked[0]!r}, which the intent does not mention; "
                "look for what the intent asks about"]
    return []


def unasked_needles(intent: str, program: str) -> list[str]:
    """What ``program`` looks for that the intent does not ask about, outside the names of
    files: a text it searches for (``'x' in text``, ``text.count('x')`` and the other
    :data:`NEEDLE_METHODS`), or a name it gives a tool first (``find_callers('Config')``), with a
    word of two or more letters the intent does not use. A small model copies such words
    from its examples ('TODO', 'error', 'Config') or from a file's name ('note' for
    notes.txt). (A file type in a pattern is not checked: ``'tests/**/*.py'`` for "the files
    in tests" is often right.)"""
    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError):
        return []
    said = FILE_NAME.sub(" ", intent.lower())
    found = [needle for node in ast.walk(tree) for needle in _needles(node)
             if any(word not in said for word in _LETTERS.findall(needle.lower()))]
    return list(dict.fromkeys(found))


def absent_folders(program: str, paths: Iterable[str]) -> list[str]:
    """The folders that the patterns ``program`` gives its tools (``'config/**/*.json'``)
    look in and no path of ``paths`` (the workspace's files) is under."""
    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError):
        return []
    folders = {path.rsplit("/", 1)[0] for path in paths if "/" in path}
    found = []
    for pattern in _tool_texts(tree):
        fixed = pattern.split("*", 1)[0].rsplit("/", 1)[0] if "*" in pattern and "/" in pattern else ""
        if fixed and not any(folder == fixed or folder.startswith(fixed + "/") for folder in folders):
            found.append(fixed)
    return list(dict.fromkeys(found))


def _needles(node: ast.AST) -> list[str]:
    """The constant texts ``node`` looks for, if it is a search, or the names it gives a tool."""
    if (isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.In | ast.NotIn)
            and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str)):
        return [node.left.value]
    if not isinstance(node, ast.Call) or (first := _first_text(node)) is None:
        return []
    if isinstance(node.func, ast.Attribute) and node.func.attr in NEEDLE_METHODS:
        return [first]
    if _is_tool_call(node) and first.isidentifier():  # the name a tool looks for
        return [first]
    return []


def _first_text(call: ast.Call) -> str | None:
    """The first argument of ``call`` when it is a constant text."""
    first = call.args[0] if call.args else None
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


def _is_tool_call(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id not in ALLOWED_BUILTINS)


def _texts(node: ast.AST) -> list[str]:
    """The constant text arguments of the call ``node``."""
    assert isinstance(node, ast.Call)
    return [arg.value for arg in node.args if isinstance(arg, ast.Constant) and isinstance(arg.value, str)]


def _tool_texts(tree: ast.AST) -> list[str]:
    """The constant text arguments of the tool calls in ``tree``."""
    return [text for node in ast.walk(tree) if _is_tool_call(node) for text in _texts(node)]


def unread_files(intent: str, program: str, tryout: Tryout) -> list[str]:
    """The workspace files ``intent`` names (a path or a bare file name, as written) that
    the program neither names nor passed to a tool."""
    files = set(tryout.paths)
    bare = {path.rsplit("/", 1)[-1] for path in files}
    named = [name for name in dict.fromkeys(FILE_NAME.findall(intent)) if name in files or name in bare]
    used = " ".join([program, *(call.shown for call in tryout.calls)])
    return [name for name in named if name not in used]


def answer_check(errors: Sequence[str]) -> str | None:
    """Which answer check gave ``errors`` (each is fed back once only), or None."""
    first = errors[0] if errors else ""
    if check_of(first) is not None:
        return check_of(first)
    if first.startswith(_NAMES_FILE):
        return "file"
    if first.startswith(_LOOKS_FOR):
        return "words"
    if first.startswith(_LOOKS_IN):
        return "folder"
    return next((name for name, shape in SHAPES.items()
                 if first.startswith(f"the intent asks for {shape.wanted.split('{')[0]}")), None)


def _hints(error: str, tryout: Tryout) -> list[str]:
    missing = _MISSING_FILE.search(error)
    if missing is not None:
        near = nearest_paths(missing.group("name"), tryout.paths)
        hint = (f"files in the workspace nearest {missing.group('name')!r}: {', '.join(near)}"
                if near else "the workspace has no such file; find_files('**/*') lists them")
        return [hint, *_returned(tryout.calls)]
    key = _KEY_ERROR.match(error)
    if key is not None:
        keys = _keys_seen(tryout.calls)
        if keys:
            return [f"there is no key {key.group('key')}; the keys are: {', '.join(keys)}"]
    return _returned(tryout.calls)


def path_repair(program: str, tryout: Tryout) -> tuple[str, str] | None:
    """``program`` with the string literal of a missing file replaced by the one workspace
    path it can mean (:func:`meant_path`), and a note saying so; None when the tryout did
    not fail for a missing file, no single path is meant, or no literal names it."""
    missing = None if tryout.success else _MISSING_FILE.search(tryout.error or "")
    if missing is None:
        return None
    name = missing.group("name")
    path = meant_path(name, tryout.paths)
    repaired = None if path is None else _replace_literal(program, name, path)
    if path is None or repaired is None:
        return None
    return repaired, f"read {path!r} for the missing {name!r}, the only workspace file it can mean"


def literal_repair(intent: str, program: str, tryout: Tryout) -> tuple[str, str] | None:
    """``program`` with a literal the intent does not name (:func:`._grounding.ungrounded_literals`:
    a copied ``find_callers('resolve_kit')`` for "which functions call format_row") written as
    the one candidate the grounding check has for it (:func:`._grounding.sure_replacement`), and a
    note saying so; None when the program was not run or no loose literal has exactly one sure
    candidate (two or more are sent back to the model, as the ``"words"`` check says them)."""
    if tryout.skipped is not None:
        return None
    for item in ungrounded_literals(intent, program, tryout.paths):
        replacement = sure_replacement(item, intent, tryout.paths)
        repaired = None if replacement is None else _replace_literal(program, *replacement)
        if replacement is not None and repaired is not None:
            return repaired, (f"wrote {replacement[1]!r} for {replacement[0]!r} without a model call: "
                              f"the intent does not name the {item.what} {item.literal!r} and names "
                              "only that")
    return None


def shape_repair(intent: str, program: str, tryout: Tryout) -> tuple[str, str] | None:
    """A literal of ``program`` the intent does not name written as its one candidate
    (:func:`literal_repair`), or else ``program`` with its last expression made the shape the
    intent asks for, where the value it returned says how, and a note saying so; None when
    there is no loose literal with one candidate, the answer's shape is right or no repair is
    sure (:data:`SHAPE_REPAIRS`).

    A number is the size of the collection returned (a text's length when the intent asks
    for characters or a length); one item is picked by the intent's word (``first``:
    ``[0]``, ``last``: ``[-1]``, ``longest``: ``max(..., key=len)``); the first or last N
    items are a slice. A text that should be a number of lines or words, a non-empty list
    for a yes/no question and the like go back to the model instead.
    """
    literal = literal_repair(intent, program, tryout)
    if literal is not None:
        return literal
    if tryout.skipped is not None or not tryout.success:
        return None
    for name, shape in SHAPES.items():
        asked = shape.asks.search(intent)
        if asked is None or shape.fits(tryout.output, asked):
            continue
        wrap = _shape_wrap(name, asked, tryout.output, intent)
        if wrap is None:
            return None
        repaired = _wrap_result(program, *wrap)
        if repaired is None:
            return None
        wanted, kind = shape.wanted.format_map(asked.groupdict()), type(tryout.output).__name__
        return repaired, (f"made the answer {wanted} without a model call: "
                          f"{wrap[0]}...{wrap[1]} of the {kind} the program returned")
    return None


# Where one item of a list is, by the intent's word for it (see shape_repair).
SHAPE_REPAIRS: dict[str, tuple[str, str]] = {
    "first": ("", "[0]"), "header": ("", "[0]"), "top": ("", "[0]"), "second": ("", "[1]"),
    "third": ("", "[2]"), "last": ("", "[-1]"), "final": ("", "[-1]"),
    "longest": ("max(", ", key=len)"), "shortest": ("min(", ", key=len)"),
}
_ASKS_LENGTH = re.compile(r"\b(characters?|letters?|length)\b", re.IGNORECASE)
_SIZED = (list, tuple, set, frozenset, dict)


def _shape_wrap(name: str, asked: re.Match[str], output: Any, intent: str) -> tuple[str, str] | None:
    """The text around the last expression that gives the ``name`` shape, or None."""
    if name == "number" and (isinstance(output, _SIZED)
                             or isinstance(output, str) and _ASKS_LENGTH.search(intent)):
        return "len(", ")"
    if not isinstance(output, list | tuple) or not output:
        return None
    word = asked.group(1).lower()
    if name == "one" and word in SHAPE_REPAIRS:
        before, after = SHAPE_REPAIRS[word]
        index = re.fullmatch(r"\[(-?\d)\]", after)
        if index is not None and int(index.group(1)) >= len(output):
            return None
        if before and not all(isinstance(item, str | list | tuple | dict) for item in output):
            return None
        return before, after
    if name == "few":
        n = _asked_count(asked)
        return ("", f"[-{n}:]") if word == "last" else ("", f"[:{n}]")
    return None


# Expressions that take a subscript as they are written; any other is put in parentheses first.
_ATOMS = (ast.Name, ast.Call, ast.Subscript, ast.Attribute, ast.List, ast.ListComp, ast.Dict,
          ast.DictComp, ast.Set, ast.SetComp, ast.Tuple, ast.Constant, ast.JoinedStr)


def _wrap_result(program: str, before: str, after: str) -> str | None:
    """``program`` with its last statement, an expression, written ``before + it + after``;
    None when the last statement is not an expression."""
    try:
        body = ast.parse(program).body
    except (SyntaxError, ValueError):
        return None
    if not body or not isinstance(body[-1], ast.Expr):
        return None
    node = body[-1].value
    lines = io.StringIO(program).readlines()
    start, end = _span(lines, node)
    if after == "[0]" and not before and _head_slice(node):  # lines[:5] -> lines[0], not lines[:5][0]
        assert isinstance(node, ast.Subscript)
        node = node.value
    text = program[slice(*_span(lines, node))]
    if after.startswith("[") and not before and not isinstance(node, _ATOMS):
        text = f"({text})"
    return program[:start] + before + text + after + program[end:]


def _head_slice(node: ast.expr) -> bool:
    """Whether ``node`` is ``items[:n]`` (or ``items[0:n]``) with a literal ``n`` above 0, whose
    first item is ``items[0]``."""
    if not isinstance(node, ast.Subscript) or not isinstance(node.slice, ast.Slice):
        return False
    lower, upper, step = node.slice.lower, node.slice.upper, node.slice.step
    return (step is None and (lower is None or isinstance(lower, ast.Constant) and lower.value == 0)
            and isinstance(upper, ast.Constant) and type(upper.value) is int and upper.value > 0)


def _span(lines: Sequence[str], node: ast.expr) -> tuple[int, int]:
    """Where ``node`` starts and ends in the text of ``lines``."""
    return (_offset(lines, node.lineno, node.col_offset),
            _offset(lines, node.end_lineno or node.lineno, node.end_col_offset or 0))


def _offset(lines: Sequence[str], lineno: int, col: int) -> int:
    """The text offset of ``col`` (UTF-8 bytes, as ``ast`` counts) on line ``lineno``."""
    return sum(map(len, lines[:lineno - 1])) + len(lines[lineno - 1].encode()[:col].decode(errors="ignore"))


def meant_path(name: str, paths: Iterable[str]) -> str | None:
    """The one workspace path ``name`` means: the same path in another case or, for a bare
    file name, the only file of that name in any folder (case ignored); None when there is
    none or more than one."""
    paths = list(paths)
    wanted = name.lower()
    same = [path for path in paths if path.lower() == wanted]
    if not same and "/" not in name:
        same = [path for path in paths if path.rsplit("/", 1)[-1].lower() == wanted]
    return same[0] if len(same) == 1 else None


def _replace_literal(program: str, old: str, new: str) -> str | None:
    """``program`` with each string literal whose value is ``old`` written as ``new``
    (the rest of the text as it was); None when no literal is ``old`` or it does not tokenize."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(program).readline))
    except (tokenize.TokenError, SyntaxError):
        return None
    lines = program.splitlines(keepends=True)
    found = [token for token in tokens if token.type == tokenize.STRING and _value(token.string) == old]
    for token in reversed(found):  # from the end, so earlier positions still hold
        (row, start), (end_row, end) = token.start, token.end
        if row != end_row:
            continue
        line = lines[row - 1]
        lines[row - 1] = line[:start] + repr(new) + line[end:]
    text = "".join(lines)
    return text if found and text != program else None


def _value(literal: str) -> object:
    try:
        return ast.literal_eval(literal)
    except (ValueError, SyntaxError):
        return None


def nearest_paths(name: str, paths: Iterable[str]) -> list[str]:
    """The workspace paths most like ``name`` (by the whole path and by the file's name)."""
    scored: list[tuple[float, str]] = []
    for path in paths:
        base, wanted = path.rsplit("/", 1)[-1], name.rsplit("/", 1)[-1]
        score = max(difflib.SequenceMatcher(None, name, path).ratio(),
                    difflib.SequenceMatcher(None, wanted, base).ratio())
        score += 0.5 if _stem(base) == _stem(wanted) else 0.0
        scored.append((score, path))
    scored.sort(key=lambda item: (-item[0], item[1]))
    return [path for _, path in scored[:NEAREST_PATHS]]


def _stem(name: str) -> str:
    return name.split(".", 1)[0].lower()


def _returned(calls: Sequence[ToolCallSeen]) -> list[str]:
    done = [call for call in calls if call.success][-SHOWN_CALLS:]
    if not done:
        return []
    return ["the tools returned: " + "; ".join(f"{call.shown} -> {shown(call.result)}"
                                               for call in done)]


def _keys_seen(calls: Sequence[ToolCallSeen]) -> list[str]:
    """The keys of the last dict a tool returned (or of the first dict in its list); a trace
    keeps big results as their bounded repr, whose keys are read back from the text."""
    for call in reversed(calls):
        result = call.result
        if isinstance(result, list) and result:
            result = result[0]
        if isinstance(result, Mapping):
            return [repr(key) for key in list(result)[:MAX_KEYS]]
        if isinstance(result, str):
            keys = list(dict.fromkeys(_REPR_KEY.findall(result[:SHOWN_CHARS * 4])))[:MAX_KEYS]
            if keys:
                return [f"'{key}'" for key in keys]
    return []


def shown(value: Any) -> str:
    """``value`` as short Python text for a prompt or a log (at most ``SHOWN_CHARS``
    characters; big containers and strings are cut before they are written out)."""
    text = _SHORT.repr(value)
    return text if len(text) <= SHOWN_CHARS else text[:SHOWN_CHARS - 3] + "..."


def output_key(value: Any) -> str:
    """A key that groups equal outputs (samples that agree)."""
    try:
        return json.dumps(value, sort_keys=True, default=repr)
    except (TypeError, ValueError, RecursionError):
        return repr(value)
