"""Cleanup of a model's reply: the free first step of the correction chain.

:func:`clean_reply` turns a reply into the best program text it holds,
without asking the model again: it drops code fences and preambles, labels
(``Program:``), lines echoed from the prompt and whatever follows the
program (an imitated next ``Intent:``); rewrites what models commonly get
wrong in text that parses (:func:`deterministic_cleanup`); and, for text that
does not parse, keeps the longest start of it (or of a later block) that
validates. :func:`diagnose` says "the reply is not a program" or "was cut
off" where a syntax error deep in prose would only mislead.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Set
from dataclasses import dataclass, field

from .prompt import INTENT_LABEL
from .sanitize import sanitize_output

Check = Callable[[str], list[str]]  # a program's validation errors ([] when valid)

MAX_SALVAGE_LINES = 80  # longer replies are cut to this many lines before a prefix is searched
_LABEL = re.compile(
    r"^\s*(?:(?:the |corrected |fixed |final )?(?:program|code|answer|solution|response|output|"
    r"lackpy|python))\s*:\s*(?P<rest>.*)$", re.IGNORECASE)
_CUT_OFF = ("unterminated", "was never closed", "unexpected eof", "expected an indented block",
            "eof while", "incomplete input")


@dataclass
class Cleaned:
    """The best program text a reply holds, its validation errors, and what cleanup did to it."""

    program: str
    errors: list[str]
    did: list[str] = field(default_factory=list)
    is_program: bool = True  # False for prose, an empty reply, or text that is not code

    @property
    def valid(self) -> bool:
        return not self.errors


def clean_reply(raw: str | None, check: Check, allowed_names: Set[str], *, prompt: str = "") -> Cleaned:
    """The best program in ``raw``, with ``check``'s errors for it and a note per change made.

    ``prompt`` is what the model was sent: reply lines that repeat one of its
    lines that is not code are dropped. The errors of a text that still does
    not parse are replaced by :func:`diagnose`'s.
    """
    did: list[str] = []
    text = sanitize_output(raw)
    if raw is not None and text != raw.strip("\n") and text:
        did.append("removed a code fence or preamble")
    text = _drop_labels_and_run_on(text, did)
    text = _drop_echoed_lines(text, prompt, did)
    if _parses(text):
        rewritten = deterministic_cleanup(text, allowed_names)
        if rewritten is not None:
            text = rewritten
            did.append("rewrote imports, open(), print() or a __main__ guard")
        return Cleaned(text, _errors(text, check), did)
    salvaged = _longest_valid_part(text, check)
    if salvaged is not None:
        part, first, last = salvaged
        total = len(text.splitlines())
        did.append(f"kept lines {first}-{last} of {total}, the longest part that is a valid program")
        return Cleaned(part, [], did)
    is_program = bool(text.strip()) and _starts_like_code(text)
    return Cleaned(text, diagnose(text, _errors(text, check)), did, is_program)


def _errors(text: str, check: Check) -> list[str]:
    return check(text) if text.strip() else ["the reply was empty"]


def _drop_labels_and_run_on(text: str, did: list[str]) -> str:
    kept: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith(INTENT_LABEL):
            if any(k.strip() for k in kept):
                did.append(f"dropped the text after the program (from line {number}, an imitated "
                           f"{INTENT_LABEL!r})")
                break
            did.append(f"dropped an echoed {INTENT_LABEL!r} line")
            continue
        label = _LABEL.match(line)
        if label:
            did.append(f"stripped the label {line.split(':')[0].strip()!r}")
            rest = label.group("rest")
            if rest.strip():
                kept.append(rest)
            continue
        kept.append(line)
    return "\n".join(kept).strip("\n")


def _drop_echoed_lines(text: str, prompt: str, did: list[str]) -> str:
    if not prompt:
        return text
    echoed = {line.strip() for line in prompt.splitlines() if line.strip() and not _parses(line.strip())}
    lines = text.splitlines()
    kept = [line for line in lines if line.strip() not in echoed]
    if len(kept) < len(lines):
        did.append(f"dropped {len(lines) - len(kept)} line(s) echoed from the prompt")
    return "\n".join(kept).strip("\n")


def _longest_valid_part(text: str, check: Check) -> tuple[str, int, int] | None:
    """The longest valid prefix of the first block (after a blank line) that has one; 1-based lines."""
    lines = text.splitlines()[:MAX_SALVAGE_LINES]
    starts = [i for i, line in enumerate(lines) if line.strip() and (i == 0 or not lines[i - 1].strip())]
    for start in starts:
        if lines[start].startswith((" ", "\t")):
            continue
        for end in range(len(lines), start, -1):
            part = "\n".join(lines[start:end]).strip("\n")
            if part.strip() and _parses(part) and not check(part):
                return part, start + 1, end
    return None


def copies_prompt(reply: str, prompt: str) -> bool:
    """Whether at least half of the reply's lines (and one at least) are lines of ``prompt``."""
    lines = [line.strip() for line in (reply or "").splitlines() if line.strip()]
    prompt_lines = {line.strip() for line in prompt.splitlines()}
    echoed = sum(line in prompt_lines for line in lines)
    return bool(lines) and echoed * 2 >= len(lines)


