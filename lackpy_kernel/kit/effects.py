"""Record which workspace files the tools read and modify.

The runner opens a ``recording()`` around a program; the file tools call ``record_read`` and
``record_write``. The kit never needs to know about traces, and the calls are no-ops when
nothing is recording.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field


@dataclass
class FileEffects:
    """Workspace-relative posix paths, each listed once, in first-seen order."""

    files_read: list[str] = field(default_factory=list)
    files_modified: list[str] = field(default_factory=list)


_current: ContextVar[FileEffects | None] = ContextVar("lackpy_file_effects", default=None)


@contextmanager
def recording() -> Iterator[FileEffects]:
    """Collect the file effects of the code run inside the ``with`` block.

    A nested ``recording()`` collects on its own; the outer one does not see those effects.
    """
    effects = FileEffects()
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


def record_write(path: str) -> None:
    """Note that ``path`` (workspace-relative) was created or modified."""
    effects = _current.get()
    if effects is not None and path not in effects.files_modified:
        effects.files_modified.append(path)
