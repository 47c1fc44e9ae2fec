"""Replay: answer intents from recorded model generations, so notebooks replay without a model.

``.lackpy/replay.jsonl`` holds one JSON object a line: ``intent``, ``tools``
(the kit's tool names), ``program`` and ``provider`` (who wrote it). With
``[inference] record = true`` every model-tier success is appended.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from lackpy_kernel.infer._provider import KIND_REPLAY
from lackpy_kernel.infer._recordings import append_recording, read_recordings, recording_key

from ._base import DeterministicProvider

REPLAY_FILE = "replay.jsonl"


class ReplayProvider(DeterministicProvider):
    """Answers an intent with the program recorded for the same intent and ``config["tool_names"]``."""

    kind = KIND_REPLAY

    def __init__(self, path: str | os.PathLike[str], name: str = "replay") -> None:
        super().__init__(name)
        self.path = Path(path)
        self.problems: list[str] = []

    def unavailable_reason(self) -> str | None:
        """None when the recordings file exists."""
        return None if self.path.is_file() else f"no recordings in {self.path}"

    def answer(self, intent: str, namespace_desc: str, config: Mapping[str, Any]) -> str | None:
        """The latest program recorded for the intent and the kit's tools, else None."""
        wanted = recording_key(intent, config.get("tool_names") or ())
        found = None
        for record in self.records():
            if recording_key(record["intent"], record.get("tools", [])) == wanted:
                found = record["program"]  # the latest recording wins
        return found

    def records(self) -> list[dict[str, Any]]:
        """The usable recordings; bad lines are skipped and listed in ``problems``."""
        self.problems = []
        records = []
        for number, record in read_recordings(self.path):
            if isinstance(record, dict) and isinstance(record.get("intent"), str) \
                    and isinstance(record.get("program"), str):
                records.append(record)
            else:
                self.problems.append(f"{self.path}, line {number}: not a recording, skipped")
        return records


def record_generation(path: str | os.PathLike[str], intent: str, tools: list[str],
                      program: str, provider: str) -> None:
    """Append one recording (a single write of one line, so lines never interleave)."""
    append_recording(path, {"intent": intent, "tools": sorted(tools), "program": program,
                            "provider": provider})
