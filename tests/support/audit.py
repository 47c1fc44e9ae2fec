"""Count what a piece of code does to the file system, through Python's audit events.

``with recorded_events("open", "os.scandir") as events: ...`` collects, in this thread,
each event of those names with its arguments (``open`` is raised by ``open()`` and
``os.open()``, ``os.scandir`` by a folder listing). A test can then say "this call read
no template file" by counting, without timing anything. Audit hooks cannot be removed,
so one hook is installed for the whole test session and does nothing outside a
``recorded_events`` block.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_local = threading.local()
_installed = False


def _hook(event: str, args: tuple[Any, ...]) -> None:
    wanted = getattr(_local, "wanted", None)
    if wanted is not None and event in wanted:
        _local.events.append((event, args))


@contextmanager
def recorded_events(*names: str) -> Iterator[list[tuple[str, tuple[Any, ...]]]]:
    """The audit events called ``names`` raised in this thread inside the block, in order."""
    global _installed
    if not _installed:
        sys.addaudithook(_hook)
        _installed = True
    _local.wanted, _local.events = frozenset(names), []
    try:
        yield _local.events
    finally:
        _local.wanted = None


def opened_paths(events: list[tuple[str, tuple[Any, ...]]]) -> list[str]:
    """The paths of the ``open`` events among ``events`` (as ``str``)."""
    return [str(args[0]) for event, args in events if event == "open"]
