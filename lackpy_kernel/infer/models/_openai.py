"""OpenAI-compatible servers, through the official ``openai`` client.

The OpenAI API itself, or a local server that speaks its protocol (vLLM,
llama.cpp's server, LM Studio, ``python -m llama_cpp.server``): set
``base_url`` to its ``/v1`` address. :class:`OpenAIProvider` writes programs: chat goes to
``/chat/completions``; with ``raw = true``, the prompt goes to ``/completions`` as one text
(for a base model without a chat template). :class:`OpenAIToolChat` calls tools
(``/chat/completions`` with ``tools``, ``tool_calls`` and ``tool`` messages, streamed with
usage, or one completion).
"""

from __future__ import annotations

import os
import warnings
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
    arguments_text,
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

DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
OPENAI_URL = "https://api.openai.com/v1"
# Sent as the key to a server of one's own (base_url set) when the key's variable is unset;
# the client refuses to run without one, local servers ignore it.
NO_KEY = "no-key-needed"
# The statuses with which a server refuses a request's grammar (unknown field, bad grammar).
GRAMMAR_REFUSALS = frozenset({400, 422, 500})


class OpenAIProvider(ModelProvider):
    """Writes programs with a model behind the OpenAI protocol (``POST /v1/chat/completions``).

    The key is read from the environment variable ``api_key_env`` (default
    ``OPENAI_API_KEY``) each time a client is made; a server of one's own
    (``base_url`` set) needs none. The SDK's own retries are off: ``policy``
    is the one retry loop, and the key is redacted from every message this
    provider raises, logs or streams.
    """

    package = extra = plugin = "openai"
    label = "OpenAI-compatible"
    stream_label = "the stream"
    default_model = DEFAULT_MODEL
    settings_keys = frozenset({*COMMON_KEYS, "base_url", "api_key_env"})
    constraints = ("grammar",)  # llama.cpp's ``grammar`` (GBNF), sent in the request body

    def __init__(
        self,
        name: str = "openai",
        *,
        model: str = DEFAULT_MODEL,
        base_url: str | None = None,
        api_key_env: str = DEFAULT_KEY_ENV,
        temperature: float | None = None,
        stream: bool = True,
        policy: RetryPolicy | None = None,
        generation: GenerationSettings | None = None,
    ) -> None:
        super().__init__(name, model=model, temperature=temperature, stream=stream, policy=policy,
                         generation=generation)
        self.base_url = base_url
        self.api_key_env = api_key_env

    @classmethod
    def own_settings(cls, settings: Mapping[str, Any]) -> dict[str, Any]:
        """``base_url`` and ``api_key_env``."""
        return {
            "base_url": optional_str("base_url", settings.get("base_url")),
            "api_key_env": optional_str("api_key_env", settings.get("api_key_env", DEFAULT_KEY_ENV))
            or DEFAULT_KEY_ENV,
        }

    @property
    def where(self) -> str:
        """The server requests go to."""
        return self.base_url or OPENAI_URL

    def unavailable_reason(self) -> str | None:
        """A missing package, or no key for the OpenAI API itself; None when usable. No request."""
        if self.base_url is None and not os.environ.get(self.api_key_env):
            return f"{self.api_key_env} is not set (a local server needs none: set base_url)"
        return super().unavailable_reason()

    def health_url(self) -> str | None:
        """``/models`` on ``base_url``; None for the OpenAI API itself (reached with a key)."""
        return None if self.base_url is None else self.base_url.rstrip("/") + "/models"

    def api_key(self) -> str | None:
        """The key from ``api_key_env``; None for a server of one's own without one."""
        key = os.environ.get(self.api_key_env) or None
        if key is None and self.base_url is None:
            raise ProviderError(f"{self.api_key_env} is not set; export your OpenAI API key to use provider "
                                f"{self.name!r}, or set base_url to a server of your own")
        return key

    def open_client(self, sdk: Any, key: str | None) -> Any:
        """An ``openai.AsyncOpenAI`` for ``base_url``, its own retries off."""
        return sdk.AsyncOpenAI(api_key=key or NO_KEY, base_url=self.base_url, max_retries=0)

    def tool_chat(self) -> OpenAIToolChat:
        """This model as a tool-calling chat."""
        return OpenAIToolChat(self)

    async def chat(self, system: str, turns: Sequence[Turn], sampling: Sampling) -> str:
        """One exchange (``/chat/completions``: the system message, then ``turns``) under the
        retry policy: the answer text."""
        messages = [{"role": "system", "content": system}, *turn_messages(turns)]
        return await self._request("chat", {"messages": messages}, sampling)

    async def complete(self, prompt: str, sampling: Sampling) -> str:
        """One raw completion (``/completions``) under the retry policy: the text the model adds."""
        return await self._request("completion", {"prompt": prompt}, sampling)

    async def _request(self, endpoint: str, body: dict[str, Any], sampling: Sampling) -> str:
        request: dict[str, Any] = {"model": self.model, **body, "max_tokens": sampling.max_tokens}
        if sampling.stop:
            request["stop"] = list(sampling.stop)[:4]  # the API takes at most four
        if self.temperature is not None:
            request["temperature"] = float(self.temperature)
        if self.stream:  # a stream's usage comes in a last chunk, when asked for
            request["stream_options"] = {"include_usage": True}

        def text_of(chunk: Any) -> str:
            # the usage of the whole answer, or of a stream in its last chunk
            count_usage(chunk, "usage.prompt_tokens", "usage.completion_tokens")
            if not chunk.choices:
                return ""
            choice = chunk.choices[0]
            if endpoint == "completion":
                return choice.text or ""
            part = choice.delta if self.stream else choice.message
            return (part.content if part is not None else None) or ""

        async def once(client: Any, secrets: tuple[str, ...], extra: dict[str, Any]) -> str:
            api = client.chat.completions if endpoint == "chat" else client.completions
            if not self.stream:
                text = text_of(await api.create(**request, **extra, stream=False))
            else:
                text = await self.collect_text(await api.create(**request, **extra, stream=True),
                                               text_of, redacting(sampling.on_text, secrets))
            return redact(text, secrets)

        async def send(client: Any, secrets: tuple[str, ...]) -> str:
            if sampling.grammar is None:
                return await once(client, secrets, {})
            try:
                text = await once(client, secrets, {"extra_body": {"grammar": sampling.grammar}})
            except openai.APIStatusError as exc:
                if exc.status_code not in GRAMMAR_REFUSALS:
                    raise
                self.grammar_refused(redact(f"HTTP {exc.status_code}: {exc.message}", secrets))
                return await once(client, secrets, {})
            self.grammar_status = "taken"
            return text

        import openai

        return await self.exchange(send)

    def grammar_refused(self, why: str) -> None:
        """Note that the server refused the grammar (it is not sent again), with a warning."""
        self.grammar_status = f"refused: {why[:200]}"
        warnings.warn(f"{self.what} refused the lackpy grammar ({why[:200]}); decoding "
                      "without it (remove `constrain` to silence this)", RuntimeWarning, stacklevel=2)

    def is_transient(self, error: BaseException) -> bool:
        """What the server says (``x-should-retry``), else its transient statuses and connection errors."""
        import openai

        if isinstance(error, openai.APIStatusError):
            should = error.response.headers.get("x-should-retry")
            if should in ("true", "false"):
                return should == "true"
            return is_transient_status(error.status_code)
        if isinstance(error, openai.APIConnectionError):  # includes APITimeoutError
            return True
        if isinstance(error, openai.APIResponseValidationError):
            return False
        return default_is_transient(error)

    def describe(self, error: BaseException) -> str:
        """What went wrong with the server, and what to do."""
        import openai

        if isinstance(error, openai.APIStatusError):
            code = error.status_code
            detail = f"HTTP {code}: {error.message}"
            if code == 401:
                return f"{detail}; check {self.api_key_env}"
            if code == 404:
                return f"{detail}; check the model name {self.model!r} and base_url ({self.where})"
            if code == 429:
                return f"{detail}; rate limited, try again later or lower the request rate"
            if code >= 500:
                return f"{detail}; the server had a problem, try again later"
            return f"{detail}; the request was rejected"
        if isinstance(error, openai.APITimeoutError):
            return f"the request to {self.where} timed out; check the server, or raise request_timeout"
        if isinstance(error, openai.APIConnectionError):
            return f"cannot connect to {self.where}; is the server running? (check base_url)"
        return default_describe(error)


class OpenAIToolChat(ToolChat[OpenAIProvider]):
    """A model behind the OpenAI protocol, with its tier's model, base_url, key variable,
    temperature, ``max_tokens``, stream flag and retry policy."""

    def body(self, request: ChatRequest) -> dict[str, Any]:
        """``/chat/completions``' body; ``tool_choice`` ``any`` is sent as ``required``."""
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


    async def turn(self, client: Any, body: dict[str, Any], on_text: OnText | None,
                   secrets: tuple[str, ...]) -> ModelTurn:
        """One ``/chat/completions`` call, streamed with usage or not; the key redacted."""
        if not self.tier.stream:
            turn = _from_completion(await client.chat.completions.create(**body))
        else:
            chunks = await client.chat.completions.create(
                **body, stream=True, stream_options={"include_usage": True})
            turn = await _from_chunks(self.tier.stream_chunks(chunks), on_text, secrets)
        turn.text = redact(turn.text, secrets)
        return turn


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
            await emit_text(on_text, redact(delta.content, secrets))
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
