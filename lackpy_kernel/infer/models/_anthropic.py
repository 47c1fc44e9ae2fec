"""Claude through the Anthropic Messages API (``POST /v1/messages``), with the official
``anthropic`` client.

:class:`AnthropicProvider` writes programs (tier 3); :class:`AnthropicToolChat` calls tools
(the Messages API's ``tools``, ``tool_use`` and ``tool_result``). Both stream, or take one
message when ``stream = false``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from lackpy_kernel.errors import ProviderError
from lackpy_kernel.telemetry import count_usage

from ._base import COMMON_KEYS, GenerationSettings, ModelProvider, Sampling, ToolChat, Turn, turn_messages
from ._chat import (
    AssistantMessage,
    ChatRequest,
    Message,
    ModelTurn,
    OnText,
    ToolResults,
    Usage,
    emit_text,
    parse_arguments,
)
from ._policy import (
    RetryPolicy,
    default_describe,
    default_is_transient,
    is_transient_status,
    redact,
    redacting,
)
from ._settings import optional_str

DEFAULT_MODEL = "claude-haiku-4-5-20251001"
API_KEY_ENV = "ANTHROPIC_API_KEY"
DEFAULT_MAX_TOKENS = 4096  # of a tool-calling turn, when the settings give none
# Error types that the API sends inside a 200 stream and that are worth another attempt.
_TRANSIENT_ERROR_TYPES = frozenset({"overloaded_error", "api_error", "rate_limit_error", "timeout_error"})


class AnthropicProvider(ModelProvider):
    """Writes programs with Claude (``POST /v1/messages``).

    The key comes from ``ANTHROPIC_API_KEY``, read each time a client is made
    (never at import). The SDK's own retries are off (``max_retries=0``):
    ``policy`` is the one retry loop. The key is redacted from every message
    this provider raises or logs. The Messages API has no raw completion.
    """

    package = extra = plugin = "anthropic"
    label = "Anthropic"
    stream_label = "the Anthropic stream"
    default_model = DEFAULT_MODEL
    settings_keys = frozenset({*(COMMON_KEYS - {"raw"}), "base_url"})
    raw_allowed = False

    def __init__(
        self,
        name: str = "anthropic",
        *,
        model: str = DEFAULT_MODEL,
        temperature: float | None = None,
        base_url: str | None = None,
        stream: bool = True,
        policy: RetryPolicy | None = None,
        generation: GenerationSettings | None = None,
    ) -> None:
        super().__init__(name, model=model, temperature=temperature, stream=stream, policy=policy,
                         generation=generation)
        self.base_url = base_url

    @classmethod
    def own_settings(cls, settings: Mapping[str, Any]) -> dict[str, Any]:
        """``base_url``."""
        return {"base_url": optional_str("base_url", settings.get("base_url"))}

    @property
    def where(self) -> str:
        """The API requests go to: ``base_url``, else ``$ANTHROPIC_BASE_URL``, else Anthropic's."""
        return self.base_url or os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"

    def unavailable_reason(self) -> str | None:
        """A missing package (named first: no key helps without it), or
        ``ANTHROPIC_API_KEY`` not set; None when usable. No request."""
        missing = super().unavailable_reason()
        if missing is None and not os.environ.get(API_KEY_ENV):
            return f"{API_KEY_ENV} is not set"
        return missing

    def api_key(self) -> str:
        """``ANTHROPIC_API_KEY``; ProviderError when it is not set."""
        key = os.environ.get(API_KEY_ENV)
        if not key:
            raise ProviderError(f"{API_KEY_ENV} is not set; export your Anthropic API key to use provider "
                                f"{self.name!r}")
        return key

    def open_client(self, sdk: Any, key: str | None) -> Any:
        """An ``anthropic.AsyncAnthropic`` for ``base_url``, its own retries off."""
        return sdk.AsyncAnthropic(api_key=key, base_url=self.base_url, max_retries=0)

    def tool_chat(self) -> AnthropicToolChat:
        """This model as a tool-calling chat."""
        return AnthropicToolChat(self)

    async def chat(self, system: str, turns: Sequence[Turn], sampling: Sampling) -> str:
        """One exchange (the system prompt, then ``turns``) under the retry policy: the answer
        text, the key redacted."""
        request: dict[str, Any] = {
            "model": self.model,
            "max_tokens": sampling.max_tokens,
            "system": system,
            "messages": turn_messages(turns),
        }
        if sampling.stop:
            request["stop_sequences"] = list(sampling.stop)
        if self.temperature is not None:
            # anthropic 2.x has no ``temperature`` argument; the Messages API still takes the field.
            request["extra_body"] = {"temperature": float(self.temperature)}

        async def send(client: Any, secrets: tuple[str, ...]) -> str:
            if not self.stream:
                message = await client.messages.create(**request, stream=False)
                count_usage(message, "usage.input_tokens", "usage.output_tokens")
                text = "".join(getattr(block, "text", "") for block in message.content
                               if block.type == "text")
            else:
                events = await client.messages.create(**request, stream=True)
                async with events:
                    text = await self.collect_text(events, _text_of, redacting(sampling.on_text, secrets))
            return redact(text, secrets)

        return await self.exchange(send)

    def is_transient(self, error: BaseException) -> bool:
        """What the API says (``x-should-retry``), else its transient statuses, error events
        and connection errors."""
        import anthropic

        if isinstance(error, anthropic.APIStatusError):
            should = error.response.headers.get("x-should-retry")
            if should in ("true", "false"):
                return should == "true"
            if error.status_code == 200:  # an error event inside the stream
                return getattr(error, "type", None) in _TRANSIENT_ERROR_TYPES
            return is_transient_status(error.status_code)
        if isinstance(error, anthropic.APIConnectionError):  # includes APITimeoutError
            return True
        if isinstance(error, anthropic.APIResponseValidationError):
            return False
        return default_is_transient(error)

    def describe(self, error: BaseException) -> str:
        """What went wrong with the API, and what to do."""
        import anthropic

        if isinstance(error, anthropic.APIStatusError):
            code = error.status_code
            kind = getattr(error, "type", None) or type(error).__name__
            message = getattr(error, "api_message", None) or error.message
            detail = f"HTTP {code} {kind}: {message}"
            if code == 401:
                return f"{detail}; check {API_KEY_ENV}"
            if code == 403:
                return f"{detail}; the key may lack access to model {self.model!r}"
            if code == 404:
                return f"{detail}; check the model name {self.model!r} and base_url"
            if code == 429:
                return f"{detail}; rate limited, try again later or lower the request rate"
            if code >= 500 or code == 200:
                return f"{detail}; the API had a problem, try again later"
            return f"{detail}; the request was rejected"
        if isinstance(error, anthropic.APITimeoutError):
            return "the request to the Anthropic API timed out; check the network, or raise request_timeout"
        if isinstance(error, anthropic.APIConnectionError):
            return f"cannot connect to the Anthropic API at {self.where}; check the network (and base_url)"
        return default_describe(error)


