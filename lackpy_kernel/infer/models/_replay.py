"""Recorded agent conversations: a model that answers each turn as a recording says.

``.lackpy/conversations.jsonl`` holds one JSON object a line, one agent run each::

    {"intent": "count the notes", "tools": ["find_files", "read_file"], "model": "...",
     "turns": [{"text": "...", "calls": [{"name": "find_files", "arguments": {...}}]},
               {"text": "There are 3 notes.", "calls": []}]}

With ``[inference] record = true`` every successful agent run on a real model appends its
conversation here. A run on the ``replay`` provider then answers turn N of the latest
recording whose intent (case and spacing aside) and tool names match the run's first
message and tools; the tool calls themselves run for real, so a replayed notebook shows
the workspace as it is now.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from lackpy_kernel.errors import ProviderError
from lackpy_kernel.infer._recordings import append_recording, read_recordings, recording_key

from ._chat import ChatRequest, ModelTurn, OnText, ToolCall, Usage, emit_text, parse_arguments

CONVERSATIONS_FILE = "conversations.jsonl"


class ReplayToolChat:
    """Answers from ``path`` (see the module doc). Usage is counted as a model would be
    billed, roughly: a token per four characters sent and received."""

    def __init__(self, path: str | os.PathLike[str], *, name: str = "replay",
                 model: str = "replay") -> None:
        self.path = Path(path)
        self.name = name
        self.model = model

    async def complete(self, request: ChatRequest, on_text: OnText | None = None) -> ModelTurn:
        """The recorded turn; ProviderError when no recording matches or it has no such turn."""
        intent, tools = request.first_user_text, sorted(tool.name for tool in request.tools)
        recording = self._find(intent, tools)
        number = request.turns_so_far
        turns = recording.get("turns") or []
        if number >= len(turns):
            raise ProviderError(
                f"the recorded conversation for {intent[:80]!r} has {len(turns)} turns and the "
                f"run asks for turn {number + 1}; record the run again with [inference] "
                f"record = true")
        recorded = turns[number]
        text = str(recorded.get("text") or "")
        calls = [parse_arguments(f"replay_{number + 1}_{index}", str(call.get("name")),
                                 call.get("arguments"))
                 for index, call in enumerate(recorded.get("calls") or [], 1)]
        await emit_text(on_text, text)
        sent = len(json.dumps(request.system or "")) + len(repr(request.messages))
        return ModelTurn(text, calls, Usage(sent // 4, len(text) // 4 + 1),
                         "tool_use" if calls else "end_turn")

    def _find(self, intent: str, tools: list[str]) -> dict[str, Any]:
        wanted = recording_key(intent, tools)
        found: dict[str, Any] | None = None
        skipped: list[int] = []
        for number, record in read_recordings(self.path):
            if not _is_recording(record):
                skipped.append(number)
            elif recording_key(record.get("intent", ""), record.get("tools") or []) == wanted:
                found = record  # the latest recording wins
        if found is None:
            unread = (f" (line {', '.join(map(str, skipped[:5]))} of it cannot be read: not "
                      "JSON, nested too deeply, or not a recording)") if skipped else ""
            raise ProviderError(
                f"no recorded conversation in {self.path}{unread} for the intent "
                f"{intent[:80]!r} with the tools {', '.join(tools) or '(none)'}; run it once "
                "on a model with [inference] record = true")
        return found


def record_conversation(path: str | os.PathLike[str], intent: str, tools: list[str],
                        model: str, turns: list[ModelTurn]) -> None:
    """Append one run's conversation (a single write of one line)."""
    append_recording(path, {
        "intent": intent, "tools": sorted(tools), "model": model,
        "turns": [{"text": turn.text, "calls": [_call(call) for call in turn.calls]}
                  for turn in turns],
    })


def _call(call: ToolCall) -> dict[str, Any]:
    return {"name": call.name,
            "arguments": call.arguments if call.arguments is not None else call.raw}


def _is_recording(record: Any) -> bool:
    """Whether a line's value has the shape ``record_conversation`` writes (a file edited by
    hand, or made to crash a replay, is skipped like a line that is not JSON)."""
    if not isinstance(record, dict) or not isinstance(record.get("intent", ""), str):
        return False
    tools, turns = record.get("tools") or [], record.get("turns")
    if not isinstance(tools, list) or not isinstance(turns, list):
        return False
    for turn in turns:
        if not isinstance(turn, dict) or not isinstance(turn.get("text") or "", str):
            return False
        calls = turn.get("calls") or []
        if not isinstance(calls, list) or not all(
                isinstance(call, dict) and isinstance(call.get("name"), str) for call in calls):
            return False
    return True
