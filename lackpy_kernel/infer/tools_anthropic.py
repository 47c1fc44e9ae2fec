"""Tool calling with Claude: the Messages API's ``tools``, ``tool_use`` and ``tool_result``,
through the official ``anthropic`` client (streamed, or one message when ``stream = false``)."""

from __future__ import annotations

import os
from typing import Any

from lackpy_kernel.errors import ProviderError

from .tools_chat import (
    AssistantMessage,
    ChatRequest,
    Message,
    ModelTurn,
    OnText,
    ToolResults,
    Usage,
    emit_text,
    idle_chunks,
    parse_arguments,
    redacted,
    with_policy,
)

__all__ = ["AnthropicToolChat"]

API_KEY_ENV = "ANTHROPIC_API_KEY"
DEFAULT_MAX_TOKENS = 4096


class AnthropicToolChat:
    """Claude over ``POST /v1/messages``; ``tier`` is the AnthropicProvider whose model,
    base_url, temperature, stream flag, ``max_tokens`` (default 4096) and retry policy it
    uses."""

    def __init__(self, tier: Any) -> None:
        self.tier = tier
        self.name = tier.name
        self.model = tier.model

    @property
    def where(self) -> str:
        """The API requests go to."""
        return self.tier.base_url or os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"

    async def complete(self, request: ChatRequest, on_text: OnText | None = None) -> ModelTurn:
        """One model turn; raises ProviderError (the key redacted) when the policy gives up."""
        anthropic = self.tier.import_client()  # ProviderError naming the extra if missing
        key = os.environ.get(API_KEY_ENV)
        if not key:
            raise ProviderError(f"{API_KEY_ENV} is not set; export your Anthropic API key to "
                                f"use provider {self.name!r}")
        body = self._body(request)
        secrets = (key,)

        async def attempt() -> ModelTurn:
            client = anthropic.AsyncAnthropic(api_key=key, base_url=self.tier.base_url,
                                              max_retries=0)
            try:
                if not self.tier.stream:
                    return _from_message(await client.messages.create(**body, stream=False))
                events = await client.messages.create(**body, stream=True)
                async with events:
                    stream = idle_chunks(self.tier, events, f"the Anthropic stream from {self.where}")
                    return await _from_events(stream, on_text, secrets)
            finally:
                await client.close()

        turn = await with_policy(self.tier, attempt, secrets=secrets,
                                 what=f"Anthropic provider {self.name!r} (model {self.model!r} "
                                      f"at {self.where})")
        turn.text = redacted(turn.text, secrets)
        return turn

    def _body(self, request: ChatRequest) -> dict[str, Any]:
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
                await emit_text(on_text, redacted(delta.text, secrets))
            elif delta.type == "input_json_delta" and event.index in blocks:
                blocks[event.index]["json"] += delta.partial_json
        elif kind == "content_block_stop" and event.index in blocks:
            block = blocks.pop(event.index)
            turn.calls.append(parse_arguments(block["id"], block["name"], block["json"]))
        elif kind == "message_delta":
            turn.stop_reason = event.delta.stop_reason
            turn.usage.output_tokens = event.usage.output_tokens or 0
    return turn