def diagnose(text: str, errors: list[str]) -> list[str]:
    """``errors``, or one plain reason when ``text`` is prose or was cut off mid-program."""
    if not text.strip() or _parses(text):
        return errors
    if not _starts_like_code(text):
        first = next(line.strip() for line in text.splitlines() if line.strip())
        return [f"the reply is not a program: it begins with prose ({first[:60]!r})"]
    problem = _syntax_error(text)
    lines = text.rstrip().splitlines()
    if problem is not None and (problem.lineno or 0) >= len(lines) - 1 and any(
            marker in (problem.msg or "").lower() for marker in _CUT_OFF):
        return [f"the reply was cut off at line {len(lines)} ({problem.msg}); it may have run out of "
                "tokens: raise max_tokens (num_predict for Ollama)"]
    return errors


def has_code(program: str) -> bool:
    """Whether ``program`` parses to at least one statement (comments alone are not a program)."""
    try:
        return bool(ast.parse(program).body)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def _parses(text: str) -> bool:
    return _syntax_error(text) is None


def _syntax_error(text: str) -> SyntaxError | None:
    try:
        ast.parse(text)
    except SyntaxError as exc:
        return exc
    except (ValueError, RecursionError, MemoryError) as exc:
        return SyntaxError(str(exc))
    return None


def _starts_like_code(text: str) -> bool:
    """Whether the first line reads as code: it parses (alone or as a block's head) or has code's marks.

    A line with a bracket or an ``=`` is broken code, not prose: its syntax error is worth showing.
    """
    first = next((line for line in text.splitlines() if line.strip()), "").strip()
    return _parses(first) or _parses(first + "\n    pass") or any(mark in first for mark in "()[]=")


def deterministic_cleanup(program: str, allowed_names: Set[str]) -> str | None:
    """Fix what models commonly get wrong, or None when nothing could be changed.

    Drops imports and a trailing ``if __name__ == '__main__':`` guard (keeping
    its body), rewrites ``open(p).read()`` and ``Path(p).read_text()`` to
    ``read_file(p)`` when the kit has ``read_file``, and unwraps
    ``print(x)`` on the last line into the expression ``x``.
    """
    text = sanitize_output(program)
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    before = ast.dump(tree)
    tree.body = _clean_statements(tree.body)
    tree = _ReadRewriter(allowed_names).visit(tree)
    if tree.body and _is_print_call(tree.body[-1]):
        call = tree.body[-1].value
        tree.body[-1] = ast.Expr(call.args[0])
    if ast.dump(tree) == before:
        return None
    ast.fix_missing_locations(tree)
    return ast.unparse(tree)


def _clean_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    kept: list[ast.stmt] = []
    for statement in body:
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            continue
        if isinstance(statement, ast.If) and _is_main_guard(statement):
            kept.extend(_clean_statements(statement.body))
            continue
        kept.append(statement)
    return kept


def _is_main_guard(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.If)
        and isinstance(statement.test, ast.Compare)
        and isinstance(statement.test.left, ast.Name)
        and statement.test.left.id == "__name__"
    )


def _is_print_call(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Call)
        and isinstance(statement.value.func, ast.Name)
        and statement.value.func.id == "print"
        and len(statement.value.args) == 1
        and not statement.value.keywords
    )


class _ReadRewriter(ast.NodeTransformer):
    """``open(p).read()`` / ``Path(p).read_text()`` -> ``read_file(p)``."""

    def __init__(self, allowed_names: Set[str]) -> None:
        self.enabled = "read_file" in allowed_names

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if not self.enabled or not isinstance(node.func, ast.Attribute) or node.args:
            return node
        inner = node.func.value
        if (
            node.func.attr in ("read", "read_text")
            and isinstance(inner, ast.Call)
            and isinstance(inner.func, ast.Name)
            and inner.func.id in ("open", "Path")
            and len(inner.args) >= 1
        ):
            call = ast.Call(ast.Name("read_file", ast.Load()), [inner.args[0]], [])
            return ast.copy_location(call, node)
        return node
