"""Tool calling: a model turn that may ask for tool calls, one neutral shape for every protocol.

The agent loop (``lackpy_kernel.engines``) talks to a :class:`ToolChatModel`: it sends a
:class:`ChatRequest` (system prompt, the conversation so far, the tools' JSON schemas,
``tool_choice``) and gets back a :class:`ModelTurn` (text, tool calls, token usage). The
protocols live in ``tools_anthropic``, ``tools_ollama``, ``tools_openai`` (each through its
official client) and ``tools_replay`` (recorded conversations, for notebooks and CI).

A protocol module wraps the inference tier of its kind (``AnthropicProvider``,
``OllamaProvider``, ...) built from the same settings, and borrows its retry policy, its
error classification and its messages: the agent loop retries, times out, detects stalled
streams and redacts keys exactly as the program-writing tiers do; :func:`with_policy` and
:func:`idle_chunks` are the only places that run that policy. Of a tier's settings, tool
calling uses the connection (host, base URL, key), the model, ``temperature``, ``stream``,
``max_tokens`` and the retry policy; the program-writing ones (``stop``, ``raw``,
``correction_rounds``) do not apply to it.
"""

from __future__ import annotations

import importlib
import inspect
import json
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from lackpy_kernel.errors import UsageError

from .factory import MODEL_PLUGINS
from .retry import redact
from .streaming import iter_with_idle_timeout

__all__ = [
    "TOOL_CHAT_PLUGINS",
    "AssistantMessage",
    "ChatRequest",
    "Message",
    "ModelTurn",
    "OnText",
    "ToolCall",
    "ToolChatModel",
    "ToolResult",
    "ToolResults",
    "ToolSchema",
    "Usage",
    "UserMessage",
    "emit_text",
    "idle_chunks",
    "parse_arguments",
    "tool_chat_model",
    "with_policy",
]

T = TypeVar("T")
# Hears each piece of text as the model streams it; may be async (a bounded stream waits).
OnText = Callable[[str], Awaitable[None] | None]

# plugin -> (module with the protocol, its class)
TOOL_CHAT_PLUGINS = {
    "anthropic": ("lackpy_kernel.infer.tools_anthropic", "AnthropicToolChat"),
    "ollama": ("lackpy_kernel.infer.tools_ollama", "OllamaToolChat"),
    "openai": ("lackpy_kernel.infer.tools_openai", "OpenAIToolChat"),
    "replay": ("lackpy_kernel.infer.tools_replay", "ReplayToolChat"),
}


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


def tool_chat_model(plugin: str, name: str, settings: Mapping[str, Any], config_dir: Path
                    ) -> ToolChatModel:
    """The tool-calling model of ``plugin`` (anthropic, ollama, openai, replay) configured by
    ``settings`` (a ``[inference.providers.NAME]`` table, plus the engine's own knobs).

    Raises UsageError for an unknown plugin, settings the plugin refuses, or a client
    package that is not installed.
    """
    if plugin not in TOOL_CHAT_PLUGINS:
        raise UsageError(f"provider {name!r} uses the plugin {plugin!r}, which cannot call "
                         f"tools; tool-calling plugins: {', '.join(TOOL_CHAT_PLUGINS)}")
    module_name, class_name = TOOL_CHAT_PLUGINS[plugin]
    chat_class = getattr(importlib.import_module(module_name), class_name)
    model: ToolChatModel
    if plugin == "replay":
        model = chat_class(config_dir / str(settings.get("conversations", "conversations.jsonl")),
                           name=name, model=str(settings.get("model", "replay")))
        return model
    tier_module, tier_class, extra = MODEL_PLUGINS[plugin]
    try:
        importlib.import_module(extra)
    except ImportError:
        raise UsageError(f"provider {name!r} needs the {extra} package; install it with: "
                         f"pip install 'lackpy-kernel[{extra}]'") from None
    tier_settings = {key: value for key, value in settings.items() if key != "conversations"}
    try:
        tier = getattr(importlib.import_module(tier_module), tier_class).from_settings(
            name, tier_settings)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"provider {name!r}: {exc}") from None
    model = chat_class(tier)
    return model


# -- the one adapter to the inference tiers' retry, stall and redaction policy ------------


async def with_policy(tier: Any, attempt: Callable[[], Awaitable[T]], *, what: str,
                      secrets: tuple[str, ...] = ()) -> T:
    """``attempt()`` under ``tier``'s retry policy, with its error classification and
    messages; raises the policy's ProviderError when the attempts are used up."""
    result: T = await tier.policy.run(attempt, tier._is_transient, what=what,
                                      describe=tier._describe, secrets=secrets)
    return result


def idle_chunks(tier: Any, chunks: AsyncIterable[T], what: str) -> AsyncIterator[T]:
    """The chunks of a streamed answer; StreamStallError past ``stream_idle_timeout``."""
    return iter_with_idle_timeout(chunks, tier.policy.stream_idle_timeout, what=what)


def redacted(text: str, secrets: tuple[str, ...]) -> str:
    """``text`` with the secrets (and anything shaped like an API key) replaced."""
    return redact(text, secrets)


# -- shared by the protocols --------------------------------------------------------------


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
