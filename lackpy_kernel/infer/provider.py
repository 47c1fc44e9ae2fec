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


@dataclass
class GenerationResult:
    """A validated program and how it was made."""

    program: str
    provider_name: str
    generation_time_ms: float
    correction_strategy: str | None = None
    correction_attempts: int = 0
    attempts_log: list[dict[str, Any]] | None = None


class ChatProvider:
    """Base of the model tiers: ``generate`` and ``fix`` are one system + user ``chat``.

    A subclass sets ``_name`` and implements ``chat``; the prompts come from
    the dispatcher's config (see ``prompt.system_prompt_for``).
    """

    _name: str

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
