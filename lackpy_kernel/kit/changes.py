"""A program's file changes as a person sees them before they land (``[sandbox] approve``).

``describe_changes`` reads what each changed file held and builds a ``Change``: per file,
new, changed or deleted, its +/- line counts and the changed lines as a unified diff,
bounded per file and in all (``MAX_FILE_LINES``, ``MAX_FILE_BYTES``, ``MAX_LINES``,
``MAX_BYTES``, ``MAX_LINE_CHARS``); a binary file, or one too large to compare line by
line, is summarized. Every path and line is shown printable (control and bidi characters
escaped), so a hostile file name or content cannot rewrite a terminal. ``Change`` crosses
the sandbox's pipe as plain data (``to_frame``/``from_frame``) and renders as text here;
``lackpy_kernel.notebook.bundles.change_bundle`` renders it as HTML.
"""

from __future__ import annotations

import json
import unicodedata
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from .undo import TooBig, read_bytes
from .workspace import Workspace

MAX_FILE_LINES = 80  # diff lines shown for one file
MAX_FILE_BYTES = 8_000  # characters of diff lines shown for one file
MAX_LINES = 400  # diff lines shown in all
MAX_BYTES = 40_000  # characters of diff lines shown in all
MAX_LINE_CHARS = 240  # the most of one line shown
MAX_CALL_CHARS = 2_000  # the most of a call's arguments shown
MAX_COMPARED_BYTES = 500_000  # larger files are counted, not compared line by line
MAX_COMPARED_LINES = 10_000
MAX_READ_BYTES = 16 * 1024 * 1024  # a file tool writes no more; a larger file is not read
CONTEXT_LINES = 2  # unchanged lines shown around each change
STATUSES = ("new", "changed", "deleted")
_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Co", "Zl", "Zp"})  # shown escaped


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file's change: ``status`` (new, changed, deleted), lines ``added`` and
    ``removed``, the unified diff's ``lines`` shown (hunk headers and ``+``/``-``/`` ``
    lines, printable), how many more were ``omitted``, a ``note`` for a file summarized
    instead (binary, too large to compare), and a digest of its whole ``content`` before and
    after, so that an approval covers what was not shown too."""

    path: str
    status: str
    added: int
    removed: int
    lines: tuple[str, ...] = ()
    omitted: int = 0
    note: str = ""
    content: str = ""

    @property
    def counts(self) -> str:
        """``+3 -1`` (a side with nothing left out)."""
        return " ".join(part for part in (f"+{self.added}" if self.added else "",
                                           f"-{self.removed}" if self.removed else "") if part)

    def to_frame(self) -> dict[str, Any]:
        """Plain data for the wire."""
        return {"path": self.path, "status": self.status, "added": self.added,
                "removed": self.removed, "lines": list(self.lines), "omitted": self.omitted,
                "note": self.note, "content": self.content}


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call of a tool that acts beyond the workspace's files (a ``write`` tool that runs in
    the kernel: an MCP server's, ``where = "kernel"``), asked for before it runs: the tool's
    ``name`` and its ``arguments`` as shown (bounded, printable)."""

    name: str
    arguments: str

    def to_frame(self) -> dict[str, Any]:
        """Plain data for the wire."""
        return {"name": self.name, "arguments": self.arguments}


