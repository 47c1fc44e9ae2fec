"""What an agent's engine is given for one run, and what it tells its listeners as it goes."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from lackpy_kernel.infer.models import ModelTurn, ToolCall
from lackpy_kernel.service import LackpyService

from ._tools import CallOutcome, Toolset

__all__ = ["AgentEvent", "EventCallback", "RunContext", "TextCallback"]


@dataclass(frozen=True)
class AgentEvent:
    """One moment of a run. ``kind`` is ``turn_started`` (a model turn, or a replan round,
    begins), ``turn_finished`` (``model_turn`` holds its text and calls), ``call_started``
    (``call``), ``call_finished`` (``call`` and ``outcome``) or ``retry`` (the structured
    answer did not fit; ``text`` says why). ``turn`` numbers turns (rounds) from 1."""

    kind: str
    turn: int
    call: ToolCall | None = None
    outcome: CallOutcome | None = None
    model_turn: ModelTurn | None = None
    text: str = ""


EventCallback = Callable[[AgentEvent], None]
TextCallback = Callable[[str], Awaitable[None] | None]


@dataclass
class RunContext:
    """One run of an agent: its task, tools, service, output type and name, and who hears of
    its events and its streamed text."""

    task: str
    tools: Toolset
    service: LackpyService
    output: Any = str
    name: str | None = None
    on_event: EventCallback | None = None
    on_text: TextCallback | None = None

    def emit(self, kind: str, turn: int, **details: Any) -> None:
        """Tell the listener (if any) of an event."""
        if self.on_event is not None:
            self.on_event(AgentEvent(kind, turn, **details))

    async def text(self, piece: str) -> None:
        """Pass a streamed piece of text on (waiting while a bounded stream is full)."""
        if self.on_text is not None:
            result = self.on_text(piece)
            if inspect.isawaitable(result):
                await result
