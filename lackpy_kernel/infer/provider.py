"""The inference provider protocol and the result of a generation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from .prompt import fixer_prompts, system_prompt_for, user_message_for


@runtime_checkable
class InferenceProvider(Protocol):
    """Writes lackpy program text for an intent.

    ``generate`` returns the program, or None to pass to the next provider;
    it raises only when something is wrong with the provider itself (the
    dispatcher records the error and moves on). ``config`` carries the
    dispatcher's per-call context: ``system_prompt``, ``params_desc``,
    ``allowed_names`` and ``example_pool``. A provider may also define
    ``async fix(intent, program, errors, namespace_desc, config=None)`` for
    the correction chain's fresh-fixer step.
    """

    @property
    def name(self) -> str: ...

    def available(self) -> bool: ...

    async def generate(
        self,
        intent: str,
        namespace_desc: str,
        config: dict[str, Any] | None = None,
        error_feedback: list[str] | None = None,
    ) -> str | None: ...


class ProgramText(str):
    """Program text a provider wrote, and ``source``: where it came from (a template's file)."""

    source: str | None

    def __new__(cls, text: str, source: str | None = None) -> ProgramText:
        made = super().__new__(cls, text)
        made.source = source
        return made


# What a provider is, for the ratchet: a template's runs are counted, a model's recorded.
KIND_TEMPLATE, KIND_RULES, KIND_REPLAY, KIND_MODEL = "template", "rules", "replay", "model"
DETERMINISTIC_KINDS = frozenset({KIND_TEMPLATE, KIND_RULES, KIND_REPLAY})


def provider_kind(provider: Any) -> str:
    """A provider's ``kind`` attribute; a provider without one counts as a model."""
    kind = getattr(provider, "kind", KIND_MODEL)
    return kind if isinstance(kind, str) else KIND_MODEL


@dataclass
class GenerationResult:
    """A validated program and how it was made.

    ``provider_name`` is the tier's configured name, ``kind`` what sort of provider it is
    (``template``, ``rules``, ``replay`` or ``model``) and ``source`` where the program came
    from when the provider says (a template's file).
    """

    program: str
    provider_name: str
    generation_time_ms: float
    correction_strategy: str | None = None
    correction_attempts: int = 0
    attempts_log: list[dict[str, Any]] | None = None
    kind: str = KIND_MODEL
    source: str | None = None

    @property
    def from_model(self) -> bool:
        """Whether a model (or a custom provider) wrote it, rather than a template, rule or replay."""
        return self.kind not in DETERMINISTIC_KINDS


class ChatProvider:
    """Base of the model tiers: ``generate`` and ``fix`` are one system + user ``chat``.

    A subclass sets ``_name`` and implements ``chat``; the prompts come from
    the dispatcher's config (see ``prompt.system_prompt_for``).
    """

    _name: str
    kind = KIND_MODEL

    @property
    def name(self) -> str:
        return self._name

    async def generate(
        self,
        intent: str,
        namespace_desc: str,
        config: dict[str, Any] | None = None,
        error_feedback: list[str] | None = None,
    ) -> str | None:
        """The model's raw answer (None when it is empty); ``error_feedback`` makes it a retry."""
        system = system_prompt_for(intent, namespace_desc, config)
        return await self.chat(system, user_message_for(intent, config, error_feedback))

    async def fix(
        self,
        intent: str,
        program: str,
        errors: list[str],
        namespace_desc: str,
        config: dict[str, Any] | None = None,
    ) -> str | None:
        """A fresh conversation asking the model to repair ``program`` given ``errors``."""
        system, user = fixer_prompts(intent, program, errors, namespace_desc, config)
        return await self.chat(system, user)

    async def chat(self, system: str, user: str) -> str | None:
        """One exchange with the model: its answer text, or None when it is empty."""
        raise NotImplementedError
