"""The kernel's magics: each declared once with its options, parsed, run on the session."""

from __future__ import annotations

import inspect
import shlex
import uuid
from pathlib import Path
from typing import Any

from lackpy_kernel.errors import GenerationError, LackpyError, UsageError, error_text
from lackpy_kernel.infer import GenerationEvent
from lackpy_kernel.notebook.agents import AgentMagics
from lackpy_kernel.notebook.bundles import (
    GenerationProgress,
    delegation_status,
    held_message,
    table_bundle,
    trace_bundle,
    uses_comment,
    validation_error,
)
from lackpy_kernel.notebook.declare import (
    DELEGATE_OPTIONS,
    DELEGATE_SUMMARY,
    Magic,
    Option,
    declared_magics,
    magic,
)
from lackpy_kernel.notebook.plans import PlanMagics
from lackpy_kernel.notebook.syntax import parse_param, shell_words
from lackpy_kernel.session import Delegation, LackpySession

from .output import CellError, CellOutput, KernelPort, show_result

REPLACE = Option("--replace", "flag", "put the program in this cell instead of the next one")
CLEAR = Option("--clear", "flag", "forget every parameter first")
PATTERN = Option("--pattern", "value", "the intents it answers, with {placeholders}; default: "
                 "the intent that last produced this program", "P")


class KernelMagics(PlanMagics, AgentMagics):
    """The magics of one kernel: they act on its session and write to its cell output
    (the plan magics, ``%%step`` and ``%plan``, come from PlanMagics; ``%agent`` and
    ``%replan`` from AgentMagics)."""

    def __init__(self, output: CellOutput, session: LackpySession, workspace: Path) -> None:
        self.output = output
        self.port = KernelPort(output, session)
        self.session = session
        self.service = session.service
        self.workspace = workspace
        self.declared = declared_magics(self)

    # -- dispatch ---------------------------------------------------------------

    async def run(self, name: str, line: str, body: str | None = None) -> None:
        """Run magic ``name`` (a cell magic when ``body`` is given); ``%name?`` shows its help.

        Raises CellError for an unknown magic, bad options or any expected failure.
        """
        if name.endswith("?"):
            self.output.display({"text/plain": self._magic(name[:-1]).help()})
            return
        declared = self._magic(name)
        if declared.cell and body is None:
            raise CellError("UsageError", f"%%{name} is a cell magic: put it on the cell's first "
                            "line, with the program below")
        if not declared.cell and body is not None:
            raise CellError("UsageError", f"%{name} is a line magic; %lsmagic lists the cell "
                            "magics")
        handler = self.declared[name][1]
        try:
            parsed = declared.parse(line)
            result = handler(parsed) if body is None else handler(parsed, body)
            if inspect.isawaitable(result):
                await result
        except CellError:
            raise
        except LackpyError as exc:
            raise CellError(type(exc).__name__, error_text(exc)) from None

    def _magic(self, name: str) -> Magic:
        found = self.declared.get(name)
        if found is None:
            raise CellError("UsageError", f"unknown magic %{name}; %lsmagic lists them")
        return found[0]

    def help_for(self, name: str) -> str | None:
        """The help of magic ``name`` (for Shift-Tab), or None."""
        found = self.declared.get(name)
        return found[0].help() if found else None

    def names(self) -> list[str]:
        """``%name`` or ``%%name`` of every magic, in declaration order."""
        return [("%%" if m.cell else "%") + m.name for m, _ in self.declared.values()]

    # -- the magics -------------------------------------------------------------

    @magic("delegate", DELEGATE_SUMMARY, options=(*DELEGATE_OPTIONS, REPLACE), rest="INTENT")
    async def delegate(self, line: Any) -> None:
        intent = line.rest
        if not intent:
            raise UsageError(f"what should the program do? usage: {self._magic('delegate').usage}")
        run, approved = bool(line.options.get("--run")), bool(line.options.get("--yes"))
        if approved and not run:
            raise UsageError("--yes approves running the program; use it with --run")
        params = dict(parse_param(raw) for raw in line.options.get("--param", []))
        kit, replace = line.options.get("--kit"), bool(line.options.get("--replace"))
        progress = _LiveProgress(self.output, f"delegating: {intent} ...")
        try:
            delegation = await self.session.delegate(intent, kit=kit, run=run, approved=approved,
                                                     params=params, on_event=progress.show)
        except GenerationError:
            self.output.stream("stdout", "no provider could write a program\n")
            raise
        finally:
            progress.close()
        where = "this cell now" if replace else "the next cell"
        self.output.stream("stdout", delegation_status(delegation, where) + "\n")
        self.output.next_input(_program_cell(delegation, params, kit), replace=replace)
        if delegation.held:
            self.output.stream("stderr", f"lackpy: {held_message(delegation, where)}\n")
        if delegation.result is not None:
            show_result(self.output, delegation.result, delegation.program)

    @magic("kit", "show the session's kit, or set it (a kit name, or tool,tool,...)",
           rest="[NAME | tool,tool,...]")
    def kit(self, line: Any) -> None:
        if line.rest:
            self.session.set_kit(line.rest)
        resolved = self.session.resolved_kit()
        grade = resolved.grade
        text = f"kit: {self.session.kit}  (grade w={grade.w} d={grade.d})\n{resolved.description}"
        self.output.display({"text/plain": text})

    @magic("params", "show or set the parameters programs see", options=(CLEAR,),
           rest="[name=value ...]")
    def params(self, line: Any) -> None:
        if line.options.get("--clear"):
            self.session.params.clear()
        given = dict(parse_param(word) for word in shell_words(line.rest))  # all or nothing
        self.session.params.update(given)
        shown = "\n".join(f"{name} = {value!r}" for name, value in self.session.params.items())
        self.output.display({"text/plain": shown or "no parameters"})

    @magic("create", "save the cell's program as a template, so the same intent later needs "
           "no model (the ratchet)", options=(PATTERN,), rest="NAME", cell=True)
    async def create(self, line: Any, body: str) -> None:
        declared = self._magic("create")
        name, _, tail = line.rest.partition(" ")
        if not name:
            raise UsageError(f"name the template; usage: {declared.usage}")
        after_name = declared.parse(tail)  # options may follow NAME
        if after_name.rest:
            raise UsageError(f"one name only; usage: {declared.usage}")
        options = {**line.options, **after_name.options}
        saved = await self.service.create(body, self.session.kit, name, options.get("--pattern"))
        if not saved["success"]:
            raise CellError("LackpyCreateError", "; ".join(saved["errors"]))
        shown = Path(saved["path"]).relative_to(self.workspace)
        self.output.display({"text/plain": f"saved {shown}\npattern: {saved['pattern']}"})

    @magic("providers", "the inference tiers, in order, and whether each is available")
    def providers(self, line: Any) -> None:
        rows = [[p["name"], "yes" if p["available"] else "no", p["reason"] or ""]
                for p in self.service.providers_list()]
        self.output.display(table_bundle(["tier", "available", "why not"], rows))

    @magic("trace", "every tool call of the last program, in full")
    def trace(self, line: Any) -> None:
        last = self.session.last_result
        if last is None or not last.trace.entries:
            self.output.display({"text/plain": "no tool calls yet"})
            return
        self.output.display(trace_bundle(last.trace, compact=False))

    @magic("validate", "validate the cell's program without running it", cell=True)
    def validate(self, line: Any, body: str) -> None:
        check = self.session.validate(body)
        if not check.valid:
            raise CellError.of(validation_error(check.issues, body))
        self.output.display({"text/plain": f"valid: calls {', '.join(check.calls) or 'nothing'}"})

    @magic("who", "the session's variables and parameters, with their types")
    def who(self, line: Any) -> None:
        rows = [[name, kind] for name, kind in sorted(self.session.variable_types.items())]
        rows += [[name, f"{type(value).__name__} (parameter)"]
                 for name, value in self.session.params.items()]
        self.output.display(table_bundle(["name", "type"], rows) if rows else
                            {"text/plain": "no variables yet"})

    @magic("reset", "forget the session's variables (the kit and parameters stay)")
    def reset(self, line: Any) -> None:
        self.session.reset()
        self.output.display({"text/plain": "the session's variables are cleared"})

    @magic("lsmagic", "this list; %NAME? shows one magic's help")
    def lsmagic(self, line: Any) -> None:
        usages = [f"{m.usage}: {m.summary}" for m, _ in self.declared.values()]
        self.output.display({"text/plain": "\n".join(usages)})


