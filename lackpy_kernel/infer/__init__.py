"""Inference: providers write lackpy programs for intents; the dispatcher validates them."""

from lackpy_kernel.errors import TemplateError

from .correction import clean_reply, deterministic_cleanup
from .dispatcher import InferenceDispatcher
from .events import (
    CorrectionStep,
    GenerationEvent,
    ProgramStreaming,
    ProviderFailed,
    ProviderTried,
    ProviderUnavailable,
)
from .prompt import Example, build_system_prompt, format_params_description, select_examples
from .provider import FixingProvider, GenerationResult, InferenceProvider
from .sanitize import sanitize_output
from .tiers import ReplayProvider, RulesProvider, TemplatesProvider, record_generation

__all__ = [
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
    "build_system_prompt",
    "clean_reply",
    "deterministic_cleanup",
    "format_params_description",
    "record_generation",
    "sanitize_output",
    "select_examples",
]
