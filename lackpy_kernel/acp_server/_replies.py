"""What the agent says: a prompt's intent, why a prompt or a program is refused, a
program as a tool call's content, and a run's result as the agent's message. Clients render
the agent's text as Markdown, so what a program or a tier gave (a result, a traceback, a kit,
each tier's answer) goes in a code block (``fenced``), shown as the notebook shows it."""

from __future__ import annotations

import re

from acp import text_block, tool_content
from acp.schema import (
    AudioContentBlock,
    ContentToolCallContent,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
)

from lackpy_kernel.config import AUTO_RUN_LEVELS
from lackpy_kernel.errors import GenerationError, error_text
from lackpy_kernel.infer import next_step
from lackpy_kernel.kit import ResolvedKit
from lackpy_kernel.kit.builtin_specs import PROVIDER_NAME as STAGED
from lackpy_kernel.notebook.bundles import output_text, program_error
from lackpy_kernel.run import ExecutionResult
from lackpy_kernel.run.kernel_side import asks_before_calls
from lackpy_kernel.session import LackpySession

ContentBlock = (TextContentBlock | ImageContentBlock | AudioContentBlock | ResourceContentBlock
                | EmbeddedResourceContentBlock)

MAX_PROMPT_CHARS = 100_000  # a longer prompt is refused before any tier sees it
MAX_PROMPT_BLOCKS = 1_000  # a prompt of more content blocks is refused unread
READ = AUTO_RUN_LEVELS["read"]  # the highest tool grade a program run from the chat may call
WRITES_NOT_RUN = ("not run: it calls {tools}, whose changes cannot be shown as a diff before "
                  "they happen, so no one could approve them here. Run it yourself with "
                  "`lackpy run` if you mean it.")
STOPPED = "stopped: the prompt was cancelled; nothing it started is still running."


def intent_of(prompt: list[ContentBlock]) -> str:
    """The prompt's text blocks, joined; "" when it has none."""
    texts = [block.text for block in prompt[:MAX_PROMPT_BLOCKS]
             if isinstance(block, TextContentBlock)]
    return "\n".join(texts).strip()


def refusal(prompt: list[ContentBlock], intent: str) -> str:
    """Why ``prompt``, whose text is ``intent``, gets no program ("" when it may have one)."""
    if len(prompt) > MAX_PROMPT_BLOCKS:
        return (f"the prompt has {len(prompt)} parts; lackpy takes at most "
                f"{MAX_PROMPT_BLOCKS}. Say what the program should do in one message.")
    if not intent:
        return ("lackpy reads text only: write what the program should do in words (images "
                "and other blocks are not read).")
    if len(intent) > MAX_PROMPT_CHARS:
        return (f"the prompt is {len(intent)} characters long; lackpy takes at most "
                f"{MAX_PROMPT_CHARS}. Say what the program should do in fewer words.")
    return ""


def shown(program: str) -> ContentToolCallContent:
    """``program`` as a tool call's content: a Markdown code block, so the client shows it
    as code."""
    return tool_content(text_block(fenced(program, "python")))


def fenced(text: str, language: str = "text") -> str:
    """``text`` as a Markdown code block, which a chat shows as it is (no bold ``__init__``, no
    lines run together, no bullets): fenced by more backticks than any run of them inside."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text.removesuffix(chr(10))}\n{fence}"


def inline(text: str) -> str:
    """``text`` as Markdown inline code, shown as it is (a path, a pattern)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    padded = f" {text} " if text.startswith("`") or text.endswith("`") else text
    return f"{ticks}{padded}{ticks}"


def generation_failure(error: GenerationError) -> str:
    """No tier wrote a program: what each answered, as a code block (their reasons quote
    programs and paths), then what to do, in the chat's commands."""
    if not error.failures:
        return fenced(error_text(error))
    tiers = [f"no tier could write a program for {error.intent!r}:",
             *(f"  - {failure}" for failure in error.failures)]
    return f"{fenced(chr(10).join(tiers))}\n\n{next_step(error, 'chat')}"


def with_result(program: str, result: str) -> str:
    """``program`` and, below it, ``result`` (when there is one): a tool call's raw output,
    for the clients that show that rather than its content (jupyter-ai)."""
    return f"{program}\n\n→ {result}" if result else program


def held(session: LackpySession, program: str) -> str:
    """Why ``program`` is not run from the chat ("" when it may run): it calls a tool whose
    changes no one can approve (one that writes unstaged and is not asked for at the call),
    or one beyond the config's ``[delegate] auto_run``. Where ``[sandbox] approve =
    "write"``, the file tools' writes are staged and asked for before they land, and each
    call of a tool graded write that runs in the kernel (an MCP server's) is asked for
    before it runs, so they do not hold a program."""
    resolved = session.resolved_kit()
    calls = session.validate(program).calls
    writes = {name for name in calls if name in resolved.tools
              and resolved.tools[name].grade_w > READ}
    unstaged = sorted(writes & unstaged_writers(resolved,
                                                asked=session.service.runs.asks_writes))
    if unstaged:
        return WRITES_NOT_RUN.format(tools=", ".join(unstaged))
    check = session.service.run_check(program, resolved)
    asked = writes if session.service.runs.asks_writes and AUTO_RUN_LEVELS[check.ceiling] >= 0 \
        else set()
    if check.allowed or set(check.past) <= asked:
        return ""
    return f"not run: {check.reason}."


def unstaged_writers(resolved: ResolvedKit, *, asked: bool = False) -> set[str]:
    """The kit's tools (aliases) that change things without staging them (an MCP server's
    that writes): no diff can be shown before they act. With ``asked`` (a program's calls
    are asked for), less those whose each call is asked for before it runs."""
    return {alias for alias, spec in resolved.tools.items()
            if spec.grade_w > READ and spec.provider != STAGED
            and not (asked and asks_before_calls(spec))}


def reply(result: ExecutionResult, program: str) -> str:
    """A run's answer as the notebook renders it: what it printed, its notes, then its
    output (bounded) or its error."""
    parts = [result.stdout.rstrip("\n")] if result.stdout else []
    parts += [f"lackpy: {note}" for note in result.notes]
    if result.success:
        parts.append(output_text(result.output) if result.output is not None else "(no output)")
    else:
        parts.append("\n".join(program_error(result, program).traceback))
    return "\n".join(parts)