@dataclass(frozen=True, slots=True)
class Change:
    """A program's file changes, one ``FileChange`` a file, in the order it wrote them; or,
    with ``call`` (and no files), the call of a tool it asks to make."""

    files: tuple[FileChange, ...]
    call: ToolCall | None = None

    @classmethod
    def of_call(cls, tool: str, arguments: str) -> Change:
        """The change a call of ``tool`` with ``arguments`` (their text) asks to make,
        shown printable and cut to ``MAX_CALL_CHARS``."""
        return cls((), ToolCall(printable(tool[:MAX_LINE_CHARS]), _shortened(printable(
            arguments[:MAX_CALL_CHARS + 1]), MAX_CALL_CHARS)))

    @property
    def added(self) -> int:
        """Lines added in all."""
        return sum(file.added for file in self.files)

    @property
    def removed(self) -> int:
        """Lines removed in all."""
        return sum(file.removed for file in self.files)

    @property
    def paths(self) -> list[str]:
        """The changed files' paths (printable)."""
        return [file.path for file in self.files]

    def summary(self) -> str:
        """One line: how many files, and the lines added and removed (for a call: the
        call)."""
        if self.call is not None:
            return f"call {self.call.name}({self.call.arguments})"
        count = len(self.files)
        return f"{count} file{'s' if count != 1 else ''} changed: +{self.added} -{self.removed}"

    def question(self) -> str:
        """What a person is asked before it lands: ``Apply these changes?``, or for a call
        ``Call NAME?`` (its arguments are in ``summary`` and ``to_text``)."""
        return "Apply these changes?" if self.call is None else f"Call {self.call.name}?"

    def to_text(self) -> str:
        """The change as a terminal shows it: the summary, one line a file, then each
        file's diff (for a call: the call, and why it is asked for)."""
        if self.call is not None:
            return (f"{self.summary()}\n  {self.call.name} acts beyond the workspace's files "
                    "(a tool graded write that runs in the kernel), so it runs only if you "
                    "allow this call")
        width = max((len(file.path) for file in self.files), default=0)
        out = [self.summary()]
        out += [f"  {file.status:<8} {file.path:<{width}}  {file.note or file.counts}".rstrip()
                for file in self.files]
        for file in self.files:
            if not file.lines and not file.omitted:
                continue
            out.append(f"--- {file.path} ({file.status})")
            out += file.lines
            if file.omitted:
                out.append(f"  ... {file.omitted} more line{'s' if file.omitted != 1 else ''} "
                           "not shown")
        return "\n".join(out)

    def to_frame(self) -> dict[str, Any]:
        """Plain data for the wire (the sandbox's pipe, an approval's display bundle)."""
        frame: dict[str, Any] = {"files": [file.to_frame() for file in self.files]}
        if self.call is not None:
            frame["call"] = self.call.to_frame()
        return frame

    @classmethod
    def from_frame(cls, frame: Mapping[str, Any]) -> Change:
        """The change ``to_frame`` gave. Raises ValueError when its shape is wrong."""
        try:
            files = tuple(_file_from(item) for item in frame["files"])
            call = frame.get("call")
            if call is not None and not (type(call) is dict and type(call["name"]) is str
                                         and type(call["arguments"]) is str):
                raise TypeError("a call of the wrong shape")
        except (KeyError, TypeError) as exc:
            raise ValueError(f"malformed change: {type(exc).__name__}") from None
        return cls(files) if call is None else cls.of_call(call["name"], call["arguments"])


