"""The inference provider protocol and the result of a generation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


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
