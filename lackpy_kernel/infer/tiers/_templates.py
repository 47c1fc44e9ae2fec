"""Tier 0: saved templates, ``.lackpy/templates/*.tmpl``, matched against the whole intent.

A template file is ``---`` frontmatter (name, pattern, counts), then the program body. The
provider keeps an index of the folder (``TemplateIndex``, see ``_index``), so a call costs
one ``stat`` of the folder and a look-up by the intent's first words, however many
templates there are. The index of a big folder is also kept in a file beside it
(``.lackpy/templates.index`` for ``.lackpy/templates``), so that the next process starts
from it rather than reading every template again.
"""

from __future__ import annotations

import ast
import contextlib
import os
import re
import sys
import threading
import weakref
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lackpy_kernel.config import CONFIG_DIR
from lackpy_kernel.errors import TemplateError
from lackpy_kernel.infer._provider import KIND_TEMPLATE, ProgramText
from lackpy_kernel.kit.atomic import atomic_write_text
from lackpy_kernel.kit.frontmatter import Frontmatter, FrontmatterFormat

from ._base import DeterministicProvider
from ._index import FolderIndex, folder_stamp_now
from ._template_text import IntentPattern, compile_pattern, fill_placeholders

SUFFIX = ".tmpl"
TEMPLATE_FRONTMATTER = FrontmatterFormat(
    "template", TemplateError, keys=("name", "pattern", "success_count", "fail_count"),
    required=("pattern",),
)
LOCK_FILE = ".templates.lock"
_TEMPLATE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
INDEX_SUFFIX = ".index"
INDEX_MIN_TEMPLATES = 500  # a smaller folder is read again sooner than its index file


@dataclass(slots=True)
class Template:
    """One template: a pattern over intents and the program that answers them."""

    name: str
    pattern: str
    body: str
    path: Path
    success_count: int = 0
    fail_count: int = 0
    body_line: int = field(default=1, repr=False, compare=False)
    compiled: IntentPattern = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.compiled = compile_pattern(self.pattern)

    @property
    def placeholders(self) -> list[str]:
        """The names of the pattern's placeholders, in order."""
        return self.compiled.placeholders

    def match(self, intent: str) -> dict[str, str] | None:
        """The captured values when the pattern matches all of ``intent``, else None."""
        return self.compiled.match(intent)

    def render(self, values: dict[str, str]) -> str:
        """The body with each placeholder replaced by its value, as data (see ``fill_placeholders``).

        Raises TemplateError when a value cannot be written into this body as data.
        """
        return fill_placeholders(self.body, values).strip("\n")


def parse_template(path: Path) -> Template:
    """Read a ``.tmpl`` file: ``---`` frontmatter (name, pattern, counts), then the program body.

    Raises TemplateError, naming the file and line, when the file cannot be read, breaks
    the frontmatter rules, has a bad pattern, or its body is not Python.
    """
    template = _read_template(path)
    check_body(template)
    return template


def check_body(template: Template) -> None:
    """Raise TemplateError unless the template's body, filled with sample values, is Python."""
    probe = {name: "x" for name in template.placeholders}
    try:
        ast.parse(template.render(probe))
    except SyntaxError as exc:
        line = template.body_line + (exc.lineno or 1) - 1
        raise TEMPLATE_FRONTMATTER.fail(
            template.path, line, f"the program body is not Python: {exc.msg}") from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise TEMPLATE_FRONTMATTER.fail(
            template.path, template.body_line, f"the program body is not Python: {exc}") from None


def format_template(name: str, pattern: str, body: str, success: int = 0, failed: int = 0) -> str:
    """The text of a template file."""
    values: dict[str, str | int] = {"name": name, "pattern": pattern, "success_count": success,
                                    "fail_count": failed}
    return TEMPLATE_FRONTMATTER.format(values, body.strip() + "\n")


def check_template_name(name: object) -> str:
    """``name`` when it is a plain file stem; ValueError otherwise."""
    if not isinstance(name, str) or not _TEMPLATE_NAME.fullmatch(name) or ".." in name:
        raise ValueError(
            f"invalid template name {name!r}: use letters, digits, '_', '-' and '.' only"
        )
    return name


def _read_template(path: Path) -> Template:
    """The template in the file ``path``, its body not yet checked."""
    return _template_from(TEMPLATE_FRONTMATTER.read(path), path)


def _template_from(front: Frontmatter, path: Path) -> Template:
    """The template a file's parsed frontmatter and body describe, its body not yet checked."""
    meta, lines = front.meta, front.lines
    blank = next((i for i, line in enumerate(front.body) if line), 0)
    counts = _count(path, lines, meta, "success_count"), _count(path, lines, meta, "fail_count")
    try:
        return Template(
            name=meta.get("name") or path.stem,
            pattern=meta["pattern"],
            body="\n".join(front.body).strip("\n") + "\n",
            path=path,
            success_count=counts[0],
            fail_count=counts[1],
            body_line=front.body_line + blank,
        )
    except TemplateError as exc:
        raise TEMPLATE_FRONTMATTER.fail(path, lines["pattern"], f"bad pattern: {exc}") from None


