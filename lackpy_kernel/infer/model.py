"""What the model tiers share: prompts, sampling (stop, token limit), raw completion, rounds.

A model tier subclasses :class:`ModelProvider` and implements ``chat`` (a
system prompt and a user turn) and, when its API has one, ``complete`` (one
raw text, for a model without a chat template). ``generate`` and ``fix``
build the prompts (:mod:`.prompt`) and pick one of the two by the
provider's ``raw`` setting.

The settings every model tier takes besides its own and the retry policy's
(:data:`GENERATION_KEYS`; ``num_predict`` is Ollama's name for ``max_tokens``):

- ``stop`` (list of strings): where a reply ends; default the prompt
  layout's (:data:`~.prompt.DEFAULT_STOP`); ``[]`` sends none.
- ``max_tokens``: the most tokens one reply may have; default sized from the
  prompt's examples (:func:`~.prompt.default_max_tokens`).
- ``raw`` (false): send one completion text instead of chat messages.
- ``correction_rounds`` (2): model calls the correction chain may make after
  the first (a retry, then fixers); 0 leaves only the free cleanup.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from lackpy_kernel.errors import ProviderError

from .prompt import DEFAULT_STOP, Prompt, fixer_prompts, generate_prompt
from .provider import KIND_MODEL
from .settings import optional_int, require_bool, string_list

DEFAULT_ROUNDS = 2
FALLBACK_MAX_TOKENS = 512  # when neither the settings nor the dispatcher give a limit
TextCallback = Callable[[str], None]


@dataclass(frozen=True)
class Sampling:
    """How one call samples: stop sequences, the token limit, and who sees the text as it streams."""

    stop: tuple[str, ...] = DEFAULT_STOP
    max_tokens: int = FALLBACK_MAX_TOKENS
    on_text: TextCallback | None = None


@dataclass(frozen=True)
class GenerationSettings:
    """A model tier's settings for writing programs (see the module doc); None means the default."""

    stop: tuple[str, ...] | None = None
    max_tokens: int | None = None
    raw: bool = False
    correction_rounds: int = DEFAULT_ROUNDS

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any], *, token_key: str = "max_tokens",
                      raw_allowed: bool = True) -> GenerationSettings:
        """The settings from a provider table; ``ValueError`` naming a bad key."""
        stop = settings.get("stop")
        rounds = optional_int("correction_rounds", settings.get("correction_rounds"), minimum=0)
        raw = require_bool("raw", settings.get("raw", False))
        if raw and not raw_allowed:
            raise ValueError("raw completion is not offered by this provider's API; remove `raw`")
        return cls(
            stop=None if stop is None else tuple(string_list("stop", stop)),
            max_tokens=optional_int(token_key, settings.get(token_key), minimum=1),
            raw=raw,
            correction_rounds=DEFAULT_ROUNDS if rounds is None else rounds,
        )


GENERATION_KEYS = ("stop", "max_tokens", "raw", "correction_rounds")


class ModelProvider:
    """Base of the model tiers: ``generate`` and ``fix`` are one prompt, sent as chat or as raw text.

    A subclass sets ``package`` and ``extra`` (the Python package it needs and
    the lackpy extra that installs it) and implements ``chat``, and
    ``complete`` when its API has raw completion.
    """

    package: ClassVar[str]
    extra: ClassVar[str]
    kind = KIND_MODEL

    def __init__(self, name: str, generation: GenerationSettings | None = None) -> None:
        self._name = name
        self.generation = generation if generation is not None else GenerationSettings()

    @property
    def name(self) -> str:
        return self._name

    @property
    def correction_rounds(self) -> int:
        """Model calls the correction chain may make after the first."""
        return self.generation.correction_rounds

    def available(self) -> bool:
        """True when the client package is installed; makes no request."""
        return self.unavailable_reason() is None

    def unavailable_reason(self) -> str | None:
        """Why the provider cannot be used now (a missing package, say), or None."""
        return None if _installed(self.package) else self.missing_package_message()

    def missing_package_message(self) -> str:
        """What to install when the client package is missing."""
        return f"the {self.package} package is not installed: pip install 'lackpy-kernel[{self.extra}]'"

    def import_client(self) -> Any:
        """The client package; ProviderError saying what to install when it is missing."""
        try:
            return importlib.import_module(self.package)
        except ImportError as exc:
            raise ProviderError(self.missing_package_message()) from exc

    async def generate(
        self,
        intent: str,
        namespace_desc: str,
        config: dict[str, Any] | None = None,
        error_feedback: list[str] | None = None,
    ) -> str | None:
        """The model's raw answer (None when it is empty); ``error_feedback`` makes it a retry."""
        return await self.ask(generate_prompt(intent, namespace_desc, config, error_feedback), config)

    async def fix(
        self,
        intent: str,
        program: str | None,
        errors: list[str],
        namespace_desc: str,
        config: dict[str, Any] | None = None,
    ) -> str | None:
        """A fresh conversation asking the model to repair ``program`` (None: no program yet)."""
        system, user = fixer_prompts(intent, program, errors, namespace_desc, config)
        return await self.ask(Prompt(system, user), config)

    async def ask(self, prompt: Prompt, config: Mapping[str, Any] | None = None) -> str | None:
        """Send ``prompt`` as chat or, with ``raw``, as one completion; the answer, or None when empty."""
        sampling = self.sampling(config)
        if self.generation.raw:
            text = await self.complete(prompt.completion, sampling)
        else:
            text = await self.chat(prompt.system, prompt.user, sampling)
        return text if text.strip() else None

    def sampling(self, config: Mapping[str, Any] | None = None) -> Sampling:
        """The settings' stop and token limit, else the dispatcher's (``config``), else the defaults."""
        config = config or {}
        stop = self.generation.stop
        if stop is None:
            stop = tuple(config.get("stop", DEFAULT_STOP))
        max_tokens = self.generation.max_tokens or config.get("max_tokens") or FALLBACK_MAX_TOKENS
        return Sampling(stop, int(max_tokens), config.get("on_text"))

    async def chat(self, system: str, user: str, sampling: Sampling) -> str:
        """One system + user exchange with the model: its answer text."""
        raise NotImplementedError

    async def complete(self, prompt: str, sampling: Sampling) -> str:
        """One raw completion of ``prompt``: the text the model adds."""
        raise ProviderError(f"provider {self.name!r} cannot send raw completions; remove `raw`")


def _installed(package: str) -> bool:
    """Whether ``package`` can be imported, without importing it."""
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):  # ValueError: blocked with sys.modules[package] = None
        return False
