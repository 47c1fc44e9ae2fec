"""Tier 3: Claude through the Anthropic Messages API, with the official ``anthropic`` client."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from lackpy_kernel.errors import ProviderError
from lackpy_kernel.infer.model import GENERATION_KEYS, GenerationSettings, ModelProvider, Sampling
from lackpy_kernel.infer.retry import (
    POLICY_KEYS,
    RetryPolicy,
    default_describe,
    default_is_transient,
    is_transient_status,
    redact,
    redacting,
)
from lackpy_kernel.infer.settings import check_settings, optional_number, optional_str, require_bool
from lackpy_kernel.infer.streaming import collect_text

DEFAULT_MODEL = "claude-haiku-4-5-20251001"
API_KEY_ENV = "ANTHROPIC_API_KEY"
SETTINGS_KEYS = frozenset({"plugin", "model", "temperature", "base_url", "stream",
                           *(set(GENERATION_KEYS) - {"raw"}), *POLICY_KEYS})
# Error types that the API sends inside a 200 stream and that are worth another attempt.
_TRANSIENT_ERROR_TYPES = frozenset({"overloaded_error", "api_error", "rate_limit_error", "timeout_error"})


class AnthropicProvider(ModelProvider):
    """Writes programs with Claude (``POST /v1/messages``).

    The key comes from ``ANTHROPIC_API_KEY``, read each time a client is made
    (never at import). The SDK's own retries are off (``max_retries=0``):
    ``policy`` is the one retry loop. The key is redacted from every message
    this provider raises or logs. The Messages API has no raw completion.
    """

    package = "anthropic"
    extra = "anthropic"

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
        super().__init__(name, generation)
        self.model = model
        self.temperature = temperature
        self.base_url = base_url
        self.stream = stream
        self.policy = policy if policy is not None else RetryPolicy()

    @classmethod
    def from_settings(cls, name: str, settings: Mapping[str, Any]) -> AnthropicProvider:
        """A provider from a ``[inference.providers.<name>]`` table; unknown keys raise ``ValueError``."""
        check_settings("anthropic", name, settings, SETTINGS_KEYS)
        return cls(
            name,
            model=optional_str("model", settings.get("model", DEFAULT_MODEL)) or DEFAULT_MODEL,
            temperature=optional_number("temperature", settings.get("temperature"), minimum=0.0),
            base_url=optional_str("base_url", settings.get("base_url")),
            stream=require_bool("stream", settings.get("stream", True)),
            policy=RetryPolicy.from_settings(settings),
            generation=GenerationSettings.from_settings(settings, raw_allowed=False),
        )

    def unavailable_reason(self) -> str | None:
        """A missing package, or ``ANTHROPIC_API_KEY`` not set; None when usable. No request."""
        if not os.environ.get(API_KEY_ENV):
            return f"{API_KEY_ENV} is not set"
        return super().unavailable_reason()

    async def chat(self, system: str, user: str, sampling: Sampling) -> str:
        """One system + user exchange under the retry policy: the answer text, the key redacted."""
        anthropic = self.import_client()
        key = os.environ.get(API_KEY_ENV)
        if not key:
            raise ProviderError(f"{API_KEY_ENV} is not set; export your Anthropic API key to use provider "
                                f"{self.name!r}")
        request: dict[str, Any] = {
            "model": self.model,
            "max_tokens": sampling.max_tokens,
            "system": system,
            "messages": [{"role": "user", "content": user}],
        }
        if sampling.stop:
            request["stop_sequences"] = list(sampling.stop)
        if self.temperature is not None:
            # anthropic 2.x has no ``temperature`` argument; the Messages API still takes the field.
            request["extra_body"] = {"temperature": float(self.temperature)}
        where = self.base_url or os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"

        async def attempt() -> str:
            client = anthropic.AsyncAnthropic(api_key=key, base_url=self.base_url, max_retries=0)
            try:
                if not self.stream:
                    message = await client.messages.create(**request, stream=False)
                    return "".join(
                        getattr(block, "text", "") for block in message.content if block.type == "text"
                    )
                events = await client.messages.create(**request, stream=True)
                async with events:
                    return await collect_text(events, _text_of, self.policy.stream_idle_timeout,
                                              what=f"the Anthropic stream from {where}",
                                              on_text=redacting(sampling.on_text, (key,)))
            finally:
                await client.close()

        text: str = await self.policy.run(
            attempt,
            self._is_transient,
            what=f"Anthropic provider {self.name!r} (model {self.model!r} at {where})",
            describe=self._describe,
            secrets=(key,),
        )
        return redact(text, (key,))

    def _is_transient(self, error: BaseException) -> bool:
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

    def _describe(self, error: BaseException) -> str:
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
            where = self.base_url or os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"
            return f"cannot connect to the Anthropic API at {where}; check the network (and base_url)"
        return default_describe(error)


def _text_of(event: Any) -> str:
    """The text a streamed Messages API event adds ("" for the others)."""
    if event.type == "content_block_delta" and event.delta.type == "text_delta":
        return str(event.delta.text)
    return ""
