"""The system prompt for model tiers, and the examples retrieved into it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lackpy_kernel.lang import ALLOWED_BUILTINS

FRAMING = (
    "You write one lackpy program: a Jupyter cell in Python that lacks most of Python. "
    "It composes the tools below and plain data. Reply with the program text only: "
    "no markdown fences, no explanation."
)

CONSTRAINTS = """\
- Call only the tools and builtins listed here; no import, def, class, while, try, raise,
  del, global, assert, yield, await, walrus (:=) or ** (multiply instead).
- lambda only as a key= argument: sorted(rows, key=lambda r: r['size']).
- No attribute starting with '_', no .format or .format_map (use f-strings), no open().
- Assign tool results to variables; a for loop iterates over a variable or a call.
- The value of the last line is the program's result."""

_WORD = re.compile(r"[a-z0-9_]+")


@dataclass
class Example:
    """An intent and the program that answers it, with tags for retrieval."""

    intent: str
    code: str
    tags: list[str] = field(default_factory=list)

    @classmethod
    def coerce(cls, value: Example | Mapping[str, Any]) -> Example:
        """An Example from an Example or a ``{"intent", "code", "tags"}`` dict."""
        if isinstance(value, Example):
            return value
        return cls(str(value["intent"]), str(value["code"]), list(value.get("tags", [])))


def build_system_prompt(
    namespace_desc: str,
    params_desc: str | None = None,
    intent: str | None = None,
    example_pool: Iterable[Example | Mapping[str, Any]] | None = None,
    n_examples: int = 6,
    interpreter: Any = None,
) -> str:
    """The system prompt: framing, tools, builtins, parameters, constraints and examples.

    ``interpreter.system_prompt_hint()``, when present, replaces the generic
    framing. Up to ``n_examples`` examples from ``example_pool`` are chosen by
    their word overlap with ``intent``.
    """
    hint = getattr(interpreter, "system_prompt_hint", None)
    sections = [hint() if callable(hint) else FRAMING]
    sections.append("Tools:\n" + (namespace_desc.strip() or "(none: use builtins only)"))
    sections.append("Builtins: " + ", ".join(sorted(ALLOWED_BUILTINS)))
    if params_desc:
        sections.append("Variables already set (use them by name):\n" + params_desc.strip())
    sections.append("Rules:\n" + CONSTRAINTS)
    examples = select_examples(intent, example_pool or [], n_examples) if intent else []
    if examples:
        sections.append("Examples:\n\n" + "\n\n".join(
            f"Intent: {example.intent}\nProgram:\n{example.code}" for example in examples
        ))
    return "\n\n".join(sections) + "\n"


def select_examples(
    intent: str, pool: Iterable[Example | Mapping[str, Any]], n: int
) -> list[Example]:
    """The ``n`` examples sharing the most words with ``intent`` (ties keep pool order)."""
    wanted = set(_WORD.findall(intent.lower()))
    scored = []
    for order, item in enumerate(pool):
        example = Example.coerce(item)
        words = set(_WORD.findall(f"{example.intent} {' '.join(example.tags)}".lower()))
        overlap = len(wanted & words)
        if overlap:
            scored.append((-overlap, order, example))
    scored.sort(key=lambda entry: entry[:2])
    return [example for _, _, example in scored[:max(n, 0)]]


def format_params_description(params: Mapping[str, Any]) -> str:
    """One line per parameter: ``name: type`` and, for metadata dicts, `` - description``.

    A value may be the raw value or ``{"value": ..., "type": ..., "description": ...}``.
    """
    lines = []
    for name, value in params.items():
        if isinstance(value, Mapping) and "value" in value:
            kind = value.get("type") or type(value["value"]).__name__
            line = f"{name}: {kind}"
            if value.get("description"):
                line += f" - {value['description']}"
        else:
            line = f"{name}: {type(value).__name__}"
        lines.append(line)
    return "\n".join(lines)


def feedback_message(intent: str, errors: list[str], program: str | None = None) -> str:
    """The user message for a retry: the intent, the rejected program and its errors."""
    parts = [intent]
    if program:
        parts.append(f"Your previous program was rejected:\n{program}")
    parts.append("Fix these errors and reply with the whole corrected program only:\n"
                 + "\n".join(f"- {error}" for error in errors))
    return "\n\n".join(parts)


FIXER_INSTRUCTION = (
    "You are repairing a lackpy program that was rejected. The user message gives the intent, the "
    "rejected program and the errors. Keep what was right, fix every error, and reply with the whole "
    "corrected program only: no explanation, no markdown fences."
)


def system_prompt_for(intent: str, namespace_desc: str, config: Mapping[str, Any] | None) -> str:
    """``config["system_prompt"]`` when given, else :func:`build_system_prompt` from the config's context."""
    config = config or {}
    given = config.get("system_prompt")
    if given:
        return str(given)
    return build_system_prompt(
        namespace_desc, config.get("params_desc"), intent, config.get("example_pool")
    )


def user_message_for(
    intent: str, config: Mapping[str, Any] | None, error_feedback: list[str] | None
) -> str:
    """The intent, or on a retry the intent with the previous program and its errors."""
    if not error_feedback:
        return intent
    return feedback_message(intent, list(error_feedback), (config or {}).get("previous_program"))


def fixer_prompts(
    intent: str, program: str, errors: list[str], namespace_desc: str, config: Mapping[str, Any] | None
) -> tuple[str, str]:
    """(system, user) for a fresh "fixer" conversation about a rejected ``program``."""
    system = system_prompt_for(intent, namespace_desc, config).rstrip("\n")
    system += "\n\n" + FIXER_INSTRUCTION + "\n"
    return system, feedback_message(intent, list(errors), program)
