"""Tool calling: a model turn that may ask for tool calls, one neutral shape for every protocol.

The agent loop (``lackpy_kernel.engines``) talks to a :class:`ToolChatModel`: it sends a
:class:`ChatRequest` (system prompt, the conversation so far, the tools' JSON schemas,
``tool_choice``) and gets back a :class:`ModelTurn` (text, tool calls, token usage). Each
vendor's module holds its protocol (through its official client) beside its program writer;
the replay module answers from recorded conversations, for notebooks and CI.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

# Hears each piece of text as the model streams it; may be async (a bounded stream waits).
OnText = Callable[[str], Awaitable[None] | None]

@dataclass(frozen=True)
class ToolSchema:
    """A tool as a model sees it: its name, what it does, and its arguments' JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass
class ToolCall:
    """A tool call the model asked for. ``arguments`` is None when what the model sent could
    not be read as a JSON object; ``problem`` then says why and ``raw`` holds what it sent."""

    id: str
    name: str
    arguments: dict[str, Any] | None
    raw: str = ""
    problem: str | None = None


@dataclass
class ToolResult:
    """What a tool call gave back to the model: text, and whether it is an error."""

    call_id: str
    name: str
    content: str
    is_error: bool = False


@dataclass
class Usage:
    """Tokens a request read and wrote, as the server counted them (0 when it did not say)."""

    input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input_tokens + other.input_tokens,
                     self.output_tokens + other.output_tokens)


@dataclass
class ModelTurn:
    """One model answer: its text, the tool calls it asks for (none: a final answer), its
    usage and why it stopped (the protocol's word: ``end_turn``, ``tool_use``, ``stop``...)."""

    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    stop_reason: str | None = None


@dataclass
class UserMessage:
    """A user's (or the loop's) message."""

    text: str


@dataclass
class AssistantMessage:
    """An earlier model turn, as it goes back to the model."""

    text: str
    calls: list[ToolCall] = field(default_factory=list)


@dataclass
class ToolResults:
    """The results of the tool calls of the turn before, in the order of its calls."""

    results: list[ToolResult]


Message = UserMessage | AssistantMessage | ToolResults


@dataclass
class ChatRequest:
    """A request for the next model turn. ``tool_choice`` is ``auto`` (the model decides) or
    ``any`` (it must call a tool: each protocol sends its own word for that)."""

    system: str | None
    messages: list[Message]
    tools: list[ToolSchema] = field(default_factory=list)
    tool_choice: str = "auto"

    @property
    def first_user_text(self) -> str:
        """The text of the conversation's first user message ('' when there is none)."""
        return next((m.text for m in self.messages if isinstance(m, UserMessage)), "")

    @property
    def turns_so_far(self) -> int:
        """How many model turns the conversation holds already."""
        return sum(isinstance(message, AssistantMessage) for message in self.messages)


class ToolChatModel(Protocol):
    """A model that answers a ChatRequest with a ModelTurn.

    ``complete`` raises ProviderError (ProviderTimeoutError, StreamStallError) once the
    policy's attempts are used up; the key never appears in what it raises.
    """

    name: str  # the provider's configured name (or its plugin)
    model: str

    async def complete(self, request: ChatRequest, on_text: OnText | None = None) -> ModelTurn: ...


async def emit_text(on_text: OnText | None, piece: str) -> None:
    """Give ``piece`` to ``on_text`` (awaiting it when it is async)."""
    if on_text is not None and piece:
        result = on_text(piece)
        if inspect.isawaitable(result):
            await result


def parse_arguments(call_id: str, name: str, raw: Any) -> ToolCall:
    """A ToolCall from arguments as a protocol carries them: a JSON object's text, or the
    object already parsed. What is not a JSON object becomes a call with a ``problem``."""
    if isinstance(raw, Mapping):
        return ToolCall(call_id, name, dict(raw), json.dumps(raw, ensure_ascii=False))
    text = "" if raw is None else str(raw)
    if not text.strip():
        return ToolCall(call_id, name, {}, text)
    try:
        value = json.loads(text)
    except ValueError as exc:
        return ToolCall(call_id, name, None, text, f"the arguments are not valid JSON ({exc})")
    except RecursionError:
        return ToolCall(call_id, name, None, text, "the arguments are nested too deeply to read")
    if not isinstance(value, dict):
        return ToolCall(call_id, name, None, text,
                        f"the arguments must be a JSON object, not {type(value).__name__}")
    return ToolCall(call_id, name, value, text)


def arguments_text(call: ToolCall) -> str:
    """The arguments of ``call`` as JSON text, for sending the conversation back."""
    if call.arguments is None:
        return call.raw
    return json.dumps(call.arguments, ensure_ascii=False)
