"""A program's file changes as a person sees them before they land (``[sandbox] approve``).

``describe_changes`` reads what each changed file held and builds a ``Change``: per file,
new, changed or deleted, its +/- line counts and the changed lines as a unified diff,
bounded per file and in all (``MAX_FILE_LINES``, ``MAX_FILE_BYTES``, ``MAX_LINES``,
``MAX_BYTES``, ``MAX_LINE_CHARS`` columns, a tab counting 8); data that is mostly not text
is summarized (its sizes, a hash and a hex excerpt), as is a file too large to compare line
by line. Every path and line is shown visible (``kit.visible``: control, bidi, zero-width
and blank-looking characters escaped, a NUL as ``\x00``), so a hostile file name or
content cannot hide or rewrite a terminal.

The rendering is faithful: whatever was cut or summarized is named in ``unseen``, each file
keeps its whole rendering in ``full`` (up to ``MAX_FULL_CHARS``, one string: each line and
a line break), and ``in_full()`` gives the change with all of it shown; ``complete`` says
whether a person has seen everything, so a bare "yes" can only apply what was shown. What
is displayed first (``to_shown_frame``) carries what is shown and how much more there is,
not the whole rendering: that is displayed when the person asks for all of it. A file that
runs code (``runs_code``: git's files, CI workflows, editor tasks, ``conftest.py``, build
files, an executable...) is named with the reason. The digest covers the whole content and
every argument of a call. ``Change`` crosses the sandbox's pipe as plain data
(``to_frame``/``from_frame``) and renders as text here;
``lackpy_kernel.notebook.bundles.change_bundle`` renders it as HTML.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import stat
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from .undo import TooBig, cannot_undo, read_bytes
from .visible import cut, plain, visible
from .workspace import Workspace

MAX_FILE_LINES = 80  # diff lines shown for one file
MAX_FILE_BYTES = 8_000  # characters of diff lines shown for one file
MAX_LINES = 400  # diff lines shown in all
MAX_BYTES = 40_000  # characters of diff lines shown in all
MAX_LINE_CHARS = 240  # the most columns of one line shown (a tab counts 8)
MAX_CALL_CHARS = 2_000  # the most of a call's arguments shown
MAX_FULL_CHARS = 2_000_000  # the most of one file's (or a call's) whole rendering kept
BINARY_SHARE = 0.3  # data with more characters than this share not text is binary
HEX_EXCERPT = 32  # bytes of binary data shown in hex
MAX_COMPARED_BYTES = 500_000  # larger files are counted, not compared line by line
MAX_COMPARED_LINES = 10_000
MAX_READ_BYTES = 16 * 1024 * 1024  # a file tool writes no more; a larger file is not read
CONTEXT_LINES = 2  # unchanged lines shown around each change
STATUSES = ("new", "changed", "deleted")
_NOT_TEXT = bytes(range(0x09)) + bytes(range(0x0E, 0x20))  # control characters but \t\n\v\f\r
_SIMPLE = bytes(range(0x20, 0x7F)) + b"\t\n"  # text of these alone is shown as it is, line by line
_NOT_UTF8 = re.compile("[\udc80-\udcff]")  # a byte that was not UTF-8 (surrogateescape)
# Files that run code when a tool reads them, and why: the question names them.
RUNS_CODE: tuple[tuple[str, str], ...] = (
    (".git/hooks/*", "git runs this hook"),
    (".git/config", "git runs the programs it names (core.fsmonitor, hooks, aliases)"),
    (".git/*", "git reads this and may run what it names"),
    (".github/workflows/*", "CI runs this workflow"),
    (".gitlab-ci.yml", "CI runs this pipeline"),
    (".vscode/*", "VS Code runs the tasks and settings here"),
    (".idea/*", "the IDE runs the configurations here"),
    (".envrc", "direnv runs this when a shell enters the folder"),
    ("conftest.py", "pytest imports this"),
    ("sitecustomize.py", "Python imports this at start-up"),
    ("usercustomize.py", "Python imports this at start-up"),
    ("*.pth", "Python runs its import lines at start-up"),
    (".pre-commit-config.yaml", "pre-commit runs the hooks it names"),
    ("setup.py", "pip runs this to build the package"),
    ("pyproject.toml", "pip runs the build backend it names"),
    ("noxfile.py", "nox runs this"),
    ("tox.ini", "tox runs the commands it names"),
    ("Makefile", "make runs this"),
    ("makefile", "make runs this"),
    ("GNUmakefile", "make runs this"),
    ("Dockerfile", "docker build runs this"),
    ("package.json", "npm runs the scripts it names"),
    (".bashrc", "the shell runs this at start-up"),
    (".bash_profile", "the shell runs this at start-up"),
    (".bash_login", "the shell runs this at start-up"),
    (".profile", "the shell runs this at start-up"),
    (".zshrc", "the shell runs this at start-up"),
    (".zshenv", "the shell runs this at start-up"),
    (".zprofile", "the shell runs this at start-up"),
)
EXECUTABLE = "it is executable: it runs as a program"


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file's change: ``status`` (new, changed, deleted), lines ``added`` and
    ``removed``, the unified diff's ``lines`` shown (hunk headers and ``+``/``-``/`` ``
    lines, visible), how many more were ``omitted``, a ``note`` for a file summarized
    instead (binary, too large to compare), and a digest of its whole ``content`` before and
    after, so that an approval covers what was not shown too. ``unseen`` says what of it
    was not shown ("" when all was), ``full`` is its whole rendering then, each line
    followed by a line break ("": none; ``full_lines``), ``rest`` what even that leaves out,
    ``runs_code`` why the file runs code ("" when it does not), ``executable`` whether it
    is (and stays) executable, and ``undo`` why its change cannot be undone ("" when it
    can)."""

    path: str
    status: str
    added: int
    removed: int
    lines: tuple[str, ...] = ()
    omitted: int = 0
    note: str = ""
    content: str = ""
    unseen: str = ""
    full: str = ""
    rest: str = ""
    runs_code: str = ""
    executable: bool = False
    undo: str = ""

    @property
    def counts(self) -> str:
        """``+3 -1`` (a side with nothing left out)."""
        return " ".join(part for part in (f"+{self.added}" if self.added else "",
                                           f"-{self.removed}" if self.removed else "") if part)

    @property
    def summary(self) -> str:
        """Its note or counts, what runs code about it, and its mode."""
        parts = [self.note or self.counts]
        if self.executable:
            parts.append("executable (mode kept)")
        if self.runs_code:
            parts.append(f"RUNS CODE: {self.runs_code}")
        if self.undo:
            parts.append(f"cannot be undone: {self.undo}")
        return "; ".join(part for part in parts if part)

    @property
    def full_lines(self) -> tuple[str, ...]:
        """The lines of its whole rendering (none when nothing was left unseen)."""
        return _split(self.full)

    def in_full(self) -> FileChange:
        """This file's change with its whole rendering shown."""
        if not self.unseen:
            return self
        return replace(self, lines=self.full_lines, omitted=0, unseen=self.rest, full="",
                       rest="")

    def to_frame(self) -> dict[str, Any]:
        """Plain data for the wire (its whole rendering ``full`` one string)."""
        return {"path": self.path, "status": self.status, "added": self.added,
                "removed": self.removed, "lines": list(self.lines), "omitted": self.omitted,
                "note": self.note, "content": self.content, "unseen": self.unseen,
                "full": self.full, "rest": self.rest, "runs_code": self.runs_code,
                "executable": self.executable, "undo": self.undo}

    def to_shown_frame(self) -> dict[str, Any]:
        """What is displayed of it before the person asks for all of it: ``to_frame`` but
        its whole rendering, of which ``more`` says how many lines the kernel holds to show
        (0: none)."""
        frame = self.to_frame()
        del frame["full"]
        return {**frame, "more": self.full.count("\n")}


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call of a tool that acts beyond the workspace's files (a ``write`` tool that runs in
    the kernel: an MCP server's, ``where = "kernel"``), asked for before it runs: the tool's
    ``name`` and its ``arguments`` as shown (bounded, visible); when they were cut,
    ``unseen`` says so and ``full`` holds them all (up to ``MAX_FULL_CHARS``); ``digest``
    covers every argument, shown or not."""

    name: str
    arguments: str
    unseen: str = ""
    full: str = ""
    digest: str = ""

    def to_frame(self) -> dict[str, Any]:
        """Plain data for the wire."""
        return {"name": self.name, "arguments": self.arguments, "unseen": self.unseen,
                "full": self.full, "digest": self.digest}

    def to_shown_frame(self) -> dict[str, Any]:
        """What is displayed of it before the person asks for all of it: ``to_frame`` but
        ``full``, of which ``more`` says how many characters the kernel holds to show."""
        return {"name": self.name, "arguments": self.arguments, "unseen": self.unseen,
                "more": len(self.full), "digest": self.digest}


@dataclass(frozen=True, slots=True)
class Change:
    """A program's file changes, one ``FileChange`` a file, in the order it wrote them; or,
    with ``call`` (and no files), the call of a tool it asks to make."""

    files: tuple[FileChange, ...]
    call: ToolCall | None = None

    @classmethod
    def of_call(cls, tool: str, arguments: str, full: str | None = None) -> Change:
        """The change a call of ``tool`` with ``arguments`` (their text as shown) asks to
        make, shown visible and cut to ``MAX_CALL_CHARS``; ``full`` is every argument's
        text when ``arguments`` left some out."""
        whole = arguments if full is None else full
        shown = _shortened(visible(arguments[:MAX_CALL_CHARS + 1]), MAX_CALL_CHARS)
        kept = visible(whole[:MAX_FULL_CHARS])
        unseen = ""
        if full is not None and full != arguments or len(arguments) > MAX_CALL_CHARS:
            unseen = f"the arguments were cut to {len(shown):,} of {len(whole):,} characters"
            if len(whole) > MAX_FULL_CHARS:
                unseen += f" (and {len(whole) - MAX_FULL_CHARS:,} are past what can be shown)"
        return cls((), ToolCall(visible(tool[:MAX_LINE_CHARS]), shown, unseen,
                                kept if unseen else "", _digest(tool, whole)))

    @property
    def complete(self) -> bool:
        """Whether everything the change does was shown (nothing cut or summarized)."""
        return not self.unseen()

    def unseen(self) -> list[str]:
        """What was not shown, one line a file (or the call)."""
        if self.call is not None:
            return [self.call.unseen] if self.call.unseen else []
        return [f"{file.path}: {file.unseen}" for file in self.files if file.unseen]

    def in_full(self) -> Change:
        """The change with everything it kept shown (``complete`` unless even that was cut)."""
        if self.call is not None:
            call = self.call
            if not call.unseen:
                return self
            rest = call.unseen if len(call.full) >= MAX_FULL_CHARS else ""
            return replace(self, call=replace(call, arguments=call.full, full="", unseen=rest))
        return replace(self, files=tuple(file.in_full() for file in self.files))

    def runs_code(self) -> list[str]:
        """The files that run code, each with why."""
        return [f"{file.path}: {file.runs_code}" for file in self.files if file.runs_code]

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
        ``Call NAME?`` (its arguments are in ``summary`` and ``to_text``), then the files
        that run code and what was not shown, each with its reason."""
        asked = "Apply these changes?" if self.call is None else f"Call {self.call.name}?"
        warnings = self.warnings()
        return f"{asked} {warnings}" if warnings else asked

    def warnings(self) -> str:
        """What the question adds: the files that run code, and what was not shown."""
        said = []
        code = self.runs_code()
        if code:
            said.append(f"{len(code)} file{' runs' if len(code) == 1 else 's run'} code: "
                        + "; ".join(code) + ".")
        lasting = [f"{file.path} ({file.undo})" for file in self.files if file.undo]
        if lasting:
            said.append("Cannot be undone: " + "; ".join(lasting) + ".")
        unseen = self.unseen()
        if unseen:
            said.append("Not shown: " + "; ".join(unseen) + ".")
        return " ".join(said)

    def to_text(self) -> str:
        """The change as a terminal shows it: the summary, one line a file, then each
        file's diff (for a call: the call, and why it is asked for)."""
        if self.call is not None:
            unseen = f"\n  not shown: {self.call.unseen}" if self.call.unseen else ""
            return (f"{self.summary()}\n  {self.call.name} acts beyond the workspace's files "
                    "(a tool graded write that runs in the kernel), so it runs only if you "
                    f"allow this call{unseen}")
        width = max((len(file.path) for file in self.files), default=0)
        out = [self.summary()]
        if self.warnings():
            out.append(self.warnings())
        out += [f"  {file.status:<8} {file.path:<{width}}  {file.summary}".rstrip()
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
        """Plain data for the wire (the sandbox's pipe, a paused run's record)."""
        frame: dict[str, Any] = {"files": [file.to_frame() for file in self.files]}
        if self.call is not None:
            frame["call"] = self.call.to_frame()
        return frame

    def to_shown_frame(self) -> dict[str, Any]:
        """What an approval's display bundle carries: ``to_frame`` less the whole renderings
        of what was not shown (each part says how much more there is: ``more``), which are
        displayed once the person asks for all of it (``in_full``)."""
        frame: dict[str, Any] = {"files": [file.to_shown_frame() for file in self.files]}
        if self.call is not None:
            frame["call"] = self.call.to_shown_frame()
        return frame

    @classmethod
    def from_frame(cls, frame: Mapping[str, Any]) -> Change:
        """The change ``to_frame`` gave. Raises ValueError when its shape is wrong."""
        try:
            files = tuple(_file_from(item) for item in frame["files"])
            call = frame.get("call")
            if call is not None:
                call = _call_from(call)
        except (KeyError, TypeError) as exc:
            raise ValueError(f"malformed change: {type(exc).__name__}") from None
        return cls(files, call)


def change_digest(change: Change) -> str:
    """A hash of ``change`` (each file's path, status, counts, diff lines and whole content,
    or the call with every argument), naming it in a question, a pause and an approval."""
    import hashlib  # here: the sandbox worker needs it only once a program writes

    text = json.dumps(change.to_frame(), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def describe_changes(workspace: Workspace, changes: Iterable[tuple[str, bytes | None]]
                     ) -> Change:
    """The change that writing ``changes`` (workspace-relative path, new content or None
    to delete) would make to ``workspace``, as its files hold now."""
    budget = _Budget()
    extra = runs_code_patterns(workspace.root)
    changes = list(changes)
    lasting = cannot_undo(workspace, [path for path, _ in changes])
    return Change(tuple(replace(_marked(workspace, _described(workspace, path, after, budget),
                                        path, extra), undo=visible(lasting.get(path, "")))
                        for path, after in changes))


def runs_code(path: str, executable: bool = False,
              extra: Iterable[str] = ()) -> str:
    """Why the file at ``path`` (workspace-relative, ``/`` separated) runs code, or "": the
    default list ``RUNS_CODE`` (a pattern without ``/`` matches the file's name in any
    folder), the ``extra`` patterns of ``[approval] runs_code``, and any executable file."""
    name = path.rsplit("/", 1)[-1]
    for pattern, why in RUNS_CODE:
        if fnmatch.fnmatchcase(path if "/" in pattern else name, pattern):
            return why
    for pattern in extra:
        if fnmatch.fnmatchcase(path, pattern):
            return "[approval] runs_code names it"
    return EXECUTABLE if executable else ""


def runs_code_patterns(root: str | os.PathLike[str]) -> tuple[str, ...]:
    """The ``[approval] runs_code`` patterns of the workspace at ``root`` (none when its
    config cannot be read: the defaults still hold)."""
    from lackpy_kernel.config import load_config  # noqa: PLC0415 - only when a program writes
    from lackpy_kernel.errors import ConfigError  # noqa: PLC0415

    try:
        return tuple(load_config(root).approval_runs_code)
    except ConfigError:
        return ()


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
    (old, old_simple), (new, new_simple) = _text(before), _text(after)
    shown_path = visible(path)
    if old is None or new is None:
        return _binary(shown_path, status, before, after)
    if max(len(before or b""), len(after or b"")) > MAX_COMPARED_BYTES:
        return _large(shown_path, status, (old, old_simple), (new, new_simple),
                      after is not None)
    old_lines, new_lines = old.splitlines(), new.splitlines()
    if max(len(old_lines), len(new_lines)) > MAX_COMPARED_LINES:
        return _large(shown_path, status, (old, old_simple), (new, new_simple),
                      after is not None, (old_lines, new_lines))
    return budget.take(shown_path, status, _diff(old_lines, new_lines))


def _large(path: str, status: str, old: tuple[str, bool], new: tuple[str, bool], kept: bool,
           lines: tuple[list[str], list[str]] | None = None) -> FileChange:
    """The change of a file too large to compare line by line: its lines counted, and the
    new text (the old one when it goes: not ``kept``) as its whole rendering, ``+`` (``-``)
    before each line. ``old`` and ``new`` are each a text and whether it is simple (only
    printable ASCII, tabs and line feeds: its lines are shown as they are, found at once)."""
    old_lines, new_lines = lines or (None, None)
    if not old[0] or not new[0]:  # one side empty: a count of lines, no comparison
        added, removed = _line_count(*new, new_lines), _line_count(*old, old_lines)
    else:
        added, removed = _counted(old_lines or old[0].splitlines(),
                                  new_lines or new[0].splitlines())
    shown = FileChange(path, status, added, removed,
                       note=f"+{added} -{removed}, too large to show line by line")
    unseen = "its lines were counted, not shown"
    (text, simple), sign, split = (new, "+", new_lines) if kept else (old, "-", old_lines)
    if simple:
        rendered = _rendered(text, sign)
        if len(rendered) <= MAX_FULL_CHARS:
            return replace(shown, unseen=unseen, full=rendered)
    return _with_full(shown, unseen, (f"{sign}{line}" for line in
                                      (text.splitlines() if split is None else split)))


def _line_count(text: str, simple: bool, lines: list[str] | None) -> int:
    """How many lines ``text`` has (``str.splitlines``'s count; ``lines`` when split)."""
    if lines is not None:
        return len(lines)
    if simple:  # only line feeds break it
        return text.count("\n") + (not text.endswith("\n")) if text else 0
    return len(text.splitlines())


def _rendered(text: str, sign: str) -> str:
    """The lines of simple ``text`` (see ``_large``), ``sign`` before each, a line break
    after each: ``full`` built at once rather than line by line."""
    if not text:
        return ""
    rendered = sign + text.replace("\n", "\n" + sign)
    return rendered[:-len(sign)] if text.endswith("\n") else rendered + "\n"


def _binary(path: str, status: str, before: bytes | None, after: bytes | None) -> FileChange:
    """A file whose data is mostly not text: its sizes, the new data's hash and a hex
    excerpt; its whole data in hex as ``full``."""
    import hashlib  # noqa: PLC0415 - here: the sandbox worker needs it only once a program writes

    data = after if after is not None else before or b""
    note = (f"binary, {len(before or b''):,} -> {len(after or b''):,} bytes, sha256 "
            f"{hashlib.sha256(data).hexdigest()[:16]}, {'starts' if after is not None else 'was'}"
            f" {data[:HEX_EXCERPT].hex(' ')}")
    shown = FileChange(path, status, 0, 0, note=note)
    if len(data) <= HEX_EXCERPT:
        return shown
    return _with_full(shown, f"{len(data) - HEX_EXCERPT:,} bytes shown only as a hash",
                      (data[at:at + HEX_EXCERPT].hex(" ")
                       for at in range(0, len(data), HEX_EXCERPT)))


def _with_full(change: FileChange, unseen: str, lines: Iterable[str]) -> FileChange:
    """``change`` with ``unseen`` named and ``lines`` (visible) as its whole rendering, up to
    ``MAX_FULL_CHARS`` (``rest`` says what is past them)."""
    full, left = _kept(list(lines))
    rest = f"{left:,} more lines past what can be shown" if left else ""
    return replace(change, unseen=unseen, full=_joined(full), rest=rest)


def _joined(lines: list[str] | tuple[str, ...]) -> str:
    """``lines`` as ``FileChange.full`` holds them: each followed by a line break."""
    return "\n".join(lines) + "\n" if lines else ""


def _split(full: str) -> tuple[str, ...]:
    """The lines of a ``FileChange.full``."""
    return tuple(full[:-1].split("\n")) if full else ()


def _kept(lines: list[str]) -> tuple[list[str], int]:
    """``lines`` made visible, as many as ``MAX_FULL_CHARS`` hold (a line break each), and
    how many more there were."""
    if sum(map(len, lines)) + len(lines) <= MAX_FULL_CHARS and plain("".join(lines)):
        return lines, 0  # all of them, as they are: checked at once, not line by line
    full: list[str] = []
    size = 0
    for index, line in enumerate(lines):
        if size + len(line) > MAX_FULL_CHARS:
            return full, len(lines) - index
        shown = visible(line)
        full.append(shown)
        size += len(shown) + 1
    return full, 0


class _Budget:
    """The diff lines still to be shown in all, and for the file at hand."""

    def __init__(self) -> None:
        self.lines, self.chars = MAX_LINES, MAX_BYTES

    def take(self, path: str, status: str, diff: Iterator[str]) -> FileChange:
        lines: list[str] = []
        every: list[str] = []
        added = removed = omitted = chars = shortened = 0
        for line in diff:
            added += line.startswith("+")
            removed += line.startswith("-")
            every.append(line)
            shown, was_cut = _cut(line)
            if (len(lines) < min(MAX_FILE_LINES, self.lines)
                    and chars + len(shown) <= min(MAX_FILE_BYTES, self.chars) and not omitted):
                lines.append(shown)
                chars += len(shown)
                shortened += was_cut
            else:
                omitted += 1
        self.lines -= len(lines)
        self.chars -= chars
        change = FileChange(path, status, added, removed, tuple(lines), omitted)
        unseen = _unseen_lines(omitted, shortened)
        return _with_full(change, unseen, every) if unseen else change


def printable(text: str) -> str:
    """``text`` as a person can see it (``kit.visible.visible``)."""
    return visible(text)


def _unseen_lines(omitted: int, shortened: int) -> str:
    parts = []
    if omitted:
        parts.append(f"{omitted} more line{'s' if omitted != 1 else ''}")
    if shortened:
        parts.append(f"{shortened} line{'s' if shortened != 1 else ''} cut at "
                     f"{MAX_LINE_CHARS} columns")
    return " and ".join(parts)


def _digest(*parts: str) -> str:
    import hashlib  # noqa: PLC0415 - here: only a question needs it

    digest = hashlib.sha256()
    for part in parts:
        data = part.encode("utf-8", "surrogatepass")
        digest.update(b"%d:" % len(data) + data)
    return digest.hexdigest()[:32]


def _marked(workspace: Workspace, change: FileChange, path: str, extra: Iterable[str]
            ) -> FileChange:
    """``change`` with whether its file is executable (its mode is kept when it is replaced)
    and why it runs code."""
    executable = False
    if change.status != "new":
        try:
            executable = bool((workspace.root / path).lstat().st_mode
                              & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH))
        except OSError:
            pass
    kept = executable and change.status == "changed"
    return replace(change, executable=kept, runs_code=runs_code(path, kept, extra))


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


def _cut(line: str) -> tuple[str, bool]:
    """``line`` visible within ``MAX_LINE_CHARS`` columns, and whether it was cut."""
    head = visible(line[:MAX_LINE_CHARS * 2])
    shown = cut(head, MAX_LINE_CHARS)
    return shown, shown != head or len(line) > MAX_LINE_CHARS * 2


def _shortened(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _text(data: bytes | None) -> tuple[str | None, bool]:
    """The text of ``data`` ("" for no file), bytes that are not UTF-8 kept as lone
    surrogates (shown ``\\xNN``); None for data mostly not text (more than
    ``BINARY_SHARE`` of it control characters or bytes that are not UTF-8). And whether it
    is simple: only printable ASCII, tabs and line feeds (each line visible as it is)."""
    if data is None:
        return "", True
    text = data.decode("utf-8", "surrogateescape")
    rest = data.translate(None, _SIMPLE)  # all but the simple bytes
    if not rest:
        return text, True
    odd = len(rest) - len(rest.translate(None, _NOT_TEXT))  # one character each
    if not rest.isascii():
        odd += len(text) - len(_NOT_UTF8.sub("", text))
    return None if odd > BINARY_SHARE * max(len(text), 1) else text, False


def _described(workspace: Workspace, path: str, after: bytes | None, budget: _Budget
               ) -> FileChange:
    """``file_change`` of ``path`` as the workspace holds it now."""
    try:
        before = read_bytes(workspace, path, MAX_READ_BYTES)
    except (TooBig, OSError) as exc:
        why = "too large" if isinstance(exc, TooBig) else f"unreadable ({exc.strerror})"
        return _uncompared(path, after, why)
    return file_change(path, before, after, budget)


def _uncompared(path: str, after: bytes | None, why: str) -> FileChange:
    """The change of a file whose old content could not be read (``why``): summarized, and
    what it becomes kept whole to be shown (as for a new file), so that showing all of it
    shows all that lands."""
    becomes = _shown_change(path, None, after, _Budget()).in_full() if after else None
    rows = "" if becomes is None else _joined(becomes.lines or (becomes.note,))
    return FileChange(visible(path), "changed", 0, 0, note=f"{why} to compare; "
                      f"it becomes {len(after or b''):,} bytes",
                      content=content_digest(b"", after),
                      unseen="what it held before could not be read", full=rows,
                      rest="" if becomes is None else becomes.unseen)


def _file_from(item: Mapping[str, Any]) -> FileChange:
    path, status, lines, note = item["path"], item["status"], item["lines"], item["note"]
    counts, content = (item["added"], item["removed"], item["omitted"]), item.get("content", "")
    texts = (item.get("unseen", ""), item.get("rest", ""), item.get("runs_code", ""),
             item.get("undo", ""))
    full, executable = item.get("full", ""), item.get("executable", False)
    if _lines(full):  # a record written when it was a list of lines
        full = _joined(full)
    if (type(path) is not str or status not in STATUSES or type(note) is not str
            or not all(type(n) is int and n >= 0 for n in counts)
            or not _lines(lines) or type(full) is not str or full[-1:] not in ("", "\n")
            or type(executable) is not bool
            or not all(type(text) is str for text in texts)
            or type(content) is not str or len(content) > 64):
        raise TypeError("a file change of the wrong shape")
    return FileChange(path, status, *counts[:2], tuple(lines), counts[2], note, content,
                      texts[0], full, texts[1], texts[2], executable, texts[3])


def _call_from(item: Any) -> ToolCall:
    fields = ("name", "arguments", "unseen", "full", "digest")
    if (type(item) is not dict or "name" not in item or "arguments" not in item
            or not all(type(item.get(key, "")) is str for key in fields)):
        raise TypeError("a call of the wrong shape")
    name, arguments, unseen, full, digest = (visible(item.get(key, "")) for key in fields)
    return ToolCall(name[:MAX_LINE_CHARS], arguments, unseen, full, digest)


def _lines(value: Any) -> bool:
    return type(value) is list and all(type(line) is str for line in value)