def _count(path: str | Path, lines: dict[str, int], meta: dict[str, str], key: str) -> int:
    raw = meta.get(key, "0")
    if not (raw.isascii() and raw.isdigit()):
        raise TEMPLATE_FRONTMATTER.fail(path, lines[key], f"'{key}' must be a whole number, not {raw!r}")
    return int(raw)


class TemplateIndex(FolderIndex[Template]):
    """The templates of one folder, indexed (see ``FolderIndex``); kept in ``index_file``
    (None: nowhere) once the folder holds ``INDEX_MIN_TEMPLATES``. One index is shared by
    every provider of a folder in this process (see ``template_index``)."""

    suffix = SUFFIX

    def __init__(self, folder: Path, index_file: Path | None = None) -> None:
        super().__init__(folder, index_file, save_from=INDEX_MIN_TEMPLATES)

    def pattern_of(self, text: str, path: str) -> IntentPattern:
        """The compiled pattern of the template file ``text``, its frontmatter checked."""
        front = TEMPLATE_FRONTMATTER.parse(text, path)
        for key in ("success_count", "fail_count"):
            _count(path, front.lines, front.meta, key)
        try:
            return compile_pattern(front.meta["pattern"])
        except TemplateError as exc:
            raise TEMPLATE_FRONTMATTER.fail(path, front.lines["pattern"], f"bad pattern: {exc}") from None

    def template_of(self, text: str, path: Path) -> Template:
        """The template the file ``text`` holds, its body checked."""
        template = _template_from(TEMPLATE_FRONTMATTER.parse(text, path), path)
        check_body(template)
        return template


def _index_file_of(folder: Path) -> Path | None:
    """Where the index of the templates folder ``folder`` is kept: beside it when it lies in
    a ``.lackpy`` folder (``.lackpy/templates.index``), otherwise nowhere."""
    return folder.parent / f"{folder.name}{INDEX_SUFFIX}" if folder.parent.name == CONFIG_DIR else None


_INDEXES: weakref.WeakValueDictionary[str, TemplateIndex] = weakref.WeakValueDictionary()
_INDEXES_LOCK = threading.Lock()


def template_index(folder: str | os.PathLike[str]) -> TemplateIndex:
    """The index of ``folder``'s templates, shared in this process while anyone holds it."""
    key = os.path.abspath(folder)
    with _INDEXES_LOCK:
        index = _INDEXES.get(key)
        if index is None:
            index = _INDEXES[key] = TemplateIndex(Path(folder), _index_file_of(Path(key)))
        return index


class TemplatesProvider(DeterministicProvider):
    """Tier 0: the first template (in file-name order) whose pattern matches the intent.

    A bad template file is skipped and reported in ``problems``, never fatal. A program's
    ``source`` is its template's path (see ``update_counts``).
    """

    kind = KIND_TEMPLATE

    def __init__(self, templates_dir: str | os.PathLike[str], name: str = "templates") -> None:
        super().__init__(name)
        self.templates_dir = Path(templates_dir)
        self._index = template_index(self.templates_dir)

    @property
    def problems(self) -> dict[Path, str]:
        """Each template file that cannot be used, and why."""
        return self._index.problems

    def unavailable_reason(self) -> str | None:
        """None when the templates folder exists."""
        return None if self.templates_dir.is_dir() else f"no templates yet in {self.templates_dir}"

    def answer(self, intent: str, namespace_desc: str, config: Mapping[str, Any]) -> str | None:
        """The matching template's program, its ``source`` the template's path; None when no
        template matches. Raises TemplateError when the captured text cannot be written into
        the matching template's program as data."""
        found = self.find(intent)
        if found is None:
            return None
        template, values = found
        return ProgramText(template.render(values), source=str(template.path))

    def find(self, intent: str) -> tuple[Template, dict[str, str]] | None:
        """The first matching template and its captured values."""
        return self._index.find(intent)

    def templates(self) -> Iterator[Template]:
        """Every usable template, in sorted file-name order."""
        yield from self._index.templates()


def update_counts(path: Path, success: bool) -> None:
    """Add one to a template's success or fail count, atomically and under a lock.

    Raises TemplateError when the template cannot be read, OSError when it cannot be written.
    """
    folder = path.parent
    with _locked(folder / LOCK_FILE):
        before = folder_stamp_now(folder)
        template = _read_template(path)
        text = format_template(template.name, template.pattern, template.body,
                               template.success_count + (1 if success else 0),
                               template.fail_count + (0 if success else 1))
        atomic_write_text(path, text)
        index = _INDEXES.get(os.path.abspath(folder))
        if index is not None:
            index.rewritten(path.name, before)


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_path`` (made if missing), between processes too."""
    with open(lock_path, "a+b") as handle:
        if sys.platform == "win32":
            import msvcrt  # Windows has no fcntl; LK_LOCK retries for ten seconds

            handle.seek(0)
            msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK, 1)
            try:
                yield
            finally:
                handle.seek(0)
                msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
        else:
            import fcntl  # here, not at the top: the package must import on Windows

            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
