"""Grounding: a program's literals and operations come from the intent, not from an example.

A small model copies what its prompt's examples do: ``find_callers('resolve_kit')`` for "which
functions call format_row", ``read_file('team.txt')`` for a question about ``src/report.py``,
``len(text)`` for "how many lines", ``.lower()`` for "in upper case". Two checks of a program that
ran, each a message for one more correction round (see :func:`._tryout.runtime_feedback`):

- :func:`ungrounded_literals` (the ``"words"`` check, which it generalises): each literal the
  program gives a tool or looks for (a file it reads, a pattern's folder and file type, a name it
  asks about, a text it searches for) must appear in the intent or, for a file, in the workspace;
  the message offers the intent's own candidates;
- :func:`operation_mismatches` (the ``"operation"`` check): the operation the intent names (count
  lines, characters or words; upper or lower case; the first or the last; the longest or the
  shortest) must be the one the program does.

Where a loose literal has exactly one candidate, :func:`sure_replacement` says what to write
instead, and :func:`._tryout.literal_repair` writes it without a model call.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass

from .prompt import FILE_NAME

LOOKS_UNGROUNDED = "the program uses"
LOOKS_FOR = "the program looks for"
ASKS_OPERATION = "the intent asks to"
SHOWN_CANDIDATES = 4
# The methods whose first argument is a text the program looks for
_NEEDLE_METHODS = frozenset({"count", "startswith", "endswith", "find", "rfind", "index", "rindex"})
_SYMBOL_TOOLS = frozenset({"find_definitions", "find_callers"})
_FILE_TOOLS = frozenset({"read_file"})
_PATTERN_TOOLS = frozenset({"find_files"})
_WORD = re.compile(r"[A-Za-z_][\w]*")
# Words of an intent that are never what it asks about
_STOP = frozenset("""a an the of in on at to for from by with without and or not no is are was be
does do did has have had what which who whom whose where when how many much number count list show
give me my find get return print tell all every each any some file files folder line lines word words
character characters char chars letter letters text it its this that these those there their them
called call calls caller callers function functions class classes defined define defines definition
please name names first last one two three yes contain contains containing mention mentions
mentioned use used uses using appear appears times occur occurs often anywhere somewhere project
workspace under into about up whole only just thing kind""".split())
# Words an intent names a file type with, and the extension each means
_TYPES = {"python": "py", "py": "py", "markdown": "md", "md": "md", "txt": "txt", "text": "txt",
          "csv": "csv", "json": "json", "toml": "toml", "yaml": "yaml", "yml": "yml"}


@dataclass(frozen=True)
class Ungrounded:
    """A literal of the program that neither the intent nor the workspace has, and what it
    could have been (``candidates``, best first)."""

    literal: str
    what: str  # "file", "folder", "file type", "name" or "text"
    candidates: tuple[str, ...] = ()
    written: str = ""  # the whole text literal it is part of, where that is not ``literal`` (a pattern)

    def message(self) -> str:
        offered = (f"; the intent's own: {', '.join(repr(c) for c in self.candidates)}"
                   if self.candidates else "; use what the intent names")
        if self.what == "text":  # as the "words" check of _tryout says it
            return f"{LOOKS_FOR} {self.literal!r}, which the intent does not mention{offered}"
        return (f"{LOOKS_UNGROUNDED} the {self.what} {self.literal!r}, which the intent does not "
                f"name{offered}")


def grounding_feedback(intent: str, program: str, paths: Iterable[str],
                       checks: Collection[str]) -> list[str]:
    """The message of the first grounding check of ``checks`` that ``program`` fails (``"operation"``,
    then ``"words"``), or ``[]``."""
    if "operation" in checks:
        mismatch = operation_mismatches(intent, program)
        if mismatch:
            return [mismatch[0]]
    if "words" in checks:
        loose = ungrounded_literals(intent, program, paths)
        if loose:
            return [loose[0].message()]
    return []


# A literal this like its one candidate is taken for the model's spelling of it (an intent's typo
# set right, another case): sent back, never replaced.
SAME_SPELLING = 0.8


def sure_replacement(item: Ungrounded, intent: str, paths: Collection[str]) -> tuple[str, str] | None:
    """The text literal of the program to replace and what to write instead, where ``item`` (a
    loose literal of a program for ``intent``) has exactly one candidate and it is sure: a
    workspace file for a file; not the literal in another case or spelling; for a folder or a
    file type, the candidate is the whole pattern, and a folder's (which looks everywhere) only
    where the intent names no folder of the workspace ``paths``. None otherwise (the literal is
    sent back with its candidates)."""
    if len(item.candidates) != 1:
        return None
    new = item.candidates[0]
    if item.what == "file" and new not in paths:
        return None
    folders = {part.lower() for path in paths for part in path.split("/")[:-1]}
    if item.what == "folder" and folders & set(_WORD.findall(intent.lower())):
        return None
    if item.what in {"file", "name", "text"} and (
            difflib.SequenceMatcher(None, item.literal.lower(), new.lower()).ratio() >= SAME_SPELLING):
        return None
    old = item.written or item.literal
    return (old, new) if old != new else None


def check_of(message: str) -> str | None:
    """Which check gave ``message`` (each is sent back once), or None."""
    if message.startswith((LOOKS_UNGROUNDED, LOOKS_FOR)):
        return "words"
    if message.startswith(ASKS_OPERATION):
        return "operation"
    return None


# --- literals ---------------------------------------------------------------------------------------

def ungrounded_literals(intent: str, program: str, paths: Iterable[str]) -> list[Ungrounded]:
    """The literals ``program`` gives a tool or looks for that the intent does not name (see the
    module); ``paths`` are the workspace's files."""
    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError):
        return []
    files = list(paths)
    said = intent.lower()
    words = set(_WORD.findall(said))
    named_files = [name for name in dict.fromkeys(FILE_NAME.findall(intent)) if "." in name]
    found: list[Ungrounded] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call | ast.Compare):
            continue
        if isinstance(node, ast.Compare):
            needle = _compared_text(node)
            if needle is not None and not _said(needle, said):
                found.append(Ungrounded(needle, "text", _texts_of(intent)))
            continue
        first = _first_text(node)
        if first is None:
            continue
        tool = node.func.id if isinstance(node.func, ast.Name) else None
        if tool in _SYMBOL_TOOLS and first not in intent:
            found.append(Ungrounded(first, "name", _symbols_of(intent)))
        elif tool in _FILE_TOOLS:
            loose = _loose_file(first, said, words, named_files, files)
            if loose is not None:
                found.append(loose)
        elif tool in _PATTERN_TOOLS:
            found.extend(Ungrounded(item.literal, item.what, item.candidates, first)
                         for item in _loose_pattern(first, words))
        elif (isinstance(node.func, ast.Attribute) and node.func.attr in _NEEDLE_METHODS
              and first.strip() and not _said(first, said)):
            found.append(Ungrounded(first, "text", _texts_of(intent)))
    return list({(item.literal, item.what): item for item in found}.values())