def change_digest(change: Change) -> str:
    """A hash of ``change`` as the person saw it (each file's path, status, counts and
    diff lines, or the call), naming it in a question, a pause and an approval."""
    import hashlib  # here: the sandbox worker needs it only once a program writes

    text = json.dumps(change.to_frame(), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def describe_changes(workspace: Workspace, changes: Iterable[tuple[str, bytes | None]]
                     ) -> Change:
    """The change that writing ``changes`` (workspace-relative path, new content or None
    to delete) would make to ``workspace``, as its files hold now."""
    budget = _Budget()
    return Change(tuple(_described(workspace, path, after, budget) for path, after in changes))


def snapshot(workspace: Workspace, paths: Iterable[str]) -> dict[str, str | None]:
    """What each of ``paths`` holds now, as a digest (None: not there; a file too large or
    unreadable is named by its size and time), to tell later whether it changed."""
    import hashlib  # here: the sandbox worker needs it only once a program writes

    taken: dict[str, str | None] = {}
    for path in paths:
        try:
            data = read_bytes(workspace, path, MAX_READ_BYTES)
            taken[path] = None if data is None else hashlib.sha256(data).hexdigest()
        except (TooBig, OSError):
            try:
                info = (workspace.root / path).lstat()
                taken[path] = f"{info.st_size}:{info.st_mtime_ns}"
            except OSError:
                taken[path] = "unreadable"
    return taken


def changed_since(workspace: Workspace, taken: dict[str, str | None]) -> list[str]:
    """The paths of ``taken`` (a ``snapshot``) whose content changed since (printable)."""
    now = snapshot(workspace, taken)
    return [printable(path) for path, digest in taken.items() if now[path] != digest]


def file_change(path: str, before: bytes | None, after: bytes | None,
                budget: _Budget | None = None) -> FileChange:
    """The change from ``before`` to ``after`` (None: the file is not there) of ``path``;
    ``budget`` bounds the lines shown across several files."""
    shown = _shown_change(path, before, after, budget or _Budget())
    return replace(shown, content=content_digest(before, after))


def content_digest(before: bytes | None, after: bytes | None) -> str:
    """A hash of a file's whole content before and after a change (None: not there)."""
    import hashlib  # here: the sandbox worker needs it only once a program writes

    digest = hashlib.sha256()
    for side in (before, after):
        digest.update(b"-" if side is None else b"+%d:" % len(side) + side)
    return digest.hexdigest()[:32]


def _shown_change(path: str, before: bytes | None, after: bytes | None, budget: _Budget
                  ) -> FileChange:
    status = "new" if before is None else "deleted" if after is None else "changed"
    old, new = _text(before), _text(after)
    shown_path = printable(path)
    if old is None or new is None:
        sizes = f"{len(before or b''):,} -> {len(after or b''):,} bytes"
        return FileChange(shown_path, status, 0, 0, note=f"binary, {sizes}")
    old_lines, new_lines = old.splitlines(), new.splitlines()
    if (max(len(before or b""), len(after or b"")) > MAX_COMPARED_BYTES
            or max(len(old_lines), len(new_lines)) > MAX_COMPARED_LINES):
        added, removed = _counted(old_lines, new_lines)
        return FileChange(shown_path, status, added, removed,
                          note=f"+{added} -{removed}, too large to show line by line")
    return budget.take(shown_path, status, _diff(old_lines, new_lines))


class _Budget:
    """The diff lines still to be shown in all, and for the file at hand."""

    def __init__(self) -> None:
        self.lines, self.chars = MAX_LINES, MAX_BYTES

    def take(self, path: str, status: str, diff: Iterator[str]) -> FileChange:
        lines: list[str] = []
        added = removed = omitted = chars = 0
        for line in diff:
            added += line.startswith("+")
            removed += line.startswith("-")
            shown = _cut(line)
            if (len(lines) < min(MAX_FILE_LINES, self.lines)
                    and chars + len(shown) <= min(MAX_FILE_BYTES, self.chars) and not omitted):
                lines.append(shown)
                chars += len(shown)
            else:
                omitted += 1
        self.lines -= len(lines)
        self.chars -= chars
        return FileChange(path, status, added, removed, tuple(lines), omitted)


def printable(text: str) -> str:
    """``text`` with control, format (bidi) and separator characters escaped (``\\x1b``,
    ``\\u202e``), tabs kept."""
    if text.isprintable():
        return text
    return "".join(char if char == "\t" or unicodedata.category(char) not in _HIDDEN
                   else char.encode("unicode_escape").decode("ascii") for char in text)


def _diff(old: list[str], new: list[str]) -> Iterator[str]:
    """The unified diff's hunks (no file header)."""
    import difflib  # here: only a change that is shown needs it

    lines = difflib.unified_diff(old, new, n=CONTEXT_LINES, lineterm="")
    for index, line in enumerate(lines):
        if index >= 2:  # the "---" and "+++" header
            yield line


def _counted(old: list[str], new: list[str]) -> tuple[int, int]:
    """Lines added and removed, counted as multisets (linear; for files too large to diff)."""
    before, after = Counter(old), Counter(new)
    return sum((after - before).values()), sum((before - after).values())


def _cut(line: str) -> str:
    return _shortened(printable(line[:MAX_LINE_CHARS + 1]), MAX_LINE_CHARS)


def _shortened(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _text(data: bytes | None) -> str | None:
    """The text of ``data`` ("" for no file); None for binary data (a NUL, or not UTF-8)."""
    if data is None:
        return ""
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _described(workspace: Workspace, path: str, after: bytes | None, budget: _Budget
               ) -> FileChange:
    """``file_change`` of ``path`` as the workspace holds it now."""
    try:
        before = read_bytes(workspace, path, MAX_READ_BYTES)
    except (TooBig, OSError) as exc:
        why = "too large" if isinstance(exc, TooBig) else f"unreadable ({exc.strerror})"
        return FileChange(printable(path), "changed", 0, 0, note=f"{why} to compare; "
                          f"it becomes {len(after or b''):,} bytes",
                          content=content_digest(b"", after))
    return file_change(path, before, after, budget)


def _file_from(item: Mapping[str, Any]) -> FileChange:
    path, status, lines, note = item["path"], item["status"], item["lines"], item["note"]
    counts, content = (item["added"], item["removed"], item["omitted"]), item.get("content", "")
    if (type(path) is not str or status not in STATUSES or type(note) is not str
            or not all(type(n) is int and n >= 0 for n in counts)
            or type(lines) is not list or not all(type(line) is str for line in lines)
            or type(content) is not str or len(content) > 64):
        raise TypeError("a file change of the wrong shape")
    return FileChange(path, status, *counts[:2], tuple(lines), counts[2], note, content)
