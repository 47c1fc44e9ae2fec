"""A template's text: its pattern matched against intents, its body filled with the captures.

Both work on untrusted text (an intent, a captured piece of it) and are bounded:
matching is linear in the intent, and captured text only ever becomes string data in
the program, never code.
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Mapping
from typing import NamedTuple

from lackpy_kernel.errors import TemplateError

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")
_PATTERN_PARTS = re.compile(r"(\{\{|\}\})|\{([A-Za-z_][A-Za-z0-9_]*)\}")
_WORD = re.compile(r"\S+")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")  # lines as Python's tokenizer counts them


def squeeze(text: str) -> str:
    """``text`` without leading or trailing whitespace, each run of it one space."""
    return " ".join(text.split())


def fold(text: str) -> str:
    """``text`` lower-cased for comparison, one character for one (unlike ``str.lower``)."""
    return text.replace("\u0130", "i").lower()  # 'İ'.lower() is two characters


class IntentPattern(NamedTuple):
    """A template's pattern, compiled for matching in time linear in the intent.

    ``pieces`` holds the pattern's literal text, squeezed and folded: the piece before the
    first placeholder, between each two, and after the last (one more than
    ``placeholders``). ``leading_words`` are the whole words every matching intent starts
    with, folded (the key of the templates' index).
    """

    text: str
    placeholders: list[str]
    pieces: tuple[str, ...]
    leading_words: tuple[str, ...]

    def match(self, intent: str) -> dict[str, str] | None:
        """The captured text of each placeholder when the pattern matches all of ``intent``."""
        squeezed = squeeze(intent)
        spans = self.spans(fold(squeezed))
        if spans is None:
            return None
        return {name: original_text(intent, squeezed, *span)
                for name, span in zip(self.placeholders, spans, strict=True)}

    def spans(self, folded: str) -> list[tuple[int, int]] | None:
        """Where each placeholder's capture lies in ``folded`` (a squeezed, folded intent).

        Each placeholder captures at least one character, and the fewest that let the
        rest match: every piece between two placeholders is found at its earliest place,
        which is enough because the next placeholder can absorb any text before a later
        one. So the work is one ``find`` per piece: linear in the intent.
        """
        if len(self.pieces) == 1:
            return [] if folded == self.pieces[0] else None
        first, *middle, last = self.pieces
        if not folded.startswith(first):
            return None
        position, spans = len(first), []
        for piece in middle:
            found = folded.find(piece, position + 1)
            if found < 0:
                return None
            spans.append((position, found))
            position = found + len(piece)
        end = len(folded) - len(last)
        if end <= position or not folded.endswith(last):
            return None
        spans.append((position, end))
        return spans


def compile_pattern(pattern: str) -> IntentPattern:
    """Compile a template's pattern: ``{name}`` is a placeholder, ``{{``/``}}`` literal braces.

    Matching ignores case, treats every run of whitespace as one space and must cover
    the whole intent. Raises TemplateError for a placeholder named twice.
    """
    parts = _PATTERN_PARTS.split(squeeze(pattern))  # literal, (escape, name, literal)...
    names: list[str] = []
    pieces: list[str] = []
    current = [parts[0]]
    for index in range(1, len(parts), 3):
        escape, name, literal = parts[index:index + 3]
        if name is None:
            current.append(escape[0])
        elif name in names:
            raise TemplateError(f"placeholder {{{name}}} appears twice in {pattern!r}")
        else:
            names.append(name)
            pieces.append(fold("".join(current)))
            current = []
        current.append(literal)
    pieces.append(fold("".join(current)))
    words = pieces[0].split(" ") if pieces[0] else []
    leading = tuple(words if len(pieces) == 1 else words[:-1])
    return IntentPattern(pattern, names, tuple(pieces), leading)


def original_text(intent: str, squeezed: str, start: int, end: int) -> str:
    """The part of ``intent`` that ``squeezed[start:end]`` stands for, its whitespace as written."""
    if intent == squeezed:
        return intent[start:end]
    words = [match.span() for match in _WORD.finditer(intent)]
    starts, position = [], 0
    for word_start, word_end in words:
        starts.append(position)
        position += word_end - word_start + 1

    def locate(index: int, *, after: bool) -> int:
        word = bisect.bisect_right(starts, index) - 1
        offset = index - starts[word]
        word_start, word_end = words[word]
        if offset < word_end - word_start:
            return word_start + offset + after
        # The space after a word stands for the whole run of whitespace up to the next word.
        return words[word + 1][0] if after else word_end

    return intent[locate(start, after=False):locate(end - 1, after=True)]


def fill_placeholders(body: str, values: Mapping[str, str]) -> str:
    """``body`` with each placeholder replaced by its captured text, as data, never as code.

    A ``{name}`` inside a string literal (an f-string's text included) becomes part of
    that literal; a bare ``{name}`` (which Python reads as a one-element set) becomes a
    string literal; an f-string field ``{name}`` becomes part of the f-string's text, and
    inside a format spec or with a conversion, a string constant in that field. Only the
    affected literals are rewritten; the rest of the body, comments included, stays as
    written. The result is parsed again and must have exactly the intended syntax tree.

    Raises SyntaxError when ``body`` is not Python, and TemplateError when a captured text
    cannot be written into this body as data (then nothing is produced).
    """
    if not values:
        return body
    tree = ast.parse(body)
    filler = _Filler(values, body)
    expected = filler.visit(tree)
    rendered = body
    for start, end, text in sorted(filler.edits, reverse=True):
        rendered = rendered[:start] + text + rendered[end:]
    try:
        same = ast.dump(ast.parse(rendered)) == ast.dump(expected)
    except (SyntaxError, ValueError, RecursionError):
        same = False
    if not same:
        raise TemplateError("the captured text cannot be placed in this template's program as "
                            "plain data, so the template does not answer this intent")
    return rendered


class _Filler(ast.NodeTransformer):
    """Replaces the literals that hold placeholders, noting each source edit in ``edits``."""

    def __init__(self, values: Mapping[str, str], source: str | None = None) -> None:
        self.values = values
        self.edits: list[tuple[int, int, str]] = []
        self._lines = _LINE.findall(source or "")
        self._line_starts = [0]
        for line in self._lines:
            self._line_starts.append(self._line_starts[-1] + len(line))
        self._record = source is not None  # inside an f-string field, unparse writes the source

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if not isinstance(node.value, str):
            return node
        filled = substitute(node.value, self.values)
        return node if filled == node.value else self._replace(node, ast.Constant(filled), repr(filled))

    def visit_Set(self, node: ast.Set) -> ast.AST:
        only = node.elts[0] if len(node.elts) == 1 else None
        if isinstance(only, ast.Name) and only.id in self.values:
            text = self.values[only.id]
            return self._replace(node, ast.Constant(text), repr(text))
        return self.generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        before = ast.dump(node)
        filled = self._fstring(node, in_spec=False)  # (nested expressions change in place)
        if ast.dump(filled) == before:
            return node
        if not self._record:  # inside another f-string, which is written out as a whole
            return ast.copy_location(filled, node)
        try:
            source = ast.unparse(filled)
        except ValueError:  # e.g. a backslash, which no f-string expression may hold
            raise TemplateError("the captured text cannot be written into this f-string") from None
        return self._replace(node, filled, source)

    def _fstring(self, node: ast.JoinedStr, *, in_spec: bool) -> ast.JoinedStr:
        parts: list[ast.expr] = []
        text: list[str] = []  # literal text not yet added (Python joins neighbouring pieces)
        for part in node.values:
            if isinstance(part, ast.FormattedValue):
                part = self._field(part, in_spec=in_spec)
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                text.append(part.value if in_spec else substitute(part.value, self.values))
                continue
            if text:
                parts.append(ast.Constant("".join(text)))
                text = []
            parts.append(part)
        if text:
            parts.append(ast.Constant("".join(text)))
        return ast.JoinedStr(parts)

    def _field(self, field: ast.FormattedValue, *, in_spec: bool) -> ast.expr:
        value = field.value
        if isinstance(value, ast.Name) and value.id in self.values:
            text = self.values[value.id]
            if not in_spec and field.conversion == -1 and field.format_spec is None:
                return ast.Constant(text)
            value = ast.Constant(text)
        else:
            value = _Filler(self.values).visit(value)
        spec = field.format_spec
        if isinstance(spec, ast.JoinedStr):
            spec = self._fstring(spec, in_spec=True)
        return ast.FormattedValue(value, field.conversion, spec)

    def _replace(self, node: ast.expr, new: ast.expr, source: str) -> ast.expr:
        if self._record:
            self.edits.append((self._offset(node.lineno, node.col_offset),
                               self._offset(node.end_lineno, node.end_col_offset), source))
        return ast.copy_location(new, node)

    def _offset(self, line: int | None, byte_column: int | None) -> int:
        """The character offset of a (1-based line, UTF-8 byte column) position."""
        assert line is not None and byte_column is not None
        text = self._lines[line - 1].encode("utf-8")[:byte_column].decode("utf-8", "replace")
        return self._line_starts[line - 1] + len(text)


def substitute(text: str, values: Mapping[str, str]) -> str:
    """``text`` with each ``{name}`` of ``values`` replaced by its value (as plain text)."""
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        return values[name] if name and name in values else match.group(0)

    return _PLACEHOLDER.sub(replace, text)