def _said(needle: str, said: str) -> bool:
    """Whether the text ``needle`` looks for is in the intent (``said``, lower case), as written or
    as the words that name it (``def`` for "functions", ``#`` for "headings")."""
    plain = needle.strip().lower()
    if not plain or plain in said or plain.rstrip("s") in said:
        return True
    return any(word in said for word in _NAMED_BY.get(plain.split()[0], ()))


_NAMED_BY = {"def": ("function", "method"), "async": ("function", "method"), "class": ("class",),
             "import": ("import",), "#": ("heading", "title", "header"), "##": ("heading", "section")}


def _loose_file(path: str, said: str, words: set[str], named: Sequence[str],
                files: Sequence[str]) -> Ungrounded | None:
    base = path.rsplit("/", 1)[-1].lower()
    if path.lower() in said or base in said:
        return None
    if named:
        return Ungrounded(path, "file", tuple(_best_paths(named, files)))
    stem, _, extension = base.rpartition(".")
    if stem in words or extension in words or _TYPES.get(extension, "") in {_TYPES.get(w) for w in words}:
        return None
    fitting = [f for f in files if f.rsplit("/", 1)[-1].rsplit(".", 1)[0].lower() in words
               or f.rsplit(".", 1)[-1].lower() in {_TYPES.get(w) for w in words}]
    return Ungrounded(path, "file", tuple(fitting[:SHOWN_CANDIDATES]))


def _best_paths(named: Sequence[str], files: Sequence[str]) -> list[str]:
    """The workspace paths of the files the intent names (as written where there are none)."""
    out = []
    for name in named:
        same = [f for f in files if f == name or f.rsplit("/", 1)[-1] == name.rsplit("/", 1)[-1]]
        out.extend(same or [name])
    return list(dict.fromkeys(out))[:SHOWN_CANDIDATES]


