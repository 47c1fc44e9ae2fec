"""The built-in file tools, confined to a workspace: read, find, write and edit files."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Collection, Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any, TypeVar

from . import code_search
from .atomic import SUPPORTS_DIR_FD, atomic_write_bytes, atomic_write_bytes_at
from .builtin_specs import PROVIDER_NAME, tool_specs
from .effects import (
    check_folder_budget,
    check_write_budget,
    record_folder,
    record_read,
    record_write,
)
from .errors import TooManyMatchesError, WorkspaceError
from .pathmatch import compile_pattern, match_files
from .spec import ToolSpec
from .staging import current_stage
from .toolbox import Toolbox
from .workspace import Workspace

PACKAGE_ROOT = Path(__file__).resolve().parent.parent  # docs paths are relative to it
MAX_READ_BYTES = 16 * 1024 * 1024
MAX_WRITE_BYTES = 16 * 1024 * 1024
MAX_FIND_RESULTS = 10_000
_Hit = TypeVar("_Hit", code_search.Definition, code_search.CallSite)


class FileToolsProvider:
    """Provider ``builtin``: file tools whose every path stays inside one workspace.

    Tools take and return plain data. Files are read and written as UTF-8 text; a file that
    is not valid UTF-8 is refused rather than silently altered.
    """

    name = PROVIDER_NAME

    def __init__(self, workspace: Workspace | str | os.PathLike[str]) -> None:
        self.workspace = workspace if isinstance(workspace, Workspace) else Workspace(workspace)

    def tool_specs(self) -> list[ToolSpec]:
        """The specs of the six file tools (four read-only, two that write)."""
        return tool_specs()

    def resolve(self, spec: ToolSpec) -> Callable[..., Any]:
        """The bound tool function for ``spec``."""
        if spec.name not in _TOOL_NAMES:
            raise KeyError(f"provider {self.name!r} has no tool {spec.name!r}")
        tool: Callable[..., Any] = getattr(self, spec.name)
        return tool

    def resolve_docs(self, spec: ToolSpec) -> Path | None:
        """The absolute path of ``spec.docs`` inside this package, or None."""
        if not spec.docs:
            return None
        path = (PACKAGE_ROOT / spec.docs).resolve()
        return path if path.is_relative_to(PACKAGE_ROOT) and path.is_file() else None

    def read_file(self, path: str) -> str:
        """The text of a UTF-8 file in the workspace (at most 16 MiB)."""
        real = self.workspace.resolve(path)
        text = _read_current(self.workspace, real, path)
        record_read(self.workspace.relative(real))
        return text

    def find_files(self, pattern: str) -> list[str]:
        """Sorted workspace-relative paths of the files matching a glob (``**`` allowed)."""
        try:
            return _match_current(self.workspace, pattern)
        except TooManyMatchesError:
            raise TooManyMatchesError(
                f"find_files({pattern!r}) matches more than {MAX_FIND_RESULTS} files; "
                f"use a narrower pattern such as 'src/**/*.py'"
            ) from None

    def write_file(self, path: str, content: str) -> str:
        """Create or replace a file with ``content``, atomically; parent folders are created."""
        _require_str(content, "content")
        real = _write_target(self.workspace, path)
        _write_text(self.workspace, real, path, content)
        return f"wrote {len(content)} chars to {self.workspace.relative(real)}"

    def edit_file(self, path: str, old: str, new: str) -> str:
        """Replace the one occurrence of ``old`` in a file with ``new``, atomically."""
        _require_str(old, "old")
        _require_str(new, "new")
        if not old:
            raise ValueError("old is empty; give the exact text to replace")
        real = self.workspace.resolve(path, write=True)
        text = _read_current(self.workspace, real, path)
        _check_occurs_once(text.count(old), path)
        _write_text(self.workspace, real, path, text.replace(old, new, 1))
        return f"edited {self.workspace.relative(real)}: replaced {len(old)} chars with {len(new)} chars"

    def find_definitions(self, name: str) -> list[code_search.Definition]:
        """Functions, async functions and classes named ``name`` in the workspace's .py files.

        Raises TooManyMatchesError past ``code_search.MAX_RESULTS`` of them."""
        _require_name(name)
        return self._search(code_search.find_definitions, name)

    def find_callers(self, name: str) -> list[code_search.CallSite]:
        """Calls of ``name(...)`` or ``<anything>.name(...)`` in the workspace's .py files.

        Raises TooManyMatchesError past ``code_search.MAX_RESULTS`` of them."""
        _require_name(name)
        return self._search(code_search.find_callers, name)

    def _search(self, search: Callable[[Workspace, str], Mapping[str, list[_Hit]]],
                name: str) -> list[_Hit]:
        by_file = search(self.workspace, name)
        for relative in by_file:  # only the files that produced results count as read
            record_read(relative)
        return [hit for hits in by_file.values() for hit in hits]


def builtin_toolbox(workspace: Workspace | str | os.PathLike[str],
                    protected: Collection[str] = ()) -> Toolbox:
    """A Toolbox holding the built-in file tools for ``workspace``, whose write tools also
    refuse the files in ``protected`` (real absolute paths; kept, so it may grow)."""
    if not isinstance(workspace, Workspace):
        workspace = Workspace(workspace, protected)
    toolbox = Toolbox()
    toolbox.register_provider(FileToolsProvider(workspace))
    return toolbox


def write_workspace_bytes(workspace: Workspace, path: str, data: bytes) -> str:
    """``write_file`` for bytes: ``data`` as the file ``path``'s new content, under the same
    rules (staged while a program runs); what it wrote. Raises WorkspaceError, OSError,
    TypeError or ValueError."""
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError(f"data must be bytes, not {type(data).__name__}")
    real = _write_target(workspace, path)
    _write_data(workspace, real, path, bytes(data))
    return f"wrote {len(data)} bytes to {workspace.relative(real)}"


def read_workspace_text(workspace: Workspace, path: str) -> str:
    """The text of the UTF-8 file at ``path`` under the rules ``read_file`` keeps: inside the
    workspace, a regular file with a single name (no hard link to a file outside), at most
    16 MiB. Raises WorkspaceError, OSError or ValueError."""
    return _read_text(workspace, workspace.resolve(path), path)


def _read_current(workspace: Workspace, real: Path, shown: str) -> str:
    """The text at ``real`` as the running program sees it: its staged copy, if it wrote
    one, else the workspace's."""
    stage = current_stage(workspace)
    staged = stage.staged(workspace.relative(real)) if stage is not None else None
    if staged is not None:
        return _read_text(*staged, shown)
    return _read_text(workspace, real, shown)


