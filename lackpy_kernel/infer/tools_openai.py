"""Tool calling on an OpenAI-compatible server (OpenAI, vLLM, llama.cpp, LM Studio):
``/chat/completions`` with ``tools``, ``tool_calls`` and ``tool`` messages, through the
official ``openai`` client (streamed with usage, or one completion)."""

from __future__ import annotations

import os
from typing import Any

from lackpy_kernel.errors import ProviderError

from .openai_provider import NO_KEY
from .tools_chat import (
    AssistantMessage,
    ChatRequest,
    Message,
    ModelTurn,
    OnText,
    ToolResults,
    Usage,
    arguments_text,
    emit_text,
    idle_chunks,
    parse_arguments,
    redacted,
    with_policy,
)

__all__ = ["OpenAIToolChat"]


class OpenAIToolChat:
    """A model behind the OpenAI protocol; ``tier`` is the OpenAIProvider whose model,
    base_url, key variable, temperature, ``max_tokens``, stream flag and retry policy it uses."""

    def __init__(self, tier: Any) -> None:
        self.tier = tier
        self.name = tier.name
        self.model = tier.model

    async def complete(self, request: ChatRequest, on_text: OnText | None = None) -> ModelTurn:
        """One model turn; raises ProviderError (the key redacted) when the policy gives up."""
        openai = self.tier.import_client()  # ProviderError naming the extra if missing
        key = os.environ.get(self.tier.api_key_env) or None
        if key is None and self.tier.base_url is None:
            raise ProviderError(f"{self.tier.api_key_env} is not set; export your OpenAI API key "
                                f"to use provider {self.name!r}, or set base_url to a server of "
                                f"your own")
        secrets = (key,) if key else ()
        body = self._body(request)
        where = self.tier.where

        async def attempt() -> ModelTurn:
            client = openai.AsyncOpenAI(api_key=key or NO_KEY, base_url=self.tier.base_url,
                                        max_retries=0)
            try:
                if not self.tier.stream:
                    return _from_completion(await client.chat.completions.create(**body))
                chunks = await client.chat.completions.create(
                    **body, stream=True, stream_options={"include_usage": True})
                return await _from_chunks(idle_chunks(self.tier, chunks, f"the stream from {where}"),
                                          on_text, secrets)
            finally:
                await client.close()

        turn = await with_policy(self.tier, attempt, secrets=secrets,
                                 what=f"OpenAI-compatible provider {self.name!r} (model "
                                      f"{self.model!r} at {where})")
        turn.text = redacted(turn.text, secrets)
        return turn

    def _body(self, request: ChatRequest) -> dict[str, Any]:
        messages = ([{"role": "system", "content": request.system}] if request.system else [])
        body: dict[str, Any] = {"model": self.model,
                                "messages": messages + _messages(request.messages)}
        if request.tools:
            body["tools"] = [{"type": "function", "function": {
                "name": tool.name, "description": tool.description,
                "parameters": tool.parameters}} for tool in request.tools]
            body["tool_choice"] = "required" if request.tool_choice == "any" else "auto"
        if self.tier.temperature is not None:
            body["temperature"] = float(self.tier.temperature)
        if self.tier.generation.max_tokens is not None:
            body["max_tokens"] = self.tier.generation.max_tokens
        return body


def _messages(messages: list[Message]) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            entry: dict[str, Any] = {"role": "assistant", "content": message.text or None}
            if message.calls:
                entry["tool_calls"] = [{"id": call.id, "type": "function", "function": {
                    "name": call.name, "arguments": arguments_text(call)}}
                    for call in message.calls]
            wire.append(entry)
        elif isinstance(message, ToolResults):
            wire += [{"role": "tool", "tool_call_id": result.call_id, "content": result.content}
                     for result in message.results]
        else:
            wire.append({"role": "user", "content": message.text})
    return wire


def _from_completion(completion: Any) -> ModelTurn:
    choice = completion.choices[0]
    message = choice.message
    turn = ModelTurn(message.content or "", stop_reason=choice.finish_reason)
    for call in message.tool_calls or []:
        turn.calls.append(parse_arguments(call.id, call.function.name, call.function.arguments))
    if completion.usage is not None:
        turn.usage = Usage(completion.usage.prompt_tokens or 0,
                           completion.usage.completion_tokens or 0)
    return turn


async def _from_chunks(chunks: Any, on_text: OnText | None, secrets: tuple[str, ...]) -> ModelTurn:
    """A turn from streamed chunks: content deltas, and each tool call assembled by its
    ``index`` from an id, a name and pieces of its JSON arguments; usage from the last."""
    turn = ModelTurn()
    calls: dict[int, dict[str, str]] = {}
    async for chunk in chunks:
        if chunk.usage is not None:
            turn.usage = Usage(chunk.usage.prompt_tokens or 0, chunk.usage.completion_tokens or 0)
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        delta = choice.delta
        if delta is not None and delta.content:
            turn.text += delta.content
            await emit_text(on_text, redacted(delta.content, secrets))
        for piece in (delta.tool_calls if delta is not None else None) or []:
            call = calls.setdefault(piece.index, {"id": "", "name": "", "arguments": ""})
            call["id"] = piece.id or call["id"]
            if piece.function is not None:
                call["name"] += piece.function.name or ""
                call["arguments"] += piece.function.arguments or ""
        if choice.finish_reason:
            turn.stop_reason = choice.finish_reason
    turn.calls = [parse_arguments(call["id"] or f"call_{index}", call["name"], call["arguments"])
                  for index, call in sorted(calls.items())]
    return turn
