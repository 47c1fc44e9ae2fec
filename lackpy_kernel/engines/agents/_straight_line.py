"""The ratchet from agent runs: a run's tool calls as one straight-line lackpy program.

An agent's trace holds each tool call with the arguments the model sent, exactly; the
program makes the same successful calls, in the same order, with no model in between.
``create`` can save it as a template, so the same intent later costs no model call.
"""

from __future__ import annotations

import ast
import keyword
import math
from collections.abc import Iterable, Sequence
from typing import Any

from lackpy_kernel.errors import UsageError
from lackpy_kernel.infer import GenerationResult
from lackpy_kernel.lang import validate
from lackpy_kernel.run import TraceEntry, no_rebinding, summarize
from lackpy_kernel.service import LackpyService

from ..plans import Envelope
from ._tools import LACKPY_TOOL

__all__ = ["remember_program", "trace_to_program"]

AGENT_TIER = "agent"
MAX_LITERAL_DEPTH = 100
MAX_INT_BITS = 14_000  # about the 4,300 digits Python will turn into text


def trace_to_program(trace: Sequence[TraceEntry] | Envelope, *,
                     tools: Iterable[str] | None = None) -> str:
    """A validated lackpy program making the successful calls of ``trace`` (an agent's
    Envelope or its ``trace``) in order: ``step_N = tool(arg=value, ...)`` each, a ``lackpy``
    call's program inlined, and the results as the last expression.

    ``tools`` are the names the program may call (default: those in the trace). Raises
    UsageError when there is no successful call, a call is not to one of ``tools`` (a Python
    callable, an agent), or an inlined program's names clash.
    """
    entries = trace.trace if isinstance(trace, Envelope) else list(trace)
    calls = [entry for entry in entries if entry.success]
    if not calls:
        raise UsageError("the run made no successful tool call, so there is no program to write")
    allowed = set(tools) if tools is not None else {e.tool for e in calls if e.tool != LACKPY_TOOL}
    lines: list[str] = []
    results: list[str] = []
    taken: set[str] = set()
    for number, entry in enumerate(calls, 1):
        name = f"step_{number}"
        if entry.tool == LACKPY_TOOL:
            lines += _inlined(str(entry.args.get("program", "")), name, taken, allowed)
        elif not _is_name(entry.tool) or not all(_is_name(key) for key in entry.args):
            raise UsageError(f"the run's call of {summarize(entry.tool)} has a tool or argument "
                             f"name that is not a Python name, so no program can make it")
        elif entry.tool not in allowed:
            raise UsageError(f"the run called {entry.tool!r}, which is not a kit tool "
                             f"({', '.join(sorted(allowed)) or 'none'}), so a lackpy program "
                             f"cannot make that call")
        else:
            arguments = ", ".join(f"{key}={_literal(value)}" for key, value in entry.args.items())
            lines.append(f"{name} = {entry.tool}({arguments})")
        results.append(name)
        taken.add(name)
    lines.append(results[0] if len(results) == 1 else f"[{', '.join(results)}]")
    program = "\n".join(lines) + "\n"
    check = validate(program, allowed, [no_rebinding(allowed)])
    if not check.valid:
        listed = "; ".join(str(issue) for issue in check.issues)
        raise UsageError(f"the run's calls do not make a valid lackpy program: {listed}")
    return program


def remember_program(service: LackpyService, intent: str, program: str, tools: Iterable[str],
                     ms: float = 0.0) -> None:
    """Log that ``intent`` produced ``program`` (an agent run's straight-line program), so
    ``create`` without a pattern finds the intent, and record it for replay when the config
    records."""
    service.ratchet.generated(intent, GenerationResult(program, AGENT_TIER, ms), tools)


def _inlined(program: str, name: str, taken: set[str], allowed: set[str]) -> list[str]:
    """``program``'s lines with its last expression assigned to ``name``."""
    check = validate(program, allowed)
    if not check.valid or check.tree is None or not check.tree.body:
        raise UsageError("a lackpy call of the run does not validate against the kit now")
    clash = sorted(set(check.variables) & (taken | {name}))
    if clash:
        raise UsageError(f"a lackpy call of the run assigns {', '.join(clash)}, a name the "
                         f"program already uses; write the program by hand")
    *body, last = check.tree.body
    lines = [ast.unparse(statement) for statement in body]
    if isinstance(last, ast.Expr):
        lines.append(f"{name} = {ast.unparse(last.value)}")
    else:
        lines += [ast.unparse(last), f"{name} = None"]
    return lines


def _is_name(text: Any) -> bool:
    return isinstance(text, str) and text.isidentifier() and not keyword.iskeyword(text)


def _literal(value: Any, depth: int = 0) -> str:
    """``value`` as lackpy source: exact plain types only (str, int, float, bool, None, and
    lists, tuples, dicts and sets of them), written by their type, never by their own
    ``repr``; a string holding ``__`` (which lackpy forbids in a literal) as a sum of literals
    that do not. UsageError for anything else (a ``str`` subclass, an object), a number that
    has no literal (NaN, infinity, an int too long to write) or nesting past
    ``MAX_LITERAL_DEPTH``."""
    kind = type(value)
    if depth > MAX_LITERAL_DEPTH:
        raise UsageError(f"the run's calls pass a value nested more than {MAX_LITERAL_DEPTH} "
                         "deep; write the program by hand")
    if kind is str:
        return _string(value)
    if value is None or kind is bool:
        return repr(value)
    if kind is int or kind is float:
        return _number(value)
    if kind is dict:
        return "{" + ", ".join(f"{_literal(key, depth + 1)}: {_literal(item, depth + 1)}"
                               for key, item in value.items()) + "}"
    if kind in (list, tuple, set):
        if kind is set and not value:
            return "set()"
        items = [_literal(item, depth + 1) for item in value]
        if kind is tuple:
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        return ("[{}]" if kind is list else "{{{}}}").format(", ".join(items))
    raise UsageError(f"the run's calls pass a {kind.__name__}, which is not plain data a "
                     "program can write (str, int, float, bool, None, and lists, tuples, "
                     "dicts and sets of them); write the program by hand")


def _number(value: int | float) -> str:
    if type(value) is float and not math.isfinite(value):
        raise UsageError(f"the run's calls pass {value!r}, a number a program cannot write; "
                         f"write the program by hand")
    if type(value) is int and value.bit_length() > MAX_INT_BITS:
        raise UsageError("the run's calls pass an int too long to write; write the program "
                         "by hand")
    return float.__repr__(value) if type(value) is float else int.__repr__(value)


def _string(value: str) -> str:
    """A str as a literal; one holding ``__`` as a sum of literals that do not."""
    if "__" not in value:
        return str.__repr__(value)
    parts, current = [], ""
    for char in value:
        if char == "_" and current.endswith("_"):
            parts.append(current)
            current = ""
        current += char
    parts.append(current)
    return "(" + " + ".join(str.__repr__(part) for part in parts) + ")"
