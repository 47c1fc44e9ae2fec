"""``.lackpy/usage.sqlite``: one row per model call and per answer the ratchet gave without one.

Rows are written behind the caller (see ``_behind``), those gathered meanwhile in one short
transaction on a connection of its own, in WAL mode with a busy timeout, so two processes
(a kernel and ``lackpy mcp``, say) can write at once. A read writes this process's pending
rows first. The record keeps the last :data:`MAX_ROWS` rows.
A write that fails (a corrupt file, a full disk) is logged once per file and never fails
the caller; a read that fails raises TelemetryError saying what to do.
"""

from __future__ import annotations

import datetime
import logging
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

from lackpy_kernel.errors import TelemetryError

from ._behind import flush_writes, write_behind

USAGE_FILE = "usage.sqlite"  # under the workspace's .lackpy/
MAX_ROWS = 100_000
BUSY_TIMEOUT_S = 5.0
KIND_MODEL = "model"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at TEXT NOT NULL,
    day TEXT NOT NULL,
    kind TEXT NOT NULL,
    provider TEXT NOT NULL,
    tier TEXT NOT NULL,
    model TEXT NOT NULL DEFAULT '',
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cost REAL,
    ms REAL NOT NULL DEFAULT 0,
    ok INTEGER NOT NULL
)"""
_INSERT = ("INSERT INTO calls (at, day, kind, provider, tier, model, input_tokens, output_tokens, "
           "cost, ms, ok) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
_TRIM = "DELETE FROM calls WHERE id <= (SELECT MAX(id) FROM calls) - ?"

_log = logging.getLogger("lackpy_kernel.telemetry")
_warned: set[Path] = set()


@dataclass(frozen=True)
class ModelCall:
    """One model call: the vendor (``provider``), the configured tier, the model, the tokens
    it read and wrote, what they cost (None: not priced), how long it took and whether it
    answered."""

    provider: str
    tier: str
    model: str
    input_tokens: int
    output_tokens: int
    cost: float | None
    ms: float
    ok: bool


def record_call(path: Path, call: ModelCall) -> None:
    """Add a model call to the record at ``path``, written behind the caller; never raises (a
    failure is logged once)."""
    _add(path, (KIND_MODEL, call.provider, call.tier, call.model, call.input_tokens,
                call.output_tokens, call.cost, call.ms, int(call.ok)))


def record_answer(path: Path, *, kind: str, tier: str) -> None:
    """Add an answer that tier ``tier`` (a template, rule or replay: ``kind``) gave without a
    model call, written behind the caller; never raises (a failure is logged once)."""
    _add(path, (kind, kind, tier, "", 0, 0, None, 0.0, 1))


def _add(path: Path, row: tuple[object, ...]) -> None:
    now = datetime.datetime.now(datetime.UTC)
    write_behind(_write, path, (now.isoformat(timespec="seconds"), now.date().isoformat(), *row))


def _write(path: Path, rows: list[tuple[object, ...]]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _with_retries(lambda: _insert(path, rows))
    except (sqlite3.Error, OSError) as exc:
        if path not in _warned:
            _warned.add(path)
            _log.warning("%s", _problem(path, exc) + "; usage is not being recorded")


def _insert(path: Path, rows: list[tuple[object, ...]]) -> None:
    with _connect(path) as db:
        db.execute("BEGIN IMMEDIATE")  # the write lock first, waiting up to the busy timeout
        try:
            db.executemany(_INSERT, rows)
            db.execute(_TRIM, (MAX_ROWS,))
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")


def _with_retries(write: Callable[[], None]) -> None:
    """``write``, again after a short pause while another process holds the record (SQLite
    answers some of those at once, busy timeout or not: the first switch to WAL, a
    snapshot gone stale), for up to ``BUSY_TIMEOUT_S`` in all."""
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    pause = 0.01
    while True:
        try:
            write()
            return
        except sqlite3.OperationalError as exc:
            busy = "locked" in str(exc) or "busy" in str(exc)
            if not busy or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.2)


@contextmanager
def _connect(path: Path) -> Iterator[sqlite3.Connection]:
    with closing(sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)) as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(_SCHEMA)
        yield db


def query(path: Path, sql: str, args: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """The rows ``sql`` selects from the record at ``path`` (none when there is no record),
    this process's pending rows written first.

    Raises TelemetryError when the file cannot be read as a usage record."""
    flush_writes()
    if not path.exists():
        return []
    try:
        with _connect(path) as db:
            return db.execute(sql, args).fetchall()
    except sqlite3.Error as exc:
        raise TelemetryError(_problem(path, exc)) from None


def _problem(path: Path, exc: Exception) -> str:
    return (f"{path} cannot be used as the usage record ({exc}); move it aside and lackpy "
            "starts a new one")
