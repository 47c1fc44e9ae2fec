"""The prompts of the model tiers, all in the few-shot examples' own layout.

Every example reads ``Intent: ...`` / ``Program:`` / the code, and so does what
the model is asked: the last user turn ends with ``Program:`` and a newline. A
model without a chat template, sent the whole text as a raw completion
(:attr:`Prompt.completion`), gets the examples after the system prompt and
continues with a program; the next example would begin with ``Intent:``. A chat
model gets each example as a turn of its own (:meth:`Prompt.turns`): the intent
from the user, the program from the assistant in a ```` ```python ```` block, so
that its answer is one block too, which ends where a line starts with ```` ``` ````
(a small base model, shown examples in one user turn, ends its turn at once; shown
bare programs as turns, it cannot end one and runs on). Both ends are the default
stop sequences (:data:`DEFAULT_STOP`); :func:`default_max_tokens` sizes the
token limit from the examples.

A retry is told only the first errors of the rejected reply (one line, not a
bullet list a small model would imitate; shown its own program, a small model
copies it back); a fixer is shown a bounded excerpt of the best attempt too.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

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

FIXER_INSTRUCTION = (
    "You are repairing a lackpy program that was rejected. The intent, the start of the rejected "
    "program and its first errors follow. Keep what was right, fix the errors, and reply with the "
    "whole corrected program only: no explanation, no markdown fences."
)

INTENT_LABEL = "Intent:"
PROGRAM_LABEL = "Program:"
FENCE_OPEN, FENCE_CLOSE = "```python\n", "\n```"  # around a chat example's program
# Where the model's program ends: the next example of the layout would start here (a raw
# completion), or its code block closes (a chat turn).
DEFAULT_STOP: tuple[str, ...] = ("\n" + INTENT_LABEL, FENCE_CLOSE)
# Examples in a prompt. Fewer, closer examples leave a small model less to copy: Gemma 3 270M
# over benchmarks/bench_generation.py's 31 model-only intents wrote correct programs, chat /
# raw, with 2: 13 / 13; 3: 14 / 13; 4: 15 / 12; 5: 11 / 13; 6: 9 / 13.
N_EXAMPLES = 3
EXCERPT_LINES, EXCERPT_CHARS = 8, 400  # the most of a rejected program shown back
FEEDBACK_ERRORS, ERROR_CHARS = 2, 200  # the first errors shown back, each at most this long

_WORD = re.compile(r"[a-z0-9_]+")
# A file name or path in an intent (notes.txt, data/people.csv). It starts only where a path
# can start, so a long run of path characters ("../" * 30000) is scanned once, not once per
# character (quadratic: minutes for an intent of the largest size taken).
FILE_NAME = re.compile(r"(?<![\w./-])[\w./-]*\w\.\w+")
# Words too common to say which examples fit an intent.
_STOPWORDS = frozenset("a an and are as at be by do does for from has have how i in is it its me my of on "
                       "one or return show that the their them there this to what which with".split())


class Interpreter(Protocol):
    """What may replace the generic framing of the system prompt."""

    def system_prompt_hint(self) -> str: ...


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


@dataclass(frozen=True)
class Prompt:
    """What one model call sends: a system prompt, the examples (the closest last) and the
    user turn, as chat turns or as one completion text."""

    system: str
    user: str
    examples: tuple[Example, ...] = ()

    @property
    def completion(self) -> str:
        """The whole prompt as one text for a model without a chat template."""
        return with_examples(self.system, self.examples).rstrip("\n") + "\n\n" + self.user

    def turns(self) -> list[tuple[str, str]]:
        """The conversation after the system prompt, as (role, text): each example as a user
        turn (its program slot) and an assistant turn (its program in a code block), then the
        user turn."""
        turns = []
        for example in self.examples:
            turns += [("user", program_slot(example.intent)),
                      ("assistant", FENCE_OPEN + example.code.strip("\n") + FENCE_CLOSE)]
        return [*turns, ("user", self.user)]


def program_slot(intent: str) -> str:
    """The intent and the empty program slot, in the examples' layout."""
    return f"{INTENT_LABEL} {' '.join(intent.split())}\n{PROGRAM_LABEL}\n"


