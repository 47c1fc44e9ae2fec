"""Ollama: a local model served by Ollama, through the official ``ollama`` client.

:class:`OllamaProvider` writes programs (tier 2: ``/api/chat``; ``/api/generate`` when raw);
:class:`OllamaToolChat` calls tools (``/api/chat`` with ``tools``, ``tool_calls`` and ``tool``
messages). Both stream NDJSON, or take one answer when ``stream = false``.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping, Sequence
from typing import Any

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
from ._policy import RetryPolicy, default_describe, default_is_transient, is_transient_status
from ._settings import optional_str

DEFAULT_MODEL = "qwen2.5-coder:1.5b"
DEFAULT_HOST = "http://127.0.0.1:11434"  # the ollama library's own default
# Ollama has no tool_choice; "any" becomes this line of the system prompt for that turn.
MUST_CALL_A_TOOL = "In this answer, call at least one of the tools; do not answer in text only."
_call_numbers = itertools.count(1)


class OllamaProvider(ModelProvider):
    """Writes programs with a model on an Ollama server (``POST /api/chat``; ``/api/generate`` when raw).

    ``host`` defaults to the ``OLLAMA_HOST`` environment variable, then to the
    library's default (``http://127.0.0.1:11434``); it is read when a request
    is made. ``temperature`` and ``keep_alive`` are sent only when set (0.0
    is sent); the stop sequences and the token limit (``num_predict``) always.
    ``policy`` holds the retry and timeout knobs, ``generation`` the settings
    of :mod:`lackpy_kernel.infer.models` (``num_predict`` for ``max_tokens``).
    """

    package = extra = plugin = "ollama"
    label = "Ollama"
    stream_label = "the Ollama stream"
    default_model = DEFAULT_MODEL
    settings_keys = frozenset({*(COMMON_KEYS - {"max_tokens"}), "host", "keep_alive", "num_predict"})
    token_key = "num_predict"

    def __init__(
        self,
        name: str = "ollama",
        *,
        host: str | None = None,
        model: str = DEFAULT_MODEL,
        temperature: float | None = None,
        keep_alive: str | float | None = None,
        stream: bool = True,
        policy: RetryPolicy | None = None,
        generation: GenerationSettings | None = None,
    ) -> None:
        super().__init__(name, model=model, temperature=temperature, stream=stream, policy=policy,
                         generation=generation)
        self.host = host
        self.keep_alive = keep_alive

    @classmethod
    def own_settings(cls, settings: Mapping[str, Any]) -> dict[str, Any]:
        """``host`` and ``keep_alive`` (a duration such as ``"30m"`` or seconds)."""
        keep_alive = settings.get("keep_alive")
        if isinstance(keep_alive, bool) or not isinstance(keep_alive, str | int | float | None):
            raise ValueError(f"keep_alive must be a duration such as \"30m\" or a number of seconds, "
                             f"got {keep_alive!r}")
        return {"host": optional_str("host", settings.get("host")), "keep_alive": keep_alive}

    @property
    def resolved_host(self) -> str:
        """Where requests go: ``host``, else ``$OLLAMA_HOST``, else the library default."""
        return self.host or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST

    @property
    def where(self) -> str:
        """The server requests go to (``resolved_host``)."""
        return self.resolved_host

    def health_url(self) -> str:
        """``/api/version`` on ``resolved_host`` (a host without a scheme is http)."""
        host = self.resolved_host
        base = host if "://" in host else f"http://{host}"
        return base.rstrip("/") + "/api/version"

    def open_client(self, sdk: Any, key: str | None) -> Any:
        """An ``ollama.AsyncClient`` for ``resolved_host``."""
        return sdk.AsyncClient(host=self.resolved_host)

    def tool_chat(self) -> OllamaToolChat:
        """This model as a tool-calling chat."""
        return OllamaToolChat(self)

    async def chat(self, system: str, turns: Sequence[Turn], sampling: Sampling) -> str:
        """One exchange (``/api/chat``: the system message, then ``turns``) under the retry
        policy: the answer text."""
        messages = [{"role": "system", "content": system}, *turn_messages(turns)]
        return await self._request("chat", {"messages": messages}, sampling)

    async def complete(self, prompt: str, sampling: Sampling) -> str:
        """One raw completion (``/api/generate`` with ``raw``) under the retry policy: the text added."""
        return await self._request("generate", {"prompt": prompt, "raw": True}, sampling)

    async def _request(self, endpoint: str, body: dict[str, Any], sampling: Sampling) -> str:
        options: dict[str, Any] = {"num_predict": sampling.max_tokens}
        if sampling.stop:
            options["stop"] = list(sampling.stop)
        if self.temperature is not None:
            options["temperature"] = float(self.temperature)
        request: dict[str, Any] = {"model": self.model, **body, "options": options}
        if self.keep_alive is not None:
            request["keep_alive"] = self.keep_alive

        def text_of(chunk: Any) -> str:
            if chunk.done:  # the last answer carries the counts
                count_usage(chunk, "prompt_eval_count", "eval_count")
            return (chunk.message.content if endpoint == "chat" else chunk.response) or ""

        async def send(client: Any, secrets: tuple[str, ...]) -> str:
            call = getattr(client, endpoint)
            if not self.stream:
                return text_of(await call(**request, stream=False))
            return await self.collect_text(await call(**request, stream=True), text_of, sampling.on_text)

        return await self.exchange(send)

    def is_transient(self, error: BaseException) -> bool:
        """Ollama's transient statuses, and broken or timed-out connections."""
        import httpx
        import ollama

        if isinstance(error, ollama.ResponseError):
            return is_transient_status(error.status_code)
        if isinstance(error, httpx.NetworkError | httpx.TimeoutException | httpx.RemoteProtocolError):
            return True
        return default_is_transient(error)

    def describe(self, error: BaseException) -> str:
        """What went wrong with the Ollama server, and what to do."""
        import httpx
        import ollama

        host = self.resolved_host
        if isinstance(error, ollama.ResponseError):
            code, reason = error.status_code, str(error.error)
            if code == 404 or "not found" in reason.lower():
                return (f"model {self.model!r} is not available on the Ollama server at {host} ({reason}); "
                        f"pull it with `ollama pull {self.model}`")
            if code == 429:
                return f"Ollama at {host} is busy (HTTP 429: {reason}); try again later"
            if code >= 500:
                return f"Ollama at {host} failed (HTTP {code}: {reason}); see the Ollama server's log"
            if code > 0:
                return (f"Ollama at {host} refused the request (HTTP {code}: {reason}); "
                        "check the model and options")
            return f"Ollama at {host} reported an error: {reason}"
        if isinstance(error, ConnectionError | httpx.ConnectError):
            return (f"cannot connect to Ollama: is Ollama running at {host}? start it with `ollama serve`, "
                    "or set `host` (or OLLAMA_HOST) to where it listens")
        if isinstance(error, httpx.NetworkError | httpx.RemoteProtocolError):
            return f"the connection to Ollama at {host} broke ({type(error).__name__}: {error}); try again"
        return default_describe(error)


class OllamaToolChat(ToolChat[OllamaProvider]):
    """A model on Ollama, with its tier's host, model, temperature, keep_alive, ``num_predict``,
    stream flag and retry policy. Ollama's tool calls carry no ids, so each gets one here
    (``ollama_N``)."""

    def body(self, request: ChatRequest) -> dict[str, Any]:
        """``/api/chat``'s body; a ``tool_choice`` of ``any`` becomes a line of the system prompt."""
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

    async def turn(self, client: Any, body: dict[str, Any], on_text: OnText | None,
                   secrets: tuple[str, ...]) -> ModelTurn:
        """One ``/api/chat`` call, streamed or not."""
        if not self.tier.stream:
            turn = _turn_of([await client.chat(**body, stream=False)])
            await emit_text(on_text, turn.text)
            return turn
        return await _from_chunks(self.tier.stream_chunks(await client.chat(**body, stream=True)), on_text)


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
