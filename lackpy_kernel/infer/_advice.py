"""What to do when no tier wrote a program: a GenerationError's facts, worded for one surface.

The dispatcher raises :class:`~lackpy_kernel.errors.GenerationError` with the facts (each tier's
answer, what the model tiers did, the kit a template's program needs) and a message worded for
every surface at once; a host that knows where it is (the CLI, a notebook, the chat, MCP) words
them again with its own commands, through :func:`failure_text`.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass

from lackpy_kernel.errors import GenerationError

MAX_SHOWN_INTENT = 80  # a longer intent is not repeated in the advice: PATTERN stands for it
MODELS_NONE, MODELS_UNREACHABLE, MODELS_FAILED = "none", "unreachable", "failed"


@dataclass(frozen=True)
class _Words:
    """One surface's commands: setting the kit (``{kit}``: tool,tool; ``{kit_list}``: a JSON
    list), and keeping a program one writes as a template for the intent (``{pattern}``: the
    intent, quoted)."""

    kit: str
    create: str


SURFACES = {
    "cli": _Words(kit="run it with `--kit {kit}`",
                  create="write the program in a file and keep it as a template with "
                         "`lackpy create FILE --name NAME --pattern {pattern}`"),
    "notebook": _Words(kit="`%kit {kit}`, then delegate again",
                       create="write the program in a cell under `%%create NAME --pattern "
                              "{pattern}`, which keeps it as a template"),
    "chat": _Words(kit="`/kit {kit}`, then ask again",
                   create="write the program and keep it as a template for this request "
                          "(`%%create NAME --pattern {pattern}` over it in a notebook, `lackpy "
                          "create FILE --name NAME --pattern {pattern}` in a shell)"),
    "mcp": _Words(kit="call the tool again with kit {kit_list}",
                  create="write the program and keep it as a template with the create tool "
                         "(pattern {pattern})"),
    "any": _Words(kit="give it the kit {kit} (`--kit {kit}` from the command line, `%kit {kit}` in "
                      "a notebook, `/kit {kit}` in the chat)",
                  create="write the program and keep it as a template for this request "
                         "(`%%create NAME --pattern {pattern}` in a notebook, `lackpy create FILE "
                         "--name NAME --pattern {pattern}` in a shell)"),
}


def next_step(error: GenerationError, surface: str = "any") -> str:
    """What to do after ``error``, in ``surface``'s commands (a key of :data:`SURFACES`)."""
    words = SURFACES[surface]
    if error.kit:
        missing = ", ".join(error.missing)
        kit = words.kit.format(kit=",".join(error.kit), kit_list=json.dumps(list(error.kit)))
        return f"Next: {kit} ({error.source or 'its program'} calls {missing})."
    shown = 0 < len(error.intent) <= MAX_SHOWN_INTENT and "\n" not in error.intent
    pattern = shlex.quote(error.intent.replace("{", "{{").replace("}", "}}")) if shown else "PATTERN"
    keep = f"or {words.create.format(pattern=pattern)}"
    if error.models == MODELS_NONE:
        return ("Next: templates, rules and recordings answer only the requests they know, and no "
                "model tier is configured. Configure one ([inference] in .lackpy/config.toml; "
                f"`lackpy doctor` shows which tiers are reachable), {keep}.")
    if error.models == MODELS_UNREACHABLE:
        return ("Next: no model tier could be reached (above: why). Start its server or set its "
                f"key (`lackpy doctor` says what to fix), {keep}.")
    return f"Next: say it another way (which tools, which files), {keep}."


def failure_text(error: GenerationError, surface: str = "any") -> str:
    """``error``'s whole message worded for ``surface``: the intent, each tier's answer, and
    :func:`next_step`. A GenerationError raised without its facts keeps its own message."""
    if not error.failures:
        return str(error)
    return "\n".join([f"no provider could write a valid program for {error.intent!r}:",
                      *(f"  - {failure}" for failure in error.failures),
                      next_step(error, surface)])
