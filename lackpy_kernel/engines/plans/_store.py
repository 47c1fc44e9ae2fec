"""Store: a small key -> JSON value store on SQLite, safe across threads and processes."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lackpy_kernel.kit.plain import nesting_problem

__all__ = ["Store", "UnreadableValueError"]

BUSY_TIMEOUT_S = 30.0
MAX_VALUE_DEPTH = 200  # what a value may nest to; deeper is refused, written or read
MAX_VALUE_PARTS = 10_000_000

_SCHEMA = """
CREATE TABLE IF NOT EXISTS store (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    updated REAL NOT NULL
)
"""


class UnreadableValueError(ValueError):
    """A value in a Store's file that is not JSON or nests past ``MAX_VALUE_DEPTH`` (the
    file was changed by something other than a Store)."""


class Store:
    """Keys to plain-data values (anything JSON can hold), in SQLite.

    ``Store(db=path)`` keeps them in a file (WAL journal, a busy timeout, so
    several processes can share it; a commit survives the process being killed, and a
    power cut loses at most the last commits, each whole); ``Store()`` keeps them in
    memory for this process. Every method is safe to call from any thread. Values go in and
    come out as JSON: tuples come back as lists; a value JSON cannot hold
    (a set, an object), or one nested past ``MAX_VALUE_DEPTH``, raises ``TypeError``; reading
    one that is not JSON or nests too deep raises ``UnreadableValueError``.
    """

    def __init__(self, db: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(db) if db is not None else None
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._connection = sqlite3.connect(
            str(self.path) if self.path else ":memory:",
            timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False,
        )
        with self._lock:
            self._connection.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            if self.path is not None:
                self._connection.execute("PRAGMA journal_mode = WAL")
                # A commit survives the process being killed; after a power cut the last
                # commits may be gone, each whole (a checkpoint with its writes), never half.
                self._connection.execute("PRAGMA synchronous = NORMAL")
            self._connection.execute(_SCHEMA)

    def read(self, key: str, default: Any = None) -> Any:
        """The value under ``key``, or ``default`` when there is none."""
        with self._lock:
            row = self._connection.execute(
                "SELECT value FROM store WHERE key = ?", (key,)).fetchone()
        return default if row is None else self._decode(key, row[0])

    def write(self, key: str, value: Any) -> None:
        """Set ``key`` to ``value``; TypeError when JSON cannot hold the value."""
        self.write_many({key: value})

    def write_many(self, values: Mapping[str, Any]) -> None:
        """Set several keys in one transaction: all of them are written, or none."""
        encoded = [(key, _encode(value)) for key, value in values.items()]
        with self._transaction() as cursor:
            _put(cursor, encoded)

    def compare_and_swap(self, key: str, expected: Any, new: Any, *,
                         writes: Mapping[str, Any] | None = None) -> bool:
        """Set ``key`` to ``new`` only if it holds ``expected`` now (None: no value yet).

        Returns whether it did. The read and the write are one ``BEGIN IMMEDIATE``
        transaction, so of two processes swapping from the same value exactly one
        wins. ``writes`` (more keys and values) are committed in that same
        transaction when the swap succeeds, and not at all when it fails.
        """
        wanted = _canonical(expected) if expected is not None else None
        encoded = [(key, _encode(new)), *((k, _encode(v)) for k, v in (writes or {}).items())]
        with self._transaction() as cursor:
            row = cursor.execute("SELECT value FROM store WHERE key = ?", (key,)).fetchone()
            current = _canonical(self._decode(key, row[0])) if row is not None else None
            if current != wanted:
                return False
            _put(cursor, encoded)
            return True

    def keys(self, prefix: str = "") -> list[str]:
        """Every key that starts with ``prefix``, sorted."""
        with self._lock:
            rows = self._connection.execute(
                "SELECT key FROM store WHERE substr(key, 1, ?) = ? ORDER BY key",
                (len(prefix), prefix)).fetchall()
        return [row[0] for row in rows]

    def delete(self, key: str) -> None:
        """Remove ``key`` (nothing happens when it has no value)."""
        with self._transaction() as cursor:
            cursor.execute("DELETE FROM store WHERE key = ?", (key,))

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._connection.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store(db={str(self.path)!r})" if self.path else "Store()"

    def _decode(self, key: str, text: str) -> Any:
        """The value stored as ``text``; UnreadableValueError naming the file and key."""
        try:
            value = json.loads(text)
            problem = nesting_problem(value, MAX_VALUE_DEPTH, MAX_VALUE_PARTS)
        except (ValueError, RecursionError):
            problem = "not JSON, or nested too deeply to read"
        if problem is not None:
            raise UnreadableValueError(f"the value under {key!r} in {self.path or 'memory'} "
                                       f"cannot be read: {problem}")
        return value

    def _transaction(self) -> _Transaction:
        return _Transaction(self._connection, self._lock)


class _Transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on an exception), under the lock."""

    def __init__(self, connection: sqlite3.Connection, lock: threading.Lock) -> None:
        self._connection = connection
        self._lock = lock

    def __enter__(self) -> sqlite3.Cursor:
        self._lock.acquire()
        try:
            self._connection.execute("BEGIN IMMEDIATE")
        except BaseException:
            self._lock.release()
            raise
        return self._connection.cursor()

    def __exit__(self, kind: type | None, *rest: object) -> None:
        try:
            self._connection.execute("COMMIT" if kind is None else "ROLLBACK")
        finally:
            self._lock.release()


def _put(cursor: sqlite3.Cursor, encoded: list[tuple[str, str]]) -> None:
    now = time.time()
    cursor.executemany(
        "INSERT INTO store (key, value, updated) VALUES (?, ?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value, updated = excluded.updated",
        [(key, text, now) for key, text in encoded])


def _encode(value: Any) -> str:
    try:
        problem = nesting_problem(value, MAX_VALUE_DEPTH, MAX_VALUE_PARTS)
        if problem is not None:
            raise ValueError(problem)
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"a Store holds JSON data (str, numbers, bool, None, lists, dicts "
                        f"with str keys); this value cannot be stored: {exc}") from None


def _canonical(value: Any) -> str:
    """One text per JSON value, whatever the order of its dict keys."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)
