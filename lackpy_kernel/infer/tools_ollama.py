"""Tool calling with a model on Ollama: ``/api/chat`` with ``tools``, ``tool_calls`` and
``tool`` messages, through the official ``ollama`` client (streamed NDJSON, or one answer)."""

from __future__ import annotations

import itertools
from typing import Any

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
    with_policy,
)

__all__ = ["MUST_CALL_A_TOOL", "OllamaToolChat"]

# Ollama has no tool_choice; "any" becomes this line of the system prompt for that turn.
MUST_CALL_A_TOOL = "In this answer, call at least one of the tools; do not answer in text only."
_call_numbers = itertools.count(1)


class OllamaToolChat:
    """A model on Ollama; ``tier`` is the OllamaProvider whose host, model, temperature,
    keep_alive, ``num_predict``, stream flag and retry policy it uses. Ollama's tool calls carry no ids, so
    each gets one here (``ollama_N``)."""

    def __init__(self, tier: Any) -> None:
        self.tier = tier
        self.name = tier.name
        self.model = tier.model

    async def complete(self, request: ChatRequest, on_text: OnText | None = None) -> ModelTurn:
        """One model turn; raises ProviderError when the policy gives up."""
        ollama = self.tier.import_client()  # ProviderError naming the extra if missing
        host = self.tier.resolved_host
        body = self._body(request)

        async def attempt() -> ModelTurn:
            client: Any = ollama.AsyncClient(host=host)  # its close() is untyped
            try:
                if not self.tier.stream:
                    turn = _turn_of([await client.chat(**body, stream=False)])
                    await emit_text(on_text, turn.text)
                    return turn
                chunks = await client.chat(**body, stream=True)
                return await _from_chunks(idle_chunks(self.tier, chunks,
                                                      f"the Ollama stream from {host}"), on_text)
            finally:
                await client.close()

        return await with_policy(self.tier, attempt,
                                 what=f"Ollama provider {self.name!r} (model {self.model!r} at {host})")

    def _body(self, request: ChatRequest) -> dict[str, Any]:
        system = request.system or ""
        if request.tools and request.tool_choice == "any":
            system = f"{system}\n\n{MUST_CALL_A_TOOL}".strip()
        messages = ([{"role": "system", "content": system}] if system else []) + _messages(
            request.messages)
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if request.tools:
            body["tools"] = [{"type": "function", "function": {
                "name": tool.name, "description": tool.description,
                "parameters": tool.parameters}} for tool in request.tools]
        options: dict[str, Any] = {}
        if self.tier.temperature is not None:
            options["temperature"] = float(self.tier.temperature)
        if self.tier.generation.max_tokens is not None:
            options["num_predict"] = self.tier.generation.max_tokens
        if options:
            body["options"] = options
        if self.tier.keep_alive is not None:
            body["keep_alive"] = self.tier.keep_alive
        return body


def _messages(messages: list[Message]) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            entry: dict[str, Any] = {"role": "assistant", "content": message.text}
            if message.calls:
                entry["tool_calls"] = [{"function": {
                    "name": call.name,
                    "arguments": call.arguments if call.arguments is not None else {}}}
                    for call in message.calls]
            wire.append(entry)
        elif isinstance(message, ToolResults):
            wire += [{"role": "tool", "content": result.content, "tool_name": result.name}
                     for result in message.results]
        else:
            wire.append({"role": "user", "content": message.text})
    return wire


async def _from_chunks(chunks: Any, on_text: OnText | None) -> ModelTurn:
    collected = []
    async for chunk in chunks:
        collected.append(chunk)
        await emit_text(on_text, chunk.message.content if chunk.message is not None else "")
    return _turn_of(collected)


def _turn_of(chunks: list[Any]) -> ModelTurn:
    """A turn from Ollama's answers: the text joined, every chunk's tool calls, and the last
    chunk's counts (``prompt_eval_count``, ``eval_count``)."""
    turn = ModelTurn()
    for chunk in chunks:
        message = chunk.message
        if message is not None:
            turn.text += message.content or ""
            for call in message.tool_calls or []:
                turn.calls.append(parse_arguments(f"ollama_{next(_call_numbers)}",
                                                  call.function.name, call.function.arguments))
        if chunk.done:
            turn.stop_reason = chunk.done_reason
            turn.usage = Usage(chunk.prompt_eval_count or 0, chunk.eval_count or 0)
    return turn