def format_example(example: Example) -> str:
    """One few-shot example in the layout the model is asked to continue."""
    return program_slot(example.intent) + example.code.strip("\n")


def build_system_prompt(
    namespace_desc: str,
    params_desc: str | None = None,
    intent: str | None = None,
    example_pool: Iterable[Example | Mapping[str, Any]] | None = None,
    n_examples: int = N_EXAMPLES,
    interpreter: Interpreter | None = None,
    *,
    variables_desc: str | None = None,
) -> str:
    """The system prompt of one text: :func:`build_instructions`, then up to ``n_examples``
    examples from ``example_pool``, chosen by the words they share with ``intent``
    (:func:`select_examples`) and written in the layout of :func:`program_slot`, the closest
    last."""
    examples = select_examples(intent, example_pool or [], n_examples) if intent else []
    instructions = build_instructions(namespace_desc, params_desc, interpreter,
                                      variables_desc=variables_desc)
    return with_examples(instructions, reversed(examples))


def with_examples(system: str, examples: Iterable[Example]) -> str:
    """``system`` followed by an ``Examples:`` section of ``examples`` in their order (none: as it is)."""
    shown = [format_example(example) for example in examples]
    if not shown:
        return system
    return system.rstrip("\n") + "\n\nExamples:\n\n" + "\n\n".join(shown) + "\n"


def build_instructions(
    namespace_desc: str,
    params_desc: str | None = None,
    interpreter: Interpreter | None = None,
    *,
    variables_desc: str | None = None,
) -> str:
    """The system prompt without examples: framing, tools, builtins, variables, constraints.

    ``interpreter.system_prompt_hint()``, when present, replaces the generic
    framing. ``variables_desc`` describes the session's variables (see
    :func:`lackpy_kernel.run.describe_variables`).
    """
    hint = getattr(interpreter, "system_prompt_hint", None)
    sections = [hint() if callable(hint) else FRAMING]
    sections.append("Tools:\n" + (namespace_desc.strip() or "(none: use builtins only)"))
    sections.append("Builtins: " + ", ".join(sorted(ALLOWED_BUILTINS)))
    if params_desc:
        sections.append("Variables already set (use them by name):\n" + params_desc.strip())
    if variables_desc:
        sections.append("The notebook's variables (use them by name):\n" + variables_desc.strip())
    sections.append("Rules:\n" + CONSTRAINTS)
    return "\n\n".join(sections) + "\n"


def select_examples(
    intent: str, pool: Iterable[Example | Mapping[str, Any]], n: int
) -> list[Example]:
    """The ``n`` examples whose words best match ``intent`` (ties keep pool order).

    Each word an example shares with ``intent`` counts ``log(1 + N / k)``, where ``k`` of the
    pool's ``N`` examples have it: a word that few examples have ("last") says more about
    which fit than one most have ("line").
    """
    examples = [Example.coerce(item) for item in pool]
    words = [_keywords(f"{example.intent} {' '.join(example.tags)}") for example in examples]
    wanted = _keywords(intent)
    having = Counter(word for found in words for word in found & wanted)
    scored = []
    for order, (example, found) in enumerate(zip(examples, words, strict=True)):
        score = sum(math.log(1 + len(examples) / having[word]) for word in found & wanted)
        if score:
            scored.append((-score, order, example))
    scored.sort(key=lambda entry: entry[:2])
    return [example for _, _, example in scored[:max(n, 0)]]


def _keywords(text: str) -> set[str]:
    """The words of ``text`` that say what it is about, without a plural ``s``; not the words
    of a file name (``notes.txt``, ``src/app.py``): which file an example reads says nothing
    of what it does."""
    text = FILE_NAME.sub(" ", text.lower())
    words = (word for word in _WORD.findall(text) if word not in _STOPWORDS)
    return {word.removesuffix("s") if len(word) > 3 else word for word in words}


def default_max_tokens(examples: Iterable[Example | Mapping[str, Any]]) -> int:
    """A token limit for one program: room for about three times the longest example.

    A token is about three characters of code, so the longest example's
    length in characters is roughly three times its tokens; the result is
    kept between 192 and 1024 (512 without examples).
    """
    longest = max((len(Example.coerce(e).code) for e in examples), default=0)
    return 512 if not longest else max(192, min(1024, longest))


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


