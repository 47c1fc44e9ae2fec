"""An ACP session's record in its workspace, so ``session/load`` can bring it back:
``.lackpy/acp/<session id>.json`` holds the mode, the kit, the last verified program and
the conversation (bounded) as the session updates that showed it."""

from __future__ import annotations

import json
import logging
import os
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from lackpy_kernel.config import CONFIG_DIR
from lackpy_kernel.kit import Kit
from lackpy_kernel.kit.atomic import atomic_write_text

RECORDS_DIR = "acp"
SESSION_ID = re.compile(r"[0-9a-f]{32}")
MAX_HISTORY_UPDATES = 200  # the conversation a record keeps: its newest updates, at most
MAX_HISTORY_CHARS = 1_000_000  # this many and this long (as JSON) in all
MAX_RECORD_BYTES = 4 * MAX_HISTORY_CHARS  # a longer file is refused (it was not written here)
MAX_RECORDS = 64  # a workspace keeps the records of its newest sessions only
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_log = logging.getLogger(__name__)


class RecordError(ValueError):
    """A session record that cannot be loaded; the message says why and what to do."""


@dataclass
class SessionRecord:
    """What ``session/load`` restores: the mode, the kit, the last program that ran well
    (for ``/create``) and the conversation as session updates (JSON, oldest first)."""

    mode: str
    kit: Kit
    last_program: str | None = None
    history: list[dict[str, Any]] = field(default_factory=list)

    def add(self, update: dict[str, Any]) -> None:
        """Keep ``update``, dropping the oldest beyond the record's bounds."""
        self.history.append(update)
        del self.history[:-MAX_HISTORY_UPDATES]
        total = sum(len(json.dumps(u)) for u in self.history)
        while self.history and total > MAX_HISTORY_CHARS:
            total -= len(json.dumps(self.history.pop(0)))


def check_session_id(session_id: str) -> str:
    """``session_id`` when it is one this agent makes (32 hex digits); raises RecordError."""
    if not SESSION_ID.fullmatch(session_id):
        raise RecordError(f"{session_id[:80]!r} is no lackpy session id (32 hex digits); "
                          "use one session/new returned")
    return session_id


def save(workspace: Path, session_id: str, record: SessionRecord) -> None:
    """Write ``record`` (atomically) and keep only the newest ``MAX_RECORDS``; a workspace
    that cannot be written is logged, and the session goes on unsaved."""
    try:
        folder = _folder(workspace)
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_text(folder / f"{session_id}.json", json.dumps(asdict(record)))
        _prune(folder)
    except (OSError, RecordError) as exc:
        _log.warning("session %s is not saved, so session/load cannot restore it: %s",
                     session_id, exc)


def load(workspace: Path, session_id: str) -> SessionRecord:
    """The record of ``session_id`` in ``workspace``; raises RecordError when there is none
    or it cannot be read."""
    path = _folder(workspace) / f"{check_session_id(session_id)}.json"
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        raise RecordError(f"no session {session_id} in {workspace} (each workspace keeps its "
                          f"newest {MAX_RECORDS}); start one with session/new") from None
    except OSError as exc:
        raise RecordError(f"the record of session {session_id} cannot be read: {exc}") from None
    with os.fdopen(fd, "rb") as file:
        data = file.read(MAX_RECORD_BYTES + 1)
    if len(data) > MAX_RECORD_BYTES:
        raise RecordError(f"the record of session {session_id} is over {MAX_RECORD_BYTES} "
                          "bytes, so lackpy did not write it; start a new session")
    try:
        fields = json.loads(data)
        record = SessionRecord(**fields)
    except (ValueError, TypeError, RecursionError) as exc:
        raise RecordError(f"the record of session {session_id} is damaged ({exc}); start a "
                          "new session") from None
    if not isinstance(record.history, list) or not isinstance(record.mode, str):
        raise RecordError(f"the record of session {session_id} is damaged; start a new session")
    return record


def _folder(workspace: Path) -> Path:
    """``.lackpy/acp`` of ``workspace``; raises RecordError when it leads out of it."""
    folder = workspace / CONFIG_DIR / RECORDS_DIR
    if not folder.resolve().is_relative_to(workspace.resolve()):
        raise RecordError(f"{folder} leads outside the workspace; sessions are not kept there")
    return folder


def _prune(folder: Path) -> None:
    records = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in records[MAX_RECORDS:]:
        old.unlink(missing_ok=True)