class AnthropicToolChat(ToolChat[AnthropicProvider]):
    """Claude over ``POST /v1/messages``, with its tier's model, base_url, temperature, stream
    flag, ``max_tokens`` (default 4096) and retry policy."""

    def body(self, request: ChatRequest) -> dict[str, Any]:
        """``/v1/messages``' body (``max_tokens`` default 4096)."""
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.tier.generation.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": _messages(request.messages),
        }
        if request.system:
            body["system"] = request.system
        if request.tools:
            body["tools"] = [{"name": tool.name, "description": tool.description,
                              "input_schema": tool.parameters} for tool in request.tools]
            body["tool_choice"] = {"type": "any" if request.tool_choice == "any" else "auto"}
        if self.tier.temperature is not None:
            body["extra_body"] = {"temperature": float(self.tier.temperature)}
        return body


    async def turn(self, client: Any, body: dict[str, Any], on_text: OnText | None,
                   secrets: tuple[str, ...]) -> ModelTurn:
        """One ``/v1/messages`` call, streamed or not; the key redacted."""
        if not self.tier.stream:
            turn = _from_message(await client.messages.create(**body, stream=False))
        else:
            events = await client.messages.create(**body, stream=True)
            async with events:
                turn = await _from_events(self.tier.stream_chunks(events), on_text, secrets)
        turn.text = redact(turn.text, secrets)
        return turn


def _messages(messages: list[Message]) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            content: list[dict[str, Any]] = [{"type": "text", "text": message.text}] if message.text else []
            content += [{"type": "tool_use", "id": call.id, "name": call.name,
                         "input": call.arguments if call.arguments is not None else {}}
                        for call in message.calls]
            wire.append({"role": "assistant", "content": content})
        elif isinstance(message, ToolResults):
            wire.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": result.call_id, "content": result.content,
                 "is_error": result.is_error} for result in message.results]})
        else:
            wire.append({"role": "user", "content": message.text})
    return wire


def _from_message(message: Any) -> ModelTurn:
    turn = ModelTurn(stop_reason=message.stop_reason)
    for block in message.content:
        if block.type == "text":
            turn.text += block.text
        elif block.type == "tool_use":
            turn.calls.append(parse_arguments(block.id, block.name, block.input))
    usage = message.usage
    turn.usage = Usage(usage.input_tokens or 0, usage.output_tokens or 0)
    return turn


async def _from_events(events: Any, on_text: OnText | None, secrets: tuple[str, ...]) -> ModelTurn:
    """A turn from the stream's raw events: text deltas, and each tool_use block's JSON
    arguments assembled from its ``input_json_delta`` pieces."""
    turn = ModelTurn()
    blocks: dict[int, dict[str, Any]] = {}
    async for event in events:
        kind = event.type
        if kind == "message_start":
            turn.usage.input_tokens = event.message.usage.input_tokens or 0
        elif kind == "content_block_start" and event.content_block.type == "tool_use":
            block = event.content_block
            blocks[event.index] = {"id": block.id, "name": block.name, "json": ""}
        elif kind == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta":
                turn.text += delta.text
                await emit_text(on_text, redact(delta.text, secrets))
            elif delta.type == "input_json_delta" and event.index in blocks:
                blocks[event.index]["json"] += delta.partial_json
        elif kind == "content_block_stop" and event.index in blocks:
            block = blocks.pop(event.index)
            turn.calls.append(parse_arguments(block["id"], block["name"], block["json"]))
        elif kind == "message_delta":
            turn.stop_reason = event.delta.stop_reason
            turn.usage.output_tokens = event.usage.output_tokens or 0
    return turn


def _text_of(event: Any) -> str:
    """The text a streamed Messages API event adds ("" for the others); the input tokens of
    ``message_start`` and the output tokens of ``message_delta`` are counted."""
    if event.type == "message_start":
        count_usage(event, "message.usage.input_tokens", None)
    elif event.type == "message_delta":
        count_usage(event, None, "usage.output_tokens")
    if event.type == "content_block_delta" and event.delta.type == "text_delta":
        return str(event.delta.text)
    return ""
