"""One parser for the ``---`` frontmatter of lackpy's text files (``.kit`` and ``.tmpl``).

The rules, the same for every kind of file:

* lines end at ``\n``, ``\r\n`` or ``\r``; a UTF-8 byte-order mark and blank lines before
  the opening ``---`` are ignored;
* a file whose first other line is not ``---`` has no frontmatter (an error when the
  kind of file requires keys);
* inside, blank lines and lines starting with ``#`` are ignored; every other line is
  ``key: value`` with a known key, each key at most once;
* a value is taken as written (surrounding spaces stripped), except ``'text'``, which is
  the text between the quotes, and a value starting with ``"``, which must be one JSON
  string (so it may hold escapes such as ``\\n``);
* the next ``---`` line closes the frontmatter; what follows is the body.

Errors name the file and the line, and are the kind of file's own error class
(``KitError`` for kits, ``TemplateError`` for templates).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from lackpy_kernel.errors import LackpyError

FENCE = "---"
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_BARE_VALUE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")  # as Python's text files read them, not str.splitlines


@dataclass(frozen=True)
class Frontmatter:
    """A file's frontmatter and body.

    ``meta`` maps each key to its value, ``lines`` each key to its 1-based line, and
    ``body`` holds the lines after the frontmatter, the first of them at ``body_line``.
    """

    meta: dict[str, str]
    lines: dict[str, int]
    body: list[str]
    body_line: int


@dataclass(frozen=True)
class FrontmatterFormat:
    """The frontmatter of one kind of file: its known keys, the required ones, its error.

    ``what`` names the kind of file in messages ("kit file", "template").
    """

    what: str
    error: type[LackpyError]
    keys: tuple[str, ...]
    required: tuple[str, ...] = ()

    def read(self, path: str | os.PathLike[str]) -> Frontmatter:
        """Read and parse the UTF-8 file at ``path``; raises ``error`` when it cannot."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise self.error(f"{self.what} {path} cannot be read: {exc}") from None
        return self.parse(text, path)

    def parse(self, text: str, path: str | os.PathLike[str]) -> Frontmatter:
        """Split ``text`` (the content of ``path``) into its frontmatter and body.

        Raises ``error``, naming ``path`` and the line, when the frontmatter breaks a rule.
        """
        text = text.removeprefix("\ufeff")
        lines = text.split("\n") if "\r" not in text else _LINE_BREAK.split(text)
        if lines[-1] == "":
            lines.pop()  # the text ended with a line break
        opening = 0 if lines and lines[0].strip() else \
            next((i for i, line in enumerate(lines) if line.strip()), len(lines))
        if opening == len(lines) or lines[opening].strip() != FENCE:
            if self.required:
                raise self.fail(path, opening + 1, f"a {self.what} starts with a '{FENCE}' line, "
                                f"then {self._required_text()}, then '{FENCE}'")
            return Frontmatter({}, {}, lines, 1)
        meta: dict[str, str] = {}
        where: dict[str, int] = {}
        for index in range(opening + 1, len(lines)):
            line = lines[index].strip()
            if line == FENCE:
                self._check_required(path, opening + 1, meta)
                return Frontmatter(meta, where, lines[index + 1:], index + 2)
            if not line or line[0] == "#":
                continue
            key, sep, value = line.partition(":")
            key = key.rstrip()
            if not sep or key not in self.keys or key in meta:
                self._refuse_entry(path, index + 1, line, where)
            value = value.strip()
            meta[key] = self._unquote(path, index + 1, value) if value[:1] in ("'", '"') else value
            where[key] = index + 1
        raise self.fail(path, opening + 1, f"the frontmatter opened here has no closing '{FENCE}'")

    def fail(self, path: str | os.PathLike[str], line: int, problem: str) -> LackpyError:
        """The error for ``problem`` at ``line`` of ``path``."""
        return self.error(f"malformed {self.what} {path}, line {line}: {problem}")

    def format(self, values: Mapping[str, str | int], body: str = "") -> str:
        """The text of a file with ``values`` as its frontmatter (in order), then ``body``.

        Numbers and plain names are written bare, any other text as a JSON string, so
        that ``parse`` reads every value back as it was given.
        """
        lines = [FENCE, *(f"{key}: {_format_value(value)}" for key, value in values.items()), FENCE]
        return "\n".join(lines) + "\n" + body

    def _refuse_entry(self, path: str | os.PathLike[str], number: int, line: str,
                      seen: dict[str, int]) -> NoReturn:
        key, sep, _ = line.partition(":")
        key = key.strip()
        if not sep or not _KEY.fullmatch(key):
            raise self.fail(path, number, f"expected 'key: value' in the frontmatter, got {line!r}")
        if key in seen:
            raise self.fail(path, number, f"{key!r} was already given on line {seen[key]}")
        raise self.fail(path, number, f"unknown key {key!r}; a {self.what} knows "
                        f"{', '.join(self.keys)}")

    def _unquote(self, path: str | os.PathLike[str], number: int, value: str) -> str:
        if len(value) >= 2 and value[0] == value[-1] == "'":
            return value[1:-1]
        if not value.startswith('"'):
            return value
        inner = value[1:-1]
        if value[-1] == '"' and len(value) >= 2 and '"' not in inner and "\\" not in inner \
                and inner.isprintable():
            return inner  # what JSON decodes it to, without the decoder's cost
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError:
            decoded = None
        if not isinstance(decoded, str):
            raise self.fail(path, number, f"badly quoted value {value!r}: a value that starts "
                            f"with '\"' is one JSON string, such as \"a \\\"quoted\\\" word\"")
        return decoded

    def _check_required(self, path: str | os.PathLike[str], line: int, meta: dict[str, str]) -> None:
        for key in self.required:
            if not meta.get(key):
                raise self.fail(path, line, f"the frontmatter needs a '{key}:' line with a value")

    def _required_text(self) -> str:
        return " and ".join(f"'{key}: ...'" for key in self.required)


def _format_value(value: str | int) -> str:
    if isinstance(value, int) or _BARE_VALUE.fullmatch(value):
        return str(value)
    return json.dumps(value, ensure_ascii=False)
