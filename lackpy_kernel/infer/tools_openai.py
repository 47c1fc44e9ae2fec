"""Tool calling on an OpenAI-compatible server (OpenAI, vLLM, llama.cpp, LM Studio):
``/chat/completions`` with ``tools``, ``tool_calls`` and ``tool`` messages, through the
official ``openai`` client (streamed with usage, or one completion)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from lackpy_kernel.errors import ProviderError

from .policy import (
    POLICY_KEYS,
    RetryPolicy,
    check_settings,
    default_describe,
    default_is_transient,
    is_transient_status,
    optional_number,
    optional_str,
    require_bool,
)
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

__all__ = ["OpenAITier", "OpenAIToolChat"]

DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
OPENAI_URL = "https://api.openai.com/v1"
NO_KEY = "no-key-needed"  # a server of one's own ignores the key; the client needs one
SETTINGS_KEYS = frozenset({"plugin", "model", "base_url", "api_key_env", "temperature",
                           "stream", *POLICY_KEYS})


class OpenAIToolChat:
    """A model behind the OpenAI protocol; ``tier`` holds its model, base_url, key variable,
    temperature, stream flag and retry policy."""

    def __init__(self, tier: Any) -> None:
        self.tier = tier
        self.name = tier.name
        self.model = tier.model

    async def complete(self, request: ChatRequest, on_text: OnText | None = None) -> ModelTurn:
        """One model turn; raises ProviderError (the key redacted) when the policy gives up."""
        try:
            import openai
        except ImportError as exc:  # tool_chat_model checked; this is a broken install
            raise ProviderError("the openai package is not installed; install it with "
                                "`pip install 'lackpy-kernel[openai]'`") from exc
        key = os.environ.get(self.tier.api_key_env) or None
        if key is None and self.tier.base_url is None:
            raise ProviderError(f"{self.tier.api_key_env} is not set; export your OpenAI API key "
                                f"to use provider {self.name!r}, or set base_url to a server of "
                                f"your own")
        secrets = (key,) if key else ()
        body = self._body(request)
        where = self.tier.base_url or OPENAI_URL

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


class OpenAITier:
    """The settings, retry policy and error messages of an OpenAI-compatible provider, read
    from a ``[inference.providers.NAME]`` table (``model``, ``base_url``, ``api_key_env``,
    ``temperature``, ``stream`` and the policy's knobs)."""

    def __init__(self, name: str = "openai", *, model: str = DEFAULT_MODEL,
                 base_url: str | None = None, api_key_env: str = DEFAULT_KEY_ENV,
                 temperature: float | None = None, stream: bool = True,
                 policy: RetryPolicy | None = None) -> None:
        self.name = name
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.temperature = temperature
        self.stream = stream
        self.policy = policy if policy is not None else RetryPolicy()

    @classmethod
    def from_settings(cls, name: str, settings: Mapping[str, Any]) -> OpenAITier:
        """The tier from its settings; unknown keys and wrong types raise ``ValueError``."""
        check_settings("openai", name, settings, SETTINGS_KEYS)
        return cls(
            name,
            model=optional_str("model", settings.get("model", DEFAULT_MODEL)) or DEFAULT_MODEL,
            base_url=optional_str("base_url", settings.get("base_url")),
            api_key_env=optional_str("api_key_env", settings.get("api_key_env", DEFAULT_KEY_ENV))
            or DEFAULT_KEY_ENV,
            temperature=optional_number("temperature", settings.get("temperature"), minimum=0.0),
            stream=require_bool("stream", settings.get("stream", True)),
            policy=RetryPolicy.from_settings(settings),
        )

    def _is_transient(self, error: BaseException) -> bool:
        import openai

        if isinstance(error, openai.APIStatusError):
            should = error.response.headers.get("x-should-retry")
            if should in ("true", "false"):
                return should == "true"
            return is_transient_status(error.status_code)
        if isinstance(error, openai.APIConnectionError):  # includes APITimeoutError
            return True
        return default_is_transient(error)

    def _describe(self, error: BaseException) -> str:
        import openai

        where = self.base_url or OPENAI_URL
        if isinstance(error, openai.APIStatusError):
            code = error.status_code
            detail = f"HTTP {code}: {error.message}"
            if code == 401:
                return f"{detail}; check {self.api_key_env}"
            if code == 404:
                return f"{detail}; check the model name {self.model!r} and base_url ({where})"
            if code == 429:
                return f"{detail}; rate limited, try again later or lower the request rate"
            if code >= 500:
                return f"{detail}; the server had a problem, try again later"
            return f"{detail}; the request was rejected"
        if isinstance(error, openai.APITimeoutError):
            return f"the request to {where} timed out; check the server, or raise request_timeout"
        if isinstance(error, openai.APIConnectionError):
            return f"cannot connect to {where}; is the server running? (check base_url)"
        return default_describe(error)
