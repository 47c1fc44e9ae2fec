"""A model tier on any OpenAI-compatible server, through the official ``openai`` client.

The OpenAI API itself, or a local server that speaks its protocol (vLLM,
llama.cpp's server, LM Studio, ``python -m llama_cpp.server``): set
``base_url`` to its ``/v1`` address. Chat goes to ``/chat/completions``;
with ``raw = true``, the prompt goes to ``/completions`` as one text (for a
base model without a chat template).
"""

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

DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"
OPENAI_URL = "https://api.openai.com/v1"
# Sent as the key to a server of one's own (base_url set) when the key's variable is unset;
# the client refuses to run without one, local servers ignore it.
NO_KEY = "no-key-needed"
SETTINGS_KEYS = frozenset({"plugin", "model", "base_url", "api_key_env", "temperature", "stream",
                           *GENERATION_KEYS, *POLICY_KEYS})


class OpenAIProvider(ModelProvider):
    """Writes programs with a model behind the OpenAI protocol (``POST /v1/chat/completions``).

    The key is read from the environment variable ``api_key_env`` (default
    ``OPENAI_API_KEY``) each time a client is made; a server of one's own
    (``base_url`` set) needs none. The SDK's own retries are off: ``policy``
    is the one retry loop, and the key is redacted from every message this
    provider raises, logs or streams.
    """

    package = "openai"
    extra = "openai"

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
        super().__init__(name, generation)
        self.model = model
        self.base_url = base_url
        self.api_key_env = api_key_env
        self.temperature = temperature
        self.stream = stream
        self.policy = policy if policy is not None else RetryPolicy()

    @classmethod
    def from_settings(cls, name: str, settings: Mapping[str, Any]) -> OpenAIProvider:
        """A provider from a ``[inference.providers.<name>]`` table; unknown keys raise ``ValueError``."""
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
            generation=GenerationSettings.from_settings(settings),
        )

    @property
    def where(self) -> str:
        """The server requests go to."""
        return self.base_url or OPENAI_URL

    def unavailable_reason(self) -> str | None:
        """A missing package, or no key for the OpenAI API itself; None when usable. No request."""
        if self.base_url is None and not os.environ.get(self.api_key_env):
            return f"{self.api_key_env} is not set (a local server needs none: set base_url)"
        return super().unavailable_reason()

    async def chat(self, system: str, user: str, sampling: Sampling) -> str:
        """One system + user exchange (``/chat/completions``) under the retry policy: the answer text."""
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        return await self._request("chat", {"messages": messages}, sampling)

    async def complete(self, prompt: str, sampling: Sampling) -> str:
        """One raw completion (``/completions``) under the retry policy: the text the model adds."""
        return await self._request("completion", {"prompt": prompt}, sampling)

    async def _request(self, endpoint: str, body: dict[str, Any], sampling: Sampling) -> str:
        openai = self.import_client()
        key = os.environ.get(self.api_key_env) or None
        if key is None and self.base_url is None:
            raise ProviderError(f"{self.api_key_env} is not set; export your OpenAI API key to use provider "
                                f"{self.name!r}, or set base_url to a server of your own")
        request: dict[str, Any] = {"model": self.model, **body, "max_tokens": sampling.max_tokens}
        if sampling.stop:
            request["stop"] = list(sampling.stop)[:4]  # the API takes at most four
        if self.temperature is not None:
            request["temperature"] = float(self.temperature)
        secrets = (key,) if key else ()

        def text_of(chunk: Any) -> str:
            if not chunk.choices:
                return ""
            choice = chunk.choices[0]
            if endpoint == "completion":
                return choice.text or ""
            part = choice.delta if self.stream else choice.message
            return (part.content if part is not None else None) or ""

        async def attempt() -> str:
            client = openai.AsyncOpenAI(api_key=key or NO_KEY, base_url=self.base_url, max_retries=0)
            api = client.chat.completions if endpoint == "chat" else client.completions
            try:
                if not self.stream:
                    return text_of(await api.create(**request, stream=False))
                chunks = await api.create(**request, stream=True)
                return await collect_text(chunks, text_of, self.policy.stream_idle_timeout,
                                          what=f"the stream from {self.where}",
                                          on_text=redacting(sampling.on_text, secrets))
            finally:
                await client.close()

        text: str = await self.policy.run(
            attempt,
            self._is_transient,
            what=f"OpenAI-compatible provider {self.name!r} (model {self.model!r} at {self.where})",
            describe=self._describe,
            secrets=secrets,
        )
        return redact(text, secrets)

    def _is_transient(self, error: BaseException) -> bool:
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

    def _describe(self, error: BaseException) -> str:
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

