"""One declaration per magic: its name, options, usage line and whether it is a cell magic.

The kernel and the IPython extension declare each magic once, with :func:`magic` on
its handler; parsing its line, ``%lsmagic`` and ``%name?`` help all read that
declaration. Options the two surfaces share (``%delegate``'s) are declared here, once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from lackpy_kernel.errors import UsageError
from lackpy_kernel.notebook.syntax import Kind, MagicLine, parse_magic_line, shell_words, unquote

F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "AGENT_OPTIONS",
    "AGENT_SUMMARY",
    "DELEGATE_OPTIONS",
    "DELEGATE_SUMMARY",
    "KIT",
    "PARAM",
    "PLAN_OPTIONS",
    "PLAN_REST",
    "PLAN_SUMMARY",
    "REPLAN_OPTIONS",
    "REPLAN_SUMMARY",
    "RUN",
    "YES",
    "STEP_OPTIONS",
    "STEP_SUMMARY",
    "Magic",
    "Option",
    "PlanCommand",
    "declared_magics",
    "magic",
    "plan_command",
    "step_line",
]


@dataclass(frozen=True)
class Option:
    """A magic's option: ``--name``, whether it is a flag, takes a value or repeats, and help."""

    flag: str
    kind: Kind
    help: str
    metavar: str = "VALUE"

    @property
    def usage(self) -> str:
        """How the option reads in a usage line: ``[--run]``, ``[--kit K]``, ``[--param N=V ...]``."""
        if self.kind == "flag":
            return f"[{self.flag}]"
        more = " ..." if self.kind == "multi" else ""
        return f"[{self.flag} {self.metavar}{more}]"


@dataclass(frozen=True)
class Magic:
    """A magic's declaration. ``rest`` names what follows the options (None: nothing)."""

    name: str
    summary: str  # one line, as %lsmagic lists it
    options: tuple[Option, ...] = ()
    rest: str | None = None
    cell: bool = False

    @property
    def usage(self) -> str:
        """The usage line, e.g. ``%delegate [--kit K] [--run] INTENT``."""
        words = [("%%" if self.cell else "%") + self.name, *(o.usage for o in self.options)]
        if self.rest:
            words.append(self.rest)
        return " ".join(words)

    def help(self) -> str:
        """The usage line, the summary and one line per option."""
        lines = [self.usage, "", self.summary]
        if self.options:
            shown = [o.flag if o.kind == "flag" else f"{o.flag} {o.metavar}" for o in self.options]
            width = max(map(len, shown))
            lines += ["", "options:"]
            lines += [f"  {text.ljust(width)}  {o.help}" for text, o in zip(shown, self.options,
                                                                          strict=True)]
        return "\n".join(lines)

    def parse(self, line: str) -> MagicLine:
        """The options given on ``line`` and the text after them; raises UsageError."""
        return parse_magic_line(line, {o.flag: o.kind for o in self.options}, self.usage)


def magic(name: str, summary: str, *, options: tuple[Option, ...] = (), rest: str | None = None,
          cell: bool = False) -> Callable[[F], F]:
    """Declare the decorated method as the handler of magic ``name``."""
    declared = Magic(name, summary, tuple(options), rest, cell)

    def mark(handler: F) -> F:
        handler.lackpy_magic = declared  # type: ignore[attr-defined]
        handler.__doc__ = declared.help()  # what %name? shows in IPython
        return handler

    return mark


def declared_magics(owner: object) -> dict[str, tuple[Magic, Callable[..., Any]]]:
    """Name -> (declaration, handler) for each method of ``owner`` (an object or a class)
    declared with :func:`magic`, in the order the class declares them, then its bases'."""
    found: dict[str, tuple[Magic, Callable[..., Any]]] = {}
    owner_class = owner if isinstance(owner, type) else type(owner)
    for cls in owner_class.__mro__:
        for attribute, value in vars(cls).items():
            declared = getattr(value, "lackpy_magic", None)
            if isinstance(declared, Magic) and declared.name not in found:
                found[declared.name] = (declared, getattr(owner, attribute))
    return found


# -- what the kernel's and the extension's %delegate share ------------------------------

KIT = Option("--kit", "value", "the kit the program may use: a kit name or tool,tool,...", "K")
PARAM = Option("--param", "multi", "a named input the program sees; Python literals where "
               "they parse, else text (quote values with spaces)", "NAME=VALUE")
RUN = Option("--run", "flag", "run the program too, when it only does what [delegate] auto_run "
             "allows unseen (by default: reads); otherwise insert it and say why")
YES = Option("--yes", "flag", "with --run: run it whatever it does (this call only)")
DELEGATE_OPTIONS = (KIT, PARAM, RUN, YES)
DELEGATE_SUMMARY = "write a program for INTENT and insert it as the next cell"


# -- what the kernel's and the extension's %%step and %plan share ----------------------

WRITES = Option("--writes", "value", "save the step's output under KEY in the plan's Store", "KEY")
PARALLEL = Option("--parallel", "flag", "run with the --parallel steps next to it, as one band")
TASK = Option("--task", "value", "the program's task: from_prev (the default), from_start, "
              "from_step(NAME), from_parallel_all(NAME), or a literal", "REF")
CONTEXT = Option("--context", "multi", "the program's context, as --task; several are joined "
                 "as text", "REF")
STEP_OPTIONS = (WRITES, PARALLEL, TASK, CONTEXT, KIT)
STEP_SUMMARY = ("declare the cell as step NAME of the plan: a lackpy program that sees task and "
                "context; running the cell again replaces the step")

KEY = Option("--key", "value", "checkpoint the run under K in .lackpy/plans.sqlite", "K")
CONCURRENCY = Option("--concurrency", "value", "run-many: at most N runs at once", "N")
TEMPORAL = Option("--temporal", "value", "run, resume or show the run on the Temporal server at "
                  "ADDRESS (HOST:PORT), where `lackpy worker`s run the steps; the notebook stays "
                  "free while it runs", "ADDRESS")