def _loose_pattern(pattern: str, words: set[str]) -> list[Ungrounded]:
    """A pattern's fixed folders the intent does not name, and a file type other than the one
    it names."""
    found = []
    parts = pattern.split("/")
    folders = [p for p in parts[:-1] if p and "*" not in p and "?" not in p and "[" not in p]
    for folder in folders:
        if folder.lower() not in words:
            found.append(Ungrounded(folder, "folder", (_pattern(parts[-1], []),)))
    asked = {_TYPES[w] for w in words if w in _TYPES}
    extension = parts[-1].rsplit(".", 1)[-1].lower() if "." in parts[-1] else ""
    if asked and extension and "*" not in extension and extension not in asked:
        keep = [f for f in folders if f.lower() in words]
        found.append(Ungrounded(extension, "file type",
                                tuple(_pattern(f"*.{e}", keep) for e in sorted(asked))))
    return found


def _pattern(last: str, folders: Sequence[str]) -> str:
    return "/".join([*folders, "**", last]) if folders else f"**/{last}"


def _compared_text(node: ast.Compare) -> str | None:
    if (isinstance(node.ops[0], ast.In | ast.NotIn) and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str) and node.left.value.strip()):
        return node.left.value
    return None


def _first_text(call: ast.Call) -> str | None:
    first = call.args[0] if call.args else None
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


def _symbols_of(intent: str) -> tuple[str, ...]:
    """The names the intent asks about, best first: snake_case and CamelCase words, then the rest."""
    bare = FILE_NAME.sub(" ", intent)
    words = [w for w in dict.fromkeys(_WORD.findall(bare)) if w.lower() not in _STOP]
    code_like = [w for w in words if "_" in w or any(c.isupper() for c in w[1:]) or w[0].isupper()]
    return tuple([*code_like, *[w for w in words if w not in code_like]][:SHOWN_CANDIDATES])


def _texts_of(intent: str) -> tuple[str, ...]:
    """The texts the intent could be looking for, best first: quoted ones, then its other words."""
    quoted = re.findall(r"""['"]([^'"]+)['"]""", intent)
    return tuple(dict.fromkeys([*quoted, *_symbols_of(intent)]))[:SHOWN_CANDIDATES]


# --- operations ---------------------------------------------------------------------------------

_COUNTED = re.compile(
    r"\b(?:how\s+many|count(?:\s+(?:the|of|all))?|cout|numb?er\s+of|nubmer\s+of)\s+(?:\w+\s+){0,2}?"
    r"(?P<unit>lines?|rows?|characters?|chars?|words?|wrods?)\b"
    r"|\b(?P<unit2>line|character|char|word)\s+count\b"
    r"|\bin\s+(?P<unit3>characters|chars)\b", re.IGNORECASE)
_UPPER = re.compile(r"\b(upper[\s-]?case|upper|capital(?:s| letters)?|shout)\b", re.IGNORECASE)
_LOWER = re.compile(r"\b(lower[\s-]?case|lower)\b", re.IGNORECASE)
_FIRST = re.compile(r"\b(first|frist|opening|top|head)\b", re.IGNORECASE)
_LAST = re.compile(r"\b(last|lsat|final|bottom|tail|ending)\b", re.IGNORECASE)
_MOST = re.compile(r"\b(longest|biggest|largest|oldest|most|highest|maximum)\b", re.IGNORECASE)
_LEAST = re.compile(r"\b(shortest|smallest|youngest|least|lowest|minimum)\b", re.IGNORECASE)


