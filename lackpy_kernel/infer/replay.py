"""Replay: answer intents from recorded model generations, so notebooks replay without a model.

``.lackpy/replay.jsonl`` holds one JSON object a line: ``intent``, ``tools``
(the kit's tool names), ``program`` and ``provider`` (who wrote it). With
``[inference] record = true`` every model-tier success is appended.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .provider import KIND_REPLAY
from .rules import tool_names_of

REPLAY_FILE = "replay.jsonl"


def _key(intent: str, tools: list[str] | set[str]) -> tuple[str, tuple[str, ...]]:
    return " ".join(intent.lower().split()), tuple(sorted(tools))


class ReplayProvider:
    """Answers an intent with the program recorded for the same intent and ``config["tool_names"]``."""

    kind = KIND_REPLAY

    def __init__(self, path: str | os.PathLike[str], name: str = "replay") -> None:
        self.path = Path(path)
        self._name = name
        self.problems: list[str] = []

    @property
    def name(self) -> str:
        return self._name

    def available(self) -> bool:
        return self.path.is_file()

    def unavailable_reason(self) -> str | None:
        return None if self.available() else f"no recordings in {self.path}"

    async def generate(
        self,
        intent: str,
        namespace_desc: str,
        config: dict[str, Any] | None = None,
        error_feedback: list[str] | None = None,
    ) -> str | None:
        if error_feedback:
            return None
        wanted = _key(intent, tool_names_of(config))
        found = None
        for record in self.records():
            if _key(record["intent"], record.get("tools", [])) == wanted:
                found = record["program"]  # the latest recording wins
        return found

    def records(self) -> list[dict[str, Any]]:
        """The usable recordings; bad lines are skipped and listed in ``problems``."""
        self.problems = []
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return []
        records = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                if isinstance(record, dict) and isinstance(record.get("intent"), str) \
                        and isinstance(record.get("program"), str):
                    records.append(record)
                    continue
            except json.JSONDecodeError:
                pass
            self.problems.append(f"{self.path}, line {number}: not a recording, skipped")
        return records


def record_generation(path: str | os.PathLike[str], intent: str, tools: list[str],
                      program: str, provider: str) -> None:
    """Append one recording (a single write of one line, so lines never interleave)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    line = json.dumps({"intent": intent, "tools": sorted(tools), "program": program,
                       "provider": provider}) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)
