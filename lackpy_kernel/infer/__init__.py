"""Inference: providers write lackpy programs for intents; the dispatcher validates them."""

from .correction import deterministic_cleanup
from .dispatcher import InferenceDispatcher
from .prompt import Example, build_system_prompt, format_params_description, select_examples
from .provider import GenerationResult, InferenceProvider
from .replay import ReplayProvider, record_generation
from .rules import RulesProvider
from .sanitize import sanitize_output
from .templates import TemplateError, TemplatesProvider

__all__ = [
    "Example",
    "GenerationResult",
    "InferenceDispatcher",
    "InferenceProvider",
    "ReplayProvider",
    "RulesProvider",
    "TemplateError",
    "TemplatesProvider",
    "build_system_prompt",
    "deterministic_cleanup",
    "format_params_description",
    "record_generation",
    "sanitize_output",
    "select_examples",
]