def _match_current(workspace: Workspace, pattern: str) -> list[str]:
    """The files matching ``pattern``, the running program's staged ones among them."""
    segments = compile_pattern(pattern)
    found = match_files(workspace, segments, MAX_FIND_RESULTS)
    stage = current_stage(workspace)
    if stage is None or stage.tree is None:
        return found
    merged = sorted({*found, *match_files(stage.tree, segments, MAX_FIND_RESULTS)})
    if len(merged) > MAX_FIND_RESULTS:
        raise TooManyMatchesError(f"more than {MAX_FIND_RESULTS} files match")
    return merged


def _read_text(workspace: Workspace, real: Path, shown: str) -> str:
    try:
        info = os.stat(real)
    except (FileNotFoundError, NotADirectoryError):
        raise _no_such_file(shown) from None
    _check_is_file(info, shown)
    # Open, then check what was opened: the path may have been swapped since resolve().
    # O_NONBLOCK: a FIFO swapped in meanwhile must not block the open.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(real, flags | getattr(os, "O_CLOEXEC", 0))
    except (FileNotFoundError, NotADirectoryError):
        raise _no_such_file(shown) from None
    with open(fd, "rb") as stream:
        workspace.check_opened(fd, shown)
        info = os.fstat(fd)
        _check_is_file(info, shown)
        _check_one_name(info, shown)
        # Room for what fstat says is there (a buffer of the cap would cost more than a
        # small file's read), then on up to the cap if it grew since.
        data = stream.read(min(info.st_size, MAX_READ_BYTES) + 1)
        if len(data) > info.st_size:
            data += stream.read(MAX_READ_BYTES + 1 - len(data))
    if len(data) > MAX_READ_BYTES:
        raise ValueError(
            f"{shown!r} is larger than {MAX_READ_BYTES} bytes (16 MiB), the most read_file reads"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(
            f"{shown!r} is not UTF-8 text (byte {data[error.start]:#04x} at offset "
            f"{error.start}); the file tools read and write UTF-8 text files only"
        ) from None


def _no_such_file(shown: str) -> FileNotFoundError:
    return FileNotFoundError(
        f"no file {shown!r} in the workspace; use find_files() to see which files exist"
    )


def _check_is_file(info: os.stat_result, shown: str) -> None:
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(f"{shown!r} is a folder, not a file; use find_files('{shown}/*') to list it")
    if not stat.S_ISREG(info.st_mode):
        raise ValueError(f"{shown!r} is not a regular file; read_file reads regular files only")


def _check_one_name(info: os.stat_result, shown: str) -> None:
    """Refuse a file with more than one hard link: its other names cannot be seen from here,
    and one may lie outside the workspace (reading it would read that file; writing, in
    place, would change it)."""
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        raise WorkspaceError(
            f"{shown!r} has {info.st_nlink} hard links: the same file has another name, which "
            f"may lie outside the workspace, so the file tools neither read nor write it; "
            f"copy it to a file of its own and use the copy"
        )


def _write_target(workspace: Workspace, path: str) -> Path:
    """The real path a write of ``path`` goes to; refused when it is a folder."""
    real = workspace.resolve(path, write=True)
    if real.is_dir():
        raise IsADirectoryError(f"{path!r} is a folder; write_file needs a file path")
    return real


def _write_text(workspace: Workspace, real: Path, shown: str, text: str) -> None:
    """Write ``text`` to the resolved path ``real``, within the write budget, and record it."""
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(f"the text for {shown!r} cannot be written as UTF-8: {error}") from None
    _write_data(workspace, real, shown, data)


def _write_data(workspace: Workspace, real: Path, shown: str, data: bytes) -> None:
    """Write ``data`` to the resolved path ``real``, within the write budget, and record it."""
    with suppress(FileNotFoundError, NotADirectoryError):
        _check_one_name(os.stat(real, follow_symlinks=False), shown)
    if len(data) > MAX_WRITE_BYTES:
        raise ValueError(
            f"the content for {shown!r} is {len(data)} bytes; the most a file tool writes is "
            f"{MAX_WRITE_BYTES} bytes (16 MiB)"
        )
    relative = workspace.relative(real)
    check_write_budget(relative, len(data))
    stage = current_stage(workspace)
    if stage is not None:
        stage.write(relative, data, shown)
    elif SUPPORTS_DIR_FD:
        dir_fd = workspace.open_folder_for_write(real.parent, shown)
        try:
            atomic_write_bytes_at(dir_fd, real.name, data)
        finally:
            os.close(dir_fd)
    else:  # no *at() calls (Windows): the path checks of resolve() are all there is
        _make_folders(workspace, real.parent, shown)
        atomic_write_bytes(real, data)
    record_write(relative, len(data))


def _make_folders(workspace: Workspace, folder: Path, shown: str) -> None:
    # One level at a time: pathlib's mkdir(parents=True) recurses once per missing folder.
    missing = []
    while not folder.is_dir():
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        check_folder_budget(shown, len(Path(workspace.relative(path)).parts))
        try:
            path.mkdir(exist_ok=True)
            record_folder()
        except (FileExistsError, NotADirectoryError):
            raise NotADirectoryError(
                f"cannot create the folders for {shown!r}: a file is in the way"
            ) from None


def _check_occurs_once(count: int, shown: str) -> None:
    if count == 0:
        raise ValueError(
            f"the text to replace does not occur in {shown!r}; read_file() it and copy the "
            f"exact text, whitespace included"
        )
    if count > 1:
        raise ValueError(
            f"the text to replace occurs {count} times in {shown!r}; it must occur exactly "
            f"once, so include more of the surrounding text"
        )


def _require_str(value: object, what: str) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, not {type(value).__name__}")


def _require_name(name: object) -> None:
    _require_str(name, "name")
    if not name:
        raise ValueError("name is empty; give the name of a function or class")


_TOOL_NAMES = frozenset(spec.name for spec in tool_specs())
