"""Recordings kept as JSON lines (``.lackpy/replay.jsonl``, ``.lackpy/conversations.jsonl``):
the key a recording is matched on, appending one, reading them back."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from lackpy_kernel.kit.plain import nesting_problem

MAX_RECORDING_DEPTH = 100  # a recorded line nested deeper is not one lackpy wrote
MAX_RECORDING_PARTS = 1_000_000


def recording_key(intent: object, tools: Iterable[object]) -> tuple[str, tuple[str, ...]]:
    """What a recording is matched on: the intent (case and spacing aside) and the sorted tool names."""
    return " ".join(str(intent).lower().split()), tuple(sorted(str(tool) for tool in tools))


def append_recording(path: str | os.PathLike[str], record: dict[str, Any]) -> None:
    """Append ``record`` as one JSON line, in a single write so that lines never interleave."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps(record, ensure_ascii=False) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)


def read_recordings(path: Path) -> Iterator[tuple[int, Any]]:
    """Each non-blank line's number and value (None when it is not JSON, or nests past
    ``MAX_RECORDING_DEPTH``); nothing when the file cannot be read."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            value = None
        too_big = nesting_problem(value, MAX_RECORDING_DEPTH, MAX_RECORDING_PARTS)
        yield number, value if too_big is None else None
