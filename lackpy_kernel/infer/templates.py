"""Tier 0: saved templates, ``.lackpy/templates/*.tmpl``, matched against the whole intent."""

from __future__ import annotations

import ast
import contextlib
import fcntl
import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lackpy_kernel.errors import TemplateError
from lackpy_kernel.kit.atomic import atomic_write_text

from .provider import KIND_TEMPLATE, ProgramText

SUFFIX = ".tmpl"
FENCE = "---"
_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")
_TEMPLATE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


@dataclass
class Template:
    """One template: a pattern over intents and the program that answers them."""

    name: str
    pattern: str
    body: str
    path: Path
    success_count: int = 0
    fail_count: int = 0

    def __post_init__(self) -> None:
        self.regex, self.placeholders, self.literal = compile_pattern(self.pattern)

    def match(self, intent: str, squeezed: str | None = None) -> dict[str, str] | None:
        """The captured values when the pattern matches all of ``intent``.

        ``squeezed`` is ``intent`` lower-cased with its whitespace collapsed, when
        the caller has it already.
        """
        if self.literal not in (squeezed if squeezed is not None else _squeeze(intent)):
            return None  # cheap filter before the regex, for thousands of templates
        found = self.regex.fullmatch(intent.strip())
        return found.groupdict() if found else None

    def render(self, values: dict[str, str]) -> str:
        """The body with each placeholder replaced by its value, through the AST."""
        return (fill_placeholders(self.body, values) if values else self.body).strip("\n")


def compile_pattern(pattern: str) -> tuple[re.Pattern[str], list[str], str]:
    """The regex for a pattern, its placeholder names, and its longest literal piece.

    ``{name}`` becomes a named group; ``{{`` and ``}}`` are literal braces;
    runs of spaces match any whitespace; matching ignores case.
    """
    parts, names, literals, last = [], [], [], 0
    for match in _PLACEHOLDER.finditer(pattern):
        literals.append(pattern[last:match.start()])
        parts.append(_literal_regex(pattern[last:match.start()]))
        if match.group(1):
            name = match.group(1)
            if name in names:
                raise TemplateError(f"placeholder {{{name}}} appears twice in {pattern!r}")
            names.append(name)
            parts.append(f"(?P<{name}>.+?)")
        else:
            literals.append(match.group(0)[0])
            parts.append(re.escape(match.group(0)[0]))
        last = match.end()
    literals.append(pattern[last:])
    parts.append(_literal_regex(pattern[last:]))
    longest = max((_squeeze(piece) for piece in literals), key=len, default="")
    return re.compile("".join(parts), re.IGNORECASE | re.DOTALL), names, longest


def _literal_regex(text: str) -> str:
    return "".join(r"\s+" if piece.isspace() else re.escape(piece)
                   for piece in re.split(r"(\s+)", text) if piece)


def _squeeze(text: str) -> str:
    return " ".join(text.lower().split())


def fill_placeholders(body: str, values: dict[str, str]) -> str:
    """Place captured values into ``body`` as data, never as code.

    Inside a string literal a ``{name}`` becomes part of that literal; a bare
    ``{name}`` (which Python reads as a one-element set) becomes a string
    literal. Only the affected literals are rewritten (with exact quoting);
    the rest of the body, comments included, stays as written.
    """
    tree = ast.parse(body)
    edits = []
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        replacement = _replacement(node, values)
        if replacement is None:
            stack.extend(ast.iter_child_nodes(node))
        elif replacement != ast.get_source_segment(body, node):
            edits.append((_offset(body, node.lineno, node.col_offset),
                          _offset(body, node.end_lineno, node.end_col_offset), replacement))
    for start, end, text in sorted(edits, reverse=True):
        body = body[:start] + text + body[end:]
    return body


def _replacement(node: ast.AST, values: dict[str, str]) -> str | None:
    """The new source for a literal holding placeholders; None to look inside ``node``."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return repr(_substitute(node.value, values))
    if isinstance(node, ast.Set) and len(node.elts) == 1 and isinstance(node.elts[0], ast.Name):
        if node.elts[0].id in values:
            return repr(values[node.elts[0].id])
    if isinstance(node, ast.JoinedStr):
        filled = _FStringFiller(values).visit(node)
        return ast.unparse(ast.fix_missing_locations(filled))
    return None


def _substitute(text: str, values: dict[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        return values[name] if name and name in values else match.group(0)

    return _PLACEHOLDER.sub(replace, text)


def _offset(text: str, line: int, byte_col: int) -> int:
    """The character offset of a (1-based line, UTF-8 byte column) position."""
    lines = text.splitlines(keepends=True)
    before = sum(len(chunk) for chunk in lines[:line - 1])
    return before + len(lines[line - 1].encode("utf-8")[:byte_col].decode("utf-8", "replace"))


class _FStringFiller(ast.NodeTransformer):
    """Inside an f-string: literal parts and bare ``{name}`` fields take the captured text."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, str):
            return ast.Constant(_substitute(node.value, self.values))
        return node

    def visit_FormattedValue(self, node: ast.FormattedValue) -> ast.AST:
        value = node.value
        plain = node.conversion == -1 and node.format_spec is None
        if plain and isinstance(value, ast.Name) and value.id in self.values:
            return ast.Constant(self.values[value.id])
        return self.generic_visit(node)


