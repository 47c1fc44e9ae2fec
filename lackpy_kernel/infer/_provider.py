"""The inference provider protocol and the result of a generation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ._tryout import Tryout


@runtime_checkable
class InferenceProvider(Protocol):
    """Writes lackpy program text for an intent.

    ``generate`` returns the program, or None to pass to the next provider;
    it raises only when something is wrong with the provider itself (the
    dispatcher records the error and moves on). ``namespace_desc`` is the
    kit's tools as prompt text; ``config`` carries the dispatcher's per-call
    context (:data:`CONFIG_KEYS`). A provider may also define ``async fix(intent,
    program, errors, namespace_desc, config=None)`` for the correction
    chain's fresh-fixer step (see :class:`FixingProvider`), ``kind`` (a
    ``KIND_*`` value; default a model), ``correction_rounds`` (model calls
    the correction chain may make after the first; default 2), ``samples``
    (programs asked for at first; default 1), ``dry_run`` (whether its valid
    programs are dry-run when the dispatcher can; default true) and
    ``unavailable_reason()``.
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


@runtime_checkable
class FixingProvider(InferenceProvider, Protocol):
    """A provider with its own fresh-fixer step; ``program`` is None when no earlier reply was code."""

    async def fix(
        self,
        intent: str,
        program: str | None,
        errors: list[str],
        namespace_desc: str,
        config: dict[str, Any] | None = None,
    ) -> str | None: ...


# What ``config`` holds on each call (a provider ignores what it does not need).
CONFIG_KEYS = {
    "system_prompt": "the system prompt for a model, without its examples (str)",
    "examples": "the prompt's few-shot examples, the closest to the intent last (list of Example)",
    "params_desc": "the parameters' description (str or None)",
    "variables_desc": "the session's variables' description (str or None)",
    "allowed_names": "every name a program may use besides builtins (sorted list)",
    "tool_names": "the kit's tool names (sorted list); rules and replay match on them",
    "example_pool": "few-shot examples (list of Example or dicts)",
    "stop": "default stop sequences (list of str)",
    "max_tokens": "default token limit of one reply (int)",
    "on_text": "called with a model's answer so far while it streams (callable or absent)",
    "previous_program": "on a retry: the rejected program (str or None)",
    "fixer": "True when generate stands in for a missing fix",
}


class ProgramText(str):
    """Program text a provider wrote, and ``source``: where it came from (a template's file)."""

    source: str | None

    def __new__(cls, text: str, source: str | None = None) -> ProgramText:
        made = super().__new__(cls, text)
        made.source = source
        return made


# Model calls the correction chain may make after the first, when a provider does not say.
DEFAULT_ROUNDS = 2
# Programs a provider is asked for at first, when it does not say (``samples``).
DEFAULT_SAMPLES = 1

# What a provider is, for the ratchet: a template's runs are counted, a model's recorded.
KIND_TEMPLATE, KIND_RULES, KIND_REPLAY, KIND_MODEL = "template", "rules", "replay", "model"
DETERMINISTIC_KINDS = frozenset({KIND_TEMPLATE, KIND_RULES, KIND_REPLAY})


def provider_kind(provider: InferenceProvider) -> str:
    """A provider's ``kind`` attribute; a provider without one counts as a model."""
    kind = getattr(provider, "kind", KIND_MODEL)
    return kind if isinstance(kind, str) else KIND_MODEL


@dataclass
class GenerationResult:
    """A validated program and how it was made.

    ``provider_name`` is the tier's configured name, ``kind`` what sort of provider it is
    (``template``, ``rules``, ``replay`` or ``model``) and ``source`` where the program came
    from when the provider says (a template's file). ``dry_run`` is how the program was
    checked before it was returned (its trace, for the person to see), when it was.
    """

    program: str
    provider_name: str
    generation_time_ms: float
    correction_strategy: str | None = None
    correction_attempts: int = 0
    attempts_log: list[dict[str, Any]] | None = None
    kind: str = KIND_MODEL
    source: str | None = None
    dry_run: Tryout | None = None

    @property
    def from_model(self) -> bool:
        """Whether a model (or a custom provider) wrote it, rather than a template, rule or replay."""
        return self.kind not in DETERMINISTIC_KINDS
