"""Inference: providers write lackpy programs for intents; the dispatcher validates them.

- ``tiers/``: the deterministic tiers (templates, rules, replay) on one base.
- ``models/``: one module per model vendor, holding its program writer and its tool-calling
  chat, on one base with the retry and stream policy.
- ``prompt``, ``sanitize``: the system prompt and the clean-up of a model's reply.
- Behind the names below: the provider protocol (``_provider``), the dispatcher and its
  correction chain (``_dispatcher``, ``_correction``, ``_events``, ``_examples``), the dry
  runs of generated programs and their feedback (``_tryout``), the
  providers a config names (``_factory``), recordings (``_recordings``), what to do when no
  tier wrote a program, worded for each surface (``_advice``).
"""

from lackpy_kernel.errors import TemplateError

from ._advice import failure_text, next_step
from ._correction import clean_reply, deterministic_cleanup
from ._dispatcher import InferenceDispatcher, is_available, unavailable_reason
from ._events import (
    CorrectionStep,
    GenerationEvent,
    ProgramStreaming,
    ProviderFailed,
    ProviderTried,
    ProviderUnavailable,
)
from ._factory import UnavailableProvider, build_provider, build_providers
from ._provider import (
    KIND_MODEL,
    KIND_REPLAY,
    KIND_RULES,
    KIND_TEMPLATE,
    FixingProvider,
    GenerationResult,
    InferenceProvider,
)
from ._tryout import ToolCallSeen, Tryout, TryoutRunner, not_dry_runnable, runtime_feedback, tryout_of
from .prompt import Example, build_system_prompt, format_params_description, select_examples
from .sanitize import sanitize_output
from .tiers import ReplayProvider, RulesProvider, TemplatesProvider, record_generation

__all__ = [
    "KIND_MODEL",
    "KIND_REPLAY",
    "KIND_RULES",
    "KIND_TEMPLATE",
    "CorrectionStep",
    "Example",
    "FixingProvider",
    "GenerationEvent",
    "GenerationResult",
    "InferenceDispatcher",
    "InferenceProvider",
    "ProgramStreaming",
    "ProviderFailed",
    "ProviderTried",
    "ProviderUnavailable",
    "ReplayProvider",
    "RulesProvider",
    "TemplateError",
    "TemplatesProvider",
    "ToolCallSeen",
    "Tryout",
    "TryoutRunner",
    "UnavailableProvider",
    "build_provider",
    "build_providers",
    "build_system_prompt",
    "clean_reply",
    "deterministic_cleanup",
    "failure_text",
    "format_params_description",
    "is_available",
    "next_step",
    "not_dry_runnable",
    "record_generation",
    "runtime_feedback",
    "sanitize_output",
    "select_examples",
    "tryout_of",
    "unavailable_reason",
]