class _LiveProgress:
    """One display that shows a generation's progress as it happens (see
    ``GenerationProgress``)."""

    def __init__(self, output: CellOutput, title: str) -> None:
        self.output, self.progress = output, GenerationProgress(title)
        self.display_id = uuid.uuid4().hex
        output.display({"text/plain": title}, self.display_id)

    def show(self, event: GenerationEvent) -> None:
        """Add ``event`` to what the display shows."""
        self.output.update_display({"text/plain": self.progress.add(event)}, self.display_id)

    def close(self) -> None:
        """Show the title alone again (the status line follows it)."""
        if self.progress.events:
            self.output.update_display({"text/plain": self.progress.title}, self.display_id)


def _program_cell(delegation: Delegation, params: dict[str, Any], kit: str | None) -> str:
    """The cell %delegate inserts: which of the notebook's variables it uses, then its kit
    (when --kit chose one) and its parameters set first, so the cell runs as written."""
    lines = [uses_comment(delegation.uses)] if delegation.uses else []
    if kit:
        lines.append(f"%kit {kit}")
    if params:
        words = [f"{name}={value!r}" for name, value in params.items()]
        quoted = [shlex.quote(word) if any(c.isspace() for c in word) else word for word in words]
        lines.append(f"%params {' '.join(quoted)}")
    return "\n".join([*lines, delegation.program])