def operation_mismatches(intent: str, program: str) -> list[str]:
    """Messages for each operation the intent names and ``program`` does not do (see the module)."""
    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError):
        return []
    methods = {node.func.attr: node for node in ast.walk(tree)
               if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)}
    names = {node.func.id for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    found = []
    counted = _COUNTED.search(intent)
    if counted is not None:
        unit = (counted.group("unit") or counted.group("unit2") or counted.group("unit3")).lower()
        wrong = _count_mismatch(unit, methods, tree)
        if wrong:
            found.append(wrong)
    upper, lower = _UPPER.search(intent), _LOWER.search(intent)
    if upper and not lower and "lower" in methods and "upper" not in methods:
        found.append(f"{ASKS_OPERATION} make the text upper case, but the program calls .lower(); "
                     "use .upper()")
    if lower and not upper and "upper" in methods and "lower" not in methods:
        found.append(f"{ASKS_OPERATION} make the text lower case, but the program calls .upper(); "
                     "use .lower()")
    first, last = _FIRST.search(intent), _LAST.search(intent)
    ends = _ends(tree)
    if first and not last and "last" in ends and "first" not in ends:
        found.append(f"{ASKS_OPERATION} take the {first.group(1).lower()} ones, but the program takes "
                     "from the end ([-1], [-n:]); take from the start: items[0], items[:n]")
    if last and not first and "first" in ends and "last" not in ends:
        found.append(f"{ASKS_OPERATION} take the {last.group(1).lower()} ones, but the program takes "
                     "from the start ([0], [:n]); take from the end: items[-1], items[-n:]")
    most, least = _MOST.search(intent), _LEAST.search(intent)
    if most and not least and "min" in names and "max" not in names:
        found.append(f"{ASKS_OPERATION} find the {most.group(1).lower()}, but the program calls min(); "
                     "use max()")
    if least and not most and "max" in names and "min" not in names:
        found.append(f"{ASKS_OPERATION} find the {least.group(1).lower()}, but the program calls max(); "
                     "use min()")
    return found


def _count_mismatch(unit: str, methods: dict[str, ast.Call], tree: ast.AST) -> str | None:
    """What the program counts where the intent counts another ``unit``; None when it counts
    nothing (an answer that is not a number is the shape checks' business)."""
    if not _counts(tree) and "count" not in methods:
        return None
    splits_lines = "splitlines" in methods or _splits_on_newline(methods) or _counts_newlines(methods)
    splits_words = "split" in methods and not methods["split"].args
    counts_text = "count" in methods
    if unit.startswith(("line", "row")):
        if not splits_lines and not counts_text:
            did = "words (.split())" if splits_words else "characters (len of the text)"
            return (f"{ASKS_OPERATION} count lines, but the program counts {did}; "
                    "len(text.splitlines()) is the number of lines")
    elif unit.startswith(("word", "wrod")):
        if not splits_words and not counts_text:
            did = "lines (.splitlines())" if splits_lines else "characters (len of the text)"
            return (f"{ASKS_OPERATION} count words, but the program counts {did}; "
                    "len(text.split()) is the number of words")
    elif (splits_lines or splits_words) and not counts_text and _len_of_split(tree):
        did = "lines" if splits_lines else "words"
        return (f"{ASKS_OPERATION} count characters, but the program counts {did}; "
                "len(text) is the number of characters")
    return None


def _counts(tree: ast.AST) -> bool:
    """Whether the program takes ``len`` or ``sum`` of something."""
    return any(isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
               and node.func.id in {"len", "sum"} for node in ast.walk(tree))


def _splits_on_newline(methods: dict[str, ast.Call]) -> bool:
    call = methods.get("split")
    return bool(call and call.args and isinstance(call.args[0], ast.Constant) and call.args[0].value == "\n")


def _counts_newlines(methods: dict[str, ast.Call]) -> bool:
    call = methods.get("count")
    return bool(call and call.args and isinstance(call.args[0], ast.Constant) and call.args[0].value == "\n")


def _len_of_split(tree: ast.AST) -> bool:
    """Whether the program takes ``len`` of a split text (which counts lines or words, not characters)."""
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len"
                and node.args and isinstance(node.args[0], ast.Call)
                and isinstance(node.args[0].func, ast.Attribute)
                and node.args[0].func.attr in {"split", "splitlines"}):
            return True
    return False


def _ends(tree: ast.AST) -> set[str]:
    """Which end of a sequence the program's constant subscripts take from: ``"first"`` ([0],
    [:n]), ``"last"`` ([-1], [-n:])."""
    ends = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Subscript):
            continue
        index = node.slice
        if isinstance(index, ast.Slice):
            if index.step is not None:
                continue
            if _negative(index.lower):
                ends.add("last")
            elif index.lower is None and _positive(index.upper):
                ends.add("first")
        elif _negative(index):
            ends.add("last")
        elif isinstance(index, ast.Constant) and index.value == 0:
            ends.add("first")
    return ends


def _negative(node: ast.expr | None) -> bool:
    return (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, int))


def _positive(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, int) and node.value > 0
