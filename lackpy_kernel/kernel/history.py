"""The kernel's cell history: SQLite in the workspace's ``.lackpy/``, kept across restarts.

Like IPython's HistoryManager: each kernel start is a new session, each stored cell a
line numbered by its execution count, and a history request asks for the tail, a range
of a session, or a glob search. Programs cannot write ``.lackpy/``, so a cell cannot
rewrite its own history. Where the file cannot be used the history lives in memory
for the session, and ``problem`` says why.
"""

from __future__ import annotations

import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HISTORY_FILE = "history.sqlite"
HISTORY_LIMIT = 10_000  # cells kept, across sessions; the oldest go first
OUTPUT_LIMIT = 10_000  # characters of a cell's output kept
_BUSY_TIMEOUT_S = 5

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (session INTEGER PRIMARY KEY AUTOINCREMENT, start TEXT);
CREATE TABLE IF NOT EXISTS history (session INTEGER, line INTEGER, source TEXT, output TEXT,
                                    PRIMARY KEY (session, line));
"""
# One number that orders cells by session, then line (IPython's trick for "the latest").
_ORDER = "session * 1000000000 + line"

Entry = tuple[int, int, Any]  # (session, line, source) or (session, line, (source, output))


class History:
    """The cells of this and earlier sessions in ``folder``/history.sqlite."""

    def __init__(self, folder: Path, *, limit: int = HISTORY_LIMIT) -> None:
        self.limit = limit
        self.problem: str | None = None
        self._lock = threading.Lock()
        self._pending: list[tuple[int, int, str, str]] = []  # stored, not yet written
        try:
            folder.mkdir(parents=True, exist_ok=True)
            self._db = self._open(str(folder / HISTORY_FILE))
        except (OSError, sqlite3.Error) as exc:
            self.problem = (f"the history file {folder / HISTORY_FILE} cannot be used ({exc}); "
                            "this session's history is kept in memory only")
            self._db = self._open(":memory:")
        self.session = self._start_session()

    def _open(self, where: str) -> sqlite3.Connection:
        db = sqlite3.connect(where, timeout=_BUSY_TIMEOUT_S, check_same_thread=False,
                             isolation_level=None)
        # A write-ahead log synced at checkpoints: a cell's history costs no fsync, and a
        # crash loses at most the last cells, never the file.
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.executescript(_SCHEMA)
        return db

    def _start_session(self) -> int:
        with self._lock:
            started = datetime.now(UTC).isoformat(timespec="seconds")
            added = self._db.execute("INSERT INTO sessions (start) VALUES (?)", (started,))
            return added.lastrowid or 0

    def store(self, line: int, source: str, output: str) -> None:
        """Keep cell ``line`` of this session; it is written to the file at the next
        ``flush`` (a read or ``close`` flushes first)."""
        with self._lock:
            self._pending.append((self.session, line, source, output[:OUTPUT_LIMIT]))
            del self._pending[:-self.limit]

    def flush(self) -> None:
        """Write the cells stored since the last flush, and drop the oldest past the limit.
        Raises sqlite3.Error where the file cannot be written (the cells stay pending)."""
        with self._lock:
            self._write_pending()

    def _write_pending(self) -> None:
        if not self._pending:
            return
        self._db.executemany("INSERT OR REPLACE INTO history VALUES (?, ?, ?, ?)", self._pending)
        self._pending.clear()
        # rowids grow as cells are stored: the oldest are the lowest
        self._db.execute("DELETE FROM history WHERE rowid <= (SELECT MAX(rowid) FROM history) - ?",
                         (self.limit,))

    def tail(self, n: int | None, *, output: bool = False) -> list[Entry]:
        """The last ``n`` cells (all with None), oldest first, this session's included."""
        limit = n if n else -1
        return self._select("1", (), output, newest_first_limit=limit)

    def range(self, session: int | None, start: int | None, stop: int | None, *,
              output: bool = False) -> list[Entry]:
        """Cells ``start <= line < stop`` of ``session``: 0 or None is this session, a
        negative number counts back from it (-1 is the one before), as in IPython."""
        wanted = self.session if not session else session
        if wanted < 0:
            wanted += self.session
        condition, params = "session = ? AND line >= ?", [wanted, start or 0]
        if stop is not None:
            condition += " AND line < ?"
            params.append(stop)
        return self._select(condition, tuple(params), output)

    def search(self, pattern: str, *, output: bool = False, n: int | None = None,
               unique: bool = False) -> list[Entry]:
        """Cells whose source matches the glob ``pattern`` (``*``, ``?``, ``[...]``); the last
        ``n`` of them with ``n``; with ``unique`` only the latest of identical sources."""
        condition = "source GLOB ?"
        if unique:
            condition += (f" AND {_ORDER} IN (SELECT MAX({_ORDER}) FROM history "
                          "WHERE source GLOB ? GROUP BY source)")
        params = (pattern, pattern) if unique else (pattern,)
        return self._select(condition, params, output, newest_first_limit=n or -1)

    def _select(self, condition: str, params: tuple[Any, ...], output: bool, *,
                newest_first_limit: int | None = None) -> list[Entry]:
        query = f"SELECT session, line, source, output FROM history WHERE {condition}"
        if newest_first_limit is not None:
            query += " ORDER BY session DESC, line DESC LIMIT ?"
            params = (*params, newest_first_limit)
        else:
            query += " ORDER BY session, line"
        with self._lock:
            self._write_pending()
            rows = self._db.execute(query, params).fetchall()
        if newest_first_limit is not None:
            rows.reverse()
        return [(session, line, (source, out) if output else source)
                for session, line, source, out in rows]

    def close(self) -> None:
        """Write what is pending, and close the database."""
        with self._lock:
            try:
                self._write_pending()
            finally:
                self._db.close()
