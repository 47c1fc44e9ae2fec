"""The deterministic tiers: saved templates (tier 0), fixed rules (tier 1) and recorded
generations (replay), each a :class:`DeterministicProvider`."""

from lackpy_kernel.errors import TemplateError

from ._base import DeterministicProvider
from ._replay import REPLAY_FILE, ReplayProvider, record_generation
from ._rules import RulesProvider, kit_tool_names
from ._template_text import compile_pattern, fill_placeholders
from ._templates import (
    SUFFIX,
    TEMPLATE_FRONTMATTER,
    Template,
    TemplateIndex,
    TemplatesProvider,
    check_template_name,
    format_template,
    parse_template,
    template_index,
    update_counts,
)

__all__ = [
    "REPLAY_FILE",
    "SUFFIX",
    "TEMPLATE_FRONTMATTER",
    "DeterministicProvider",
    "ReplayProvider",
    "RulesProvider",
    "Template",
    "TemplateError",
    "TemplateIndex",
    "TemplatesProvider",
    "check_template_name",
    "compile_pattern",
    "fill_placeholders",
    "format_template",
    "kit_tool_names",
    "parse_template",
    "record_generation",
    "template_index",
    "update_counts",
]
