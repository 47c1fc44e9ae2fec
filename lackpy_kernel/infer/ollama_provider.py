"""Tier 2: a local model served by Ollama, through the official ``ollama`` client."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from lackpy_kernel.infer.model import GENERATION_KEYS, GenerationSettings, ModelProvider, Sampling
from lackpy_kernel.infer.retry import (
    POLICY_KEYS,
    RetryPolicy,
    default_describe,
    default_is_transient,
    is_transient_status,
)
from lackpy_kernel.infer.settings import check_settings, optional_number, optional_str, require_bool
from lackpy_kernel.infer.streaming import collect_text

DEFAULT_MODEL = "qwen2.5-coder:1.5b"
DEFAULT_HOST = "http://127.0.0.1:11434"  # the ollama library's own default
SETTINGS_KEYS = frozenset({"plugin", "host", "model", "temperature", "keep_alive", "stream", "num_predict",
                           *(set(GENERATION_KEYS) - {"max_tokens"}), *POLICY_KEYS})


class OllamaProvider(ModelProvider):
    """Writes programs with a model on an Ollama server (``POST /api/chat``; ``/api/generate`` when raw).

    ``host`` defaults to the ``OLLAMA_HOST`` environment variable, then to the
    library's default (``http://127.0.0.1:11434``); it is read when a request
    is made. ``temperature`` and ``keep_alive`` are sent only when set (0.0
    is sent); the stop sequences and the token limit (``num_predict``) always.
    ``policy`` holds the retry and timeout knobs, ``generation`` the settings
    of :mod:`lackpy_kernel.infer.model`.
    """

    package = "ollama"
    extra = "ollama"

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
        super().__init__(name, generation)
        self.host = host
        self.model = model
        self.temperature = temperature
        self.keep_alive = keep_alive
        self.stream = stream
        self.policy = policy if policy is not None else RetryPolicy()

    @classmethod
    def from_settings(cls, name: str, settings: Mapping[str, Any]) -> OllamaProvider:
        """A provider from a ``[inference.providers.<name>]`` table; unknown keys raise ``ValueError``."""
        check_settings("ollama", name, settings, SETTINGS_KEYS)
        keep_alive = settings.get("keep_alive")
        if isinstance(keep_alive, bool) or not isinstance(keep_alive, str | int | float | None):
            raise ValueError(f"keep_alive must be a duration such as \"30m\" or a number of seconds, "
                             f"got {keep_alive!r}")
        return cls(
            name,
            host=optional_str("host", settings.get("host")),
            model=optional_str("model", settings.get("model", DEFAULT_MODEL)) or DEFAULT_MODEL,
            temperature=optional_number("temperature", settings.get("temperature"), minimum=0.0),
            keep_alive=keep_alive,
            stream=require_bool("stream", settings.get("stream", True)),
            policy=RetryPolicy.from_settings(settings),
            generation=GenerationSettings.from_settings(settings, token_key="num_predict"),
        )

    @property
    def resolved_host(self) -> str:
        """Where requests go: ``host``, else ``$OLLAMA_HOST``, else the library default."""
        return self.host or os.environ.get("OLLAMA_HOST") or DEFAULT_HOST

    async def chat(self, system: str, user: str, sampling: Sampling) -> str:
        """One system + user exchange (``/api/chat``) under the retry policy: the answer text."""
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        return await self._request("chat", {"messages": messages}, sampling)

    async def complete(self, prompt: str, sampling: Sampling) -> str:
        """One raw completion (``/api/generate`` with ``raw``) under the retry policy: the text added."""
        return await self._request("generate", {"prompt": prompt, "raw": True}, sampling)

    async def _request(self, endpoint: str, body: dict[str, Any], sampling: Sampling) -> str:
        ollama = self.import_client()
        host = self.resolved_host
        options: dict[str, Any] = {"num_predict": sampling.max_tokens}
        if sampling.stop:
            options["stop"] = list(sampling.stop)
        if self.temperature is not None:
            options["temperature"] = float(self.temperature)
        request: dict[str, Any] = {"model": self.model, **body, "options": options}
        if self.keep_alive is not None:
            request["keep_alive"] = self.keep_alive

        def text_of(chunk: Any) -> str:
            return (chunk.message.content if endpoint == "chat" else chunk.response) or ""

        async def attempt() -> str:
            client = ollama.AsyncClient(host=host)
            call = getattr(client, endpoint)
            try:
                if not self.stream:
                    return text_of(await call(**request, stream=False))
                chunks = await call(**request, stream=True)
                return await collect_text(chunks, text_of, self.policy.stream_idle_timeout,
                                          what=f"the Ollama stream from {host}", on_text=sampling.on_text)
            finally:
                await client.close()

        text: str = await self.policy.run(
            attempt,
            self._is_transient,
            what=f"Ollama provider {self.name!r} (model {self.model!r} at {host})",
            describe=self._describe,
        )
        return text

    def _is_transient(self, error: BaseException) -> bool:
        import httpx
        import ollama

        if isinstance(error, ollama.ResponseError):
            return is_transient_status(error.status_code)
        if isinstance(error, httpx.NetworkError | httpx.TimeoutException | httpx.RemoteProtocolError):
            return True
        return default_is_transient(error)

    def _describe(self, error: BaseException) -> str:
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