TASK_QUEUE = Option("--task-queue", "value", "with --temporal: the task queue the workers serve "
                    "(default: lackpy)", "Q")
APPROVE = Option("--approve", "flag", "resume: let the file change the run paused on land "
                 "(exactly that change; another one pauses again)")
PLAN_OPTIONS = (KEY, CONCURRENCY, TEMPORAL, TASK_QUEUE, APPROVE)
REMOTE_ACTIONS = ("run", "resume", "status")
PLAN_SUMMARY = ("show the plan the %%step cells declared; run it, fan it out, resume, restart, "
                "save or load it; add an approval gate, drop a step")
PLAN_ACTIONS = {
    "run": "TASK", "run-many": "VARIABLE", "resume": "K", "restart": "K", "status": "[K]",
    "save": "NAME", "load": "NAME", "gate": "NAME [PROMPT]", "drop": "NAME", "clear": "",
}
PLAN_REST = "[" + " | ".join(f"{a} {w}".strip() for a, w in PLAN_ACTIONS.items()) + "]"


# -- what the kernel's and the extension's %agent and %replan share --------------------

MODEL = Option("--model", "value", "the model; default: [agent] model in .lackpy/config.toml", "M")
PROVIDER = Option("--provider", "value", "a plugin (anthropic, ollama, openai, replay) or a "
                  "provider configured in .lackpy/config.toml; default: [agent] provider, "
                  "else routed by the model's name", "P")
ALLOW_WRITES = Option("--allow-writes", "flag", "let the model call write tools (by default "
                      "it may only read, as [delegate] auto_run says)")
MAX_TURNS = Option("--max-turns", "value", "at most N model turns (default 20)", "N")
AGENT_OPTIONS = (KIT, MAX_TURNS, MODEL, PROVIDER, ALLOW_WRITES)
AGENT_SUMMARY = ("let a model call the kit's tools, turn by turn, until it answers INTENT; each "
                 "turn shows as it happens, and the run's calls become the next cell as one "
                 "program (the ratchet)")
MAX_ROUNDS = Option("--max-rounds", "value", "at most N rounds (default 20)", "N")
RESUME = Option("--resume", "flag", "continue the run checkpointed under --key")
REPLAN_OPTIONS = (KIT, MAX_ROUNDS, KEY, RESUME, MODEL, PROVIDER, ALLOW_WRITES)
REPLAN_SUMMARY = ("a planner model decides each round's tool calls for INTENT, having seen the "
                  "rounds before; with --key every round is checkpointed, and --resume goes on")


@dataclass
class PlanCommand:
    """What a ``%plan`` line asks: an action (``show`` for none), its words, and the options
    (which may come anywhere on the line)."""

    action: str
    words: list[str] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def word(self) -> str:
        """The action's first word ('' when there is none)."""
        return self.words[0] if self.words else ""


def plan_command(declared: Magic, line: MagicLine) -> PlanCommand:
    """Read a parsed ``%plan`` line; raises UsageError for an unknown action or option, or a
    missing or extra word."""
    words, options = _words_and_options(declared, line)
    if not words:
        return PlanCommand("show", options=options)
    action, *rest = words
    if action not in PLAN_ACTIONS:
        raise UsageError(f"unknown %plan action {action!r}; usage: {declared.usage}")
    wanted = PLAN_ACTIONS[action]
    if wanted and not wanted.startswith("[") and not rest:
        raise UsageError(f"%plan {action} needs {wanted.split()[0]}; usage: {declared.usage}")
    if action != "gate" and len(rest) > (1 if wanted else 0):
        raise UsageError(f"%plan {action} takes {wanted or 'no words'}, not {' '.join(rest)!r}; "
                         f"quote a value that holds spaces")
    if "--temporal" in options and action not in REMOTE_ACTIONS:
        raise UsageError(f"--temporal goes with %plan {', '.join(REMOTE_ACTIONS)}, not %plan "
                         f"{action}")
    if options.get("--approve") and action != "resume":
        raise UsageError(f"--approve goes with %plan resume K, not %plan {action}")
    if "--task-queue" in options and "--temporal" not in options:
        raise UsageError("--task-queue goes with --temporal ADDRESS")
    return PlanCommand(action, rest, options)


def step_line(declared: Magic, line: MagicLine) -> tuple[str, dict[str, Any]]:
    """The NAME and options of a ``%%step`` line (options may come before or after NAME)."""
    words, options = _words_and_options(declared, line)
    if len(words) != 1 or not words[0].isidentifier():
        raise UsageError(f"name the step with one name such as fetch_notes, not "
                         f"{' '.join(words)!r}; usage: {declared.usage}")
    return words[0], options


def _words_and_options(declared: Magic, line: MagicLine) -> tuple[list[str], dict[str, Any]]:
    """The words of ``line.rest`` (unquoted) and every option, wherever it stands."""
    kinds = {option.flag: option.kind for option in declared.options}
    options, words = dict(line.options), []
    tokens = iter(shell_words(line.rest))
    for token in tokens:
        name, eq, inline = token.partition("=")
        if name not in kinds:
            if token.startswith("--"):
                raise UsageError(f"unknown option {name}; usage: {declared.usage}")
            words.append(unquote(token))
        elif kinds[name] == "flag":
            options[name] = True
        else:
            value = inline if eq else next(tokens, None)
            if value is None:
                raise UsageError(f"{name} needs a value; usage: {declared.usage}")
            if kinds[name] == "multi":
                options.setdefault(name, []).append(unquote(value))
            else:
                options[name] = unquote(value)
    return words, options
