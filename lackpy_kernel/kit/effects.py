"""Record which workspace files the tools read and modify.

The runner opens a ``recording()`` around a program; the file tools call ``record_read`` and
``record_write``. The kit never needs to know about traces, and the calls are no-ops when
nothing is recording.

A recording is also a program's write budget: the write tools call ``check_write_budget``
before they write. Without a recording (the tools used directly) there is no budget.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from .errors import WriteBudgetError

# The most one program (one recording) may write: bytes in all, distinct files, folders it
# makes, and how deep below the workspace it may make one.
WRITE_BUDGET_BYTES = 256 * 1024 * 1024
WRITE_BUDGET_FILES = 10_000
WRITE_BUDGET_FOLDERS = 1_000
MAX_FOLDER_DEPTH = 32


@dataclass
class FileEffects:
    """Workspace-relative posix paths, each listed once, in first-seen order."""

    files_read: list[str] = field(default_factory=list)
    files_modified: list[str] = field(default_factory=list)
    bytes_written: int = 0
    folders_made: int = 0
    on_modified: Callable[[str], None] | None = None


_current: ContextVar[FileEffects | None] = ContextVar("lackpy_file_effects", default=None)


@contextmanager
def recording(on_modified: Callable[[str], None] | None = None) -> Iterator[FileEffects]:
    """Collect the file effects of the code run inside the ``with`` block.

    ``on_modified`` hears of each modified file as it happens, so a program that is killed
    later still cannot hide what it wrote. A nested ``recording()`` collects on its own; the
    outer one does not see those effects.
    """
    effects = FileEffects(on_modified=on_modified)
    token = _current.set(effects)
    try:
        yield effects
    finally:
        _current.reset(token)


def record_read(path: str) -> None:
    """Note that ``path`` (workspace-relative) was read."""
    effects = _current.get()
    if effects is not None and path not in effects.files_read:
        effects.files_read.append(path)


def record_write(path: str, size: int = 0) -> None:
    """Note that ``path`` (workspace-relative) was created or modified with ``size`` bytes."""
    effects = _current.get()
    if effects is None:
        return
    effects.bytes_written += size
    if path not in effects.files_modified:
        effects.files_modified.append(path)
        if effects.on_modified is not None:
            effects.on_modified(path)


def check_write_budget(path: str, size: int) -> None:
    """Raise ``WriteBudgetError`` if writing ``size`` bytes to ``path`` would overrun the
    budget of the program being recorded."""
    effects = _current.get()
    if effects is None:
        return
    if effects.bytes_written + size > WRITE_BUDGET_BYTES:
        raise WriteBudgetError(
            f"write budget exceeded: this program already wrote {effects.bytes_written} bytes "
            f"and {path!r} would add {size}; a program may write at most "
            f"{_size_text(WRITE_BUDGET_BYTES)} in all (limits are per program)"
        )
    if path not in effects.files_modified and len(effects.files_modified) >= WRITE_BUDGET_FILES:
        raise WriteBudgetError(
            f"write budget exceeded: this program already created or modified "
            f"{len(effects.files_modified)} files, the most it may; {path!r} would be one more "
            f"(limits are per program)"
        )


def check_folder_budget(path: str, depth: int) -> None:
    """Raise ``WriteBudgetError`` if making a folder ``depth`` levels below the workspace,
    on the way to ``path``, would overrun the budget of the program being recorded."""
    effects = _current.get()
    if effects is None:
        return
    if depth > MAX_FOLDER_DEPTH:
        raise WriteBudgetError(
            f"write budget exceeded: {path!r} would need a folder {depth} levels below the "
            f"workspace; a program may make folders at most {MAX_FOLDER_DEPTH} levels deep"
        )
    if effects.folders_made >= WRITE_BUDGET_FOLDERS:
        raise WriteBudgetError(
            f"write budget exceeded: this program already made {effects.folders_made} folders, "
            f"the most it may; {path!r} would need another (limits are per program)"
        )


def record_folder() -> None:
    """Note that a tool made a folder (it counts against the write budget)."""
    effects = _current.get()
    if effects is not None:
        effects.folders_made += 1


def _size_text(size: int) -> str:
    mib = size / (1024 * 1024)
    return f"{mib:g} MiB" if mib >= 1 else f"{size} bytes"