def parse_template(path: Path) -> Template:
    """Read a ``.tmpl`` file: ``---`` frontmatter (name, pattern, counts), then the body."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TemplateError(f"{path}: cannot be read: {exc}") from None
    meta, body = _split_frontmatter(path, text)
    for key in ("pattern",):
        if not meta.get(key):
            raise TemplateError(f"{path}: the frontmatter needs a '{key}:' line")
    try:
        template = Template(
            name=meta.get("name") or path.stem,
            pattern=meta["pattern"],
            body=body,
            path=path,
            success_count=_count(path, meta, "success_count"),
            fail_count=_count(path, meta, "fail_count"),
        )
    except (TemplateError, re.error) as exc:
        raise TemplateError(f"{path}: bad pattern: {exc}") from None
    _check_body(path, template)
    return template


def _split_frontmatter(path: Path, text: str) -> tuple[dict[str, str], str]:
    lines = text.splitlines()
    if not lines or lines[0].strip() != FENCE:
        raise TemplateError(f"{path}, line 1: a template starts with a '---' frontmatter line")
    meta: dict[str, str] = {}
    for number, line in enumerate(lines[1:], start=2):
        if line.strip() == FENCE:
            return meta, "\n".join(lines[number:]).strip("\n") + "\n"
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise TemplateError(f"{path}, line {number}: expected 'key: value', got {line!r}")
        meta[key.strip()] = _unquote(path, number, value.strip())
    raise TemplateError(f"{path}: the frontmatter has no closing '---' line")


def _unquote(path: Path, number: int, value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        if value[0] == '"':
            try:
                return json.loads(value)
            except json.JSONDecodeError as exc:
                raise TemplateError(f"{path}, line {number}: bad quoted value: {exc}") from None
        return value[1:-1]
    return value


def _count(path: Path, meta: dict[str, str], key: str) -> int:
    raw = meta.get(key, "0")
    if not raw.isdigit():
        raise TemplateError(f"{path}: '{key}' must be a whole number, not {raw!r}")
    return int(raw)


def _check_body(path: Path, template: Template) -> None:
    probe = {name: "x" for name in template.placeholders}
    try:
        ast.parse(template.render(probe))
    except (SyntaxError, ValueError, RecursionError) as exc:
        raise TemplateError(f"{path}: the program body is not Python: {exc}") from None


def format_template(name: str, pattern: str, body: str, success: int = 0, failed: int = 0) -> str:
    """The text of a template file."""
    return (
        f"{FENCE}\nname: {name}\npattern: {json.dumps(pattern)}\n"
        f"success_count: {success}\nfail_count: {failed}\n{FENCE}\n{body.strip()}\n"
    )


def check_template_name(name: object) -> str:
    """``name`` when it is a plain file stem; ValueError otherwise."""
    if not isinstance(name, str) or not _TEMPLATE_NAME.fullmatch(name) or ".." in name:
        raise ValueError(
            f"invalid template name {name!r}: use letters, digits, '_', '-' and '.' only"
        )
    return name


class TemplatesProvider:
    """Tier 0: the first template (in file-name order) whose pattern matches the intent.

    Parsed templates are cached by file modification time, so thousands of
    templates cost one directory listing per call. A bad template file is
    skipped and reported in ``problems``, never fatal. A program's ``source`` is
    its template's path (see ``update_counts``).
    """

    kind = KIND_TEMPLATE

    def __init__(self, templates_dir: str | os.PathLike[str], name: str = "templates") -> None:
        self.templates_dir = Path(templates_dir)
        self._name = name
        self._cache: dict[str, tuple[tuple[int, int], Template | None]] = {}
        self.problems: dict[Path, str] = {}

    @property
    def name(self) -> str:
        return self._name

    def available(self) -> bool:
        return self.templates_dir.is_dir()

    def unavailable_reason(self) -> str | None:
        return None if self.available() else f"no templates yet in {self.templates_dir}"

    async def generate(
        self,
        intent: str,
        namespace_desc: str,
        config: dict[str, Any] | None = None,
        error_feedback: list[str] | None = None,
    ) -> str | None:
        if error_feedback:
            return None  # a template is fixed text: a retry cannot do better
        found = self.find(intent)
        if found is None:
            return None
        template, values = found
        return ProgramText(template.render(values), source=str(template.path))

    def find(self, intent: str) -> tuple[Template, dict[str, str]] | None:
        """The first matching template and its captured values."""
        squeezed = _squeeze(intent)
        for template in self.templates():
            values = template.match(intent, squeezed)
            if values is not None:
                return template, values
        return None

    def templates(self) -> Iterator[Template]:
        """Every usable template, in sorted file-name order."""
        for entry in self._entries():
            template = self._load(entry)
            if template is not None:
                yield template

    def _entries(self) -> list[os.DirEntry]:
        try:
            with os.scandir(self.templates_dir) as entries:
                found = [entry for entry in entries if entry.name.endswith(SUFFIX)]
        except OSError:
            return []
        return sorted(found, key=lambda entry: entry.name)

    def _load(self, entry: os.DirEntry) -> Template | None:
        # Plain strings and DirEntry.stat keep this loop cheap with thousands of files.
        try:
            info = entry.stat()
        except OSError:
            return None
        if not stat.S_ISREG(info.st_mode):
            return None
        stamp = (info.st_mtime_ns, info.st_size)
        cached = self._cache.get(entry.name)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        path = Path(entry.path)
        try:
            template = parse_template(path)
            self.problems.pop(path, None)
        except TemplateError as exc:
            template = None
            self.problems[path] = str(exc)
        self._cache[entry.name] = (stamp, template)
        return template


def update_counts(path: Path, success: bool) -> None:
    """Add one to a template's success or fail count, atomically and under a lock."""
    with _locked(path.parent / ".templates.lock"):
        template = parse_template(path)
        success_count = template.success_count + (1 if success else 0)
        fail_count = template.fail_count + (0 if success else 1)
        text = format_template(template.name, template.pattern, template.body,
                               success_count, fail_count)
        atomic_write_text(path, text)


@contextlib.contextmanager
def _locked(lock_path: Path) -> Iterator[None]:
    with open(lock_path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
