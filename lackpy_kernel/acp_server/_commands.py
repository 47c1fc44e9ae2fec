"""The chat's slash commands: ``/create NAME [PATTERN]`` saves the last program that ran
well as a template (the ratchet, as ``%%create`` saves a cell), ``/kit [KIT]`` shows or
sets the session's kit (as ``%kit``)."""

from __future__ import annotations

import re
from pathlib import Path

from acp.schema import AvailableCommand, AvailableCommandInput, UnstructuredCommandInput

from lackpy_kernel.errors import LackpyError, error_text
from lackpy_kernel.infer import GenerationResult
from lackpy_kernel.notebook.core import tool_sources
from lackpy_kernel.session import LackpySession

from ._replies import fenced, inline
from ._store import SessionRecord

COMMANDS = {
    "create": ("save the last program that ran well as a template, so the same request is "
               "answered with no model call (the ratchet)", "NAME [pattern]"),
    "kit": ("show the session's kit, or set it (a kit name, or tool,tool,...)",
            "[NAME | tool,tool,...]"),
}
_COMMAND = re.compile(r"/([a-z]+)(?:\s+(.*))?", re.S)


def available_commands() -> list[AvailableCommand]:
    """The commands as ``available_commands_update`` advertises them."""
    return [AvailableCommand(name=name, description=text, input=AvailableCommandInput(
        root=UnstructuredCommandInput(hint=hint))) for name, (text, hint) in COMMANDS.items()]


def is_command(intent: str) -> bool:
    """Whether ``intent`` is a slash command (known or not) rather than a request."""
    return _COMMAND.fullmatch(intent) is not None


async def run_command(intent: str, session: LackpySession, record: SessionRecord,
                      workspace: Path) -> str:
    """Run the slash command ``intent``; the reply (what it did, or what was wrong)."""
    match = _COMMAND.fullmatch(intent)
    assert match is not None  # is_command said so
    name, rest = match.group(1), (match.group(2) or "").strip()
    if name == "create":
        return await _create(rest, session, record, workspace)
    if name == "kit":
        return _kit(rest, session, record)
    known = ", ".join(f"/{command} {hint}" for command, (_, hint) in COMMANDS.items())
    return f"unknown command /{name}; the commands are {known}"


def ratchet_note(generated: GenerationResult, ran_well: bool) -> str:
    """What the ratchet did or can do for a prompt: a template answered it (no model
    call), or ``/create`` can make the model's program one ("" otherwise)."""
    if generated.kind == "template":
        name = Path(generated.source).stem if generated.source else "?"
        return f"answered by the template {name}: no model call"
    if generated.from_model and ran_well:
        return ("/create NAME saves this program as a template, so this request needs no "
                "model call next time")
    return ""


async def _create(rest: str, session: LackpySession, record: SessionRecord,
                  workspace: Path) -> str:
    name, _, pattern = rest.partition(" ")
    if not name:
        return f"name the template: /create {COMMANDS['create'][1]}"
    if record.last_program is None:
        return ("no program has run well in this session yet: ask for one, then /create "
                "NAME saves it as a template")
    try:
        saved = await session.service.create(record.last_program, session.kit, name,
                                             pattern.strip() or None)
    except LackpyError as exc:
        return f"not saved: {error_text(exc)}"
    if not saved["success"]:
        return "not saved: " + "; ".join(saved["errors"])
    path = Path(saved["path"]).relative_to(workspace)
    return (f"saved {inline(str(path))} (pattern: {inline(saved['pattern'])}): the same request "
            "is now answered by this template, with no model call")


def _kit(rest: str, session: LackpySession, record: SessionRecord) -> str:
    try:
        if rest:
            session.set_kit(rest)
            record.kit = rest
        resolved = session.resolved_kit()
    except LackpyError as exc:
        return f"the kit is unchanged: {error_text(exc)}"
    kit = session.kit
    label = kit if isinstance(kit, str) else ",".join(kit or ())
    grade = resolved.grade
    return fenced("\n".join([f"kit: {label}  (grade w={grade.w} d={grade.d})", resolved.description,
                             *tool_sources(resolved)]))  # as %kit shows it