def excerpt(program: str) -> str:
    """The first lines of ``program``, at most ``EXCERPT_LINES`` lines and ``EXCERPT_CHARS`` characters."""
    text = program.strip("\n")
    shown = "\n".join(text.splitlines()[:EXCERPT_LINES])[:EXCERPT_CHARS]
    return shown if shown == text else shown + "\n# ... (cut)"


def first_errors(errors: Sequence[str]) -> str:
    """The first ``FEEDBACK_ERRORS`` errors on one line, each cut to ``ERROR_CHARS`` characters."""
    shown = [" ".join(error.split())[:ERROR_CHARS] for error in errors[:FEEDBACK_ERRORS]]
    more = len(errors) - len(shown)
    return "; ".join(shown) + (f" (and {more} more)" if more > 0 else "")


def feedback_message(intent: str, errors: Sequence[str], program: str | None = None, *,
                     show_program: bool = True) -> str:
    """The user turn after a rejected reply: the intent, what was wrong, the program slot.

    With ``show_program`` an excerpt of ``program`` is shown (a fixer repairs it); without, only
    its first errors (a retry asks again: a small model shown its program copies it back).
    """
    parts = [f"{INTENT_LABEL} {' '.join(intent.split())}"]
    if not (program and program.strip()):
        parts.append("The previous reply was not a program.")
    elif show_program:
        parts.append(f"This program was rejected:\n{excerpt(program)}")
    else:
        parts.append("The previous program was rejected.")
    parts.append(f"Errors: {first_errors(errors)}")
    parts.append(f"Write the whole corrected program.\n{PROGRAM_LABEL}\n")
    return "\n".join(parts)


def prompt_parts(intent: str, namespace_desc: str, config: Mapping[str, Any] | None
                 ) -> tuple[str, tuple[Example, ...]]:
    """The system prompt and the examples, the closest last.

    The system prompt is ``config["system_prompt"]`` when given, else
    :func:`build_instructions` from the config's context; the examples are
    ``config["examples"]`` when given, else (without a given system prompt) up to
    :data:`N_EXAMPLES` of ``config["example_pool"]`` that fit ``intent``.
    """
    config = config or {}
    given = config.get("system_prompt")
    if "examples" in config:
        examples = tuple(Example.coerce(example) for example in config["examples"])
    else:
        chosen = [] if given else select_examples(intent, config.get("example_pool") or [], N_EXAMPLES)
        examples = tuple(reversed(chosen))
    if given:
        return str(given), examples
    return build_instructions(namespace_desc, config.get("params_desc"),
                              variables_desc=config.get("variables_desc")), examples


def system_prompt_for(intent: str, namespace_desc: str, config: Mapping[str, Any] | None) -> str:
    """The system prompt of one text (:func:`prompt_parts`, the examples after the rest)."""
    return with_examples(*prompt_parts(intent, namespace_desc, config))


def user_message_for(
    intent: str, config: Mapping[str, Any] | None, error_feedback: Sequence[str] | None
) -> str:
    """The program slot for ``intent``, or on a retry what was wrong with the previous program.

    A retry shows the first errors only; standing in for a fixer (``config["fixer"]``), an
    excerpt of the program too.
    """
    if not error_feedback:
        return program_slot(intent)
    config = config or {}
    return feedback_message(intent, error_feedback, config.get("previous_program"),
                            show_program=bool(config.get("fixer")))


def generate_prompt(
    intent: str, namespace_desc: str, config: Mapping[str, Any] | None,
    error_feedback: Sequence[str] | None = None,
) -> Prompt:
    """The prompt of a first try, or of a retry when ``error_feedback`` is given."""
    system, examples = prompt_parts(intent, namespace_desc, config)
    return Prompt(system, user_message_for(intent, config, error_feedback), examples)


def fixer_prompt(
    intent: str, program: str | None, errors: Sequence[str], namespace_desc: str,
    config: Mapping[str, Any] | None,
) -> Prompt:
    """The prompt of a fresh "fixer" conversation about a rejected ``program``: the
    instruction to repair it opens the user turn, after the examples."""
    system, examples = prompt_parts(intent, namespace_desc, config)
    return Prompt(system, f"{FIXER_INSTRUCTION}\n\n{feedback_message(intent, errors, program)}", examples)
