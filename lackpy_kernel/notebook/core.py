"""The core magics, written once for both hosts: ``%delegate``, ``%kit``, ``%params``,
``%%create``, ``%providers``, ``%trace``, ``%%validate``, ``%who``, ``%reset``,
``%lsmagic``, ``%undo`` and ``%%lackpy``.

Options come first; everything after the first word that is not an option (or after
``--``) is the rest (an intent, a name), taken literally. ``--param`` values are Python
literals where they parse as one, otherwise strings.
"""

from __future__ import annotations

import keyword
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lackpy_kernel.errors import GenerationError, UsageError
from lackpy_kernel.infer import GenerationEvent, failure_text
from lackpy_kernel.kit import NOTHING_TO_UNDO, ResolvedKit, Workspace, drop_last, undo_last
from lackpy_kernel.lang import free_names
from lackpy_kernel.notebook.bundles import (
    GenerationProgress,
    change_bundle,
    delegation_status,
    held_message,
    kit_label,
    table_bundle,
    trace_bundle,
)
from lackpy_kernel.notebook.declare import (
    DELEGATE_OPTIONS,
    DELEGATE_SUMMARY,
    KIT,
    PARAM,
    Option,
    declared_magics,
    magic,
)
from lackpy_kernel.notebook.family import MagicFamily
from lackpy_kernel.notebook.port import NotebookError, NotebookPort, ProgramCell, program_failure
from lackpy_kernel.notebook.syntax import MagicLine, parse_param, shell_words
from lackpy_kernel.run import ExecutionResult, validation_failure
from lackpy_kernel.service import DelegateOptions, Delegation
from lackpy_kernel.telemetry import tallying

__all__ = ["CoreMagics", "MagicOptions", "parse_magic_options", "show_run", "tool_sources"]

REPLACE = Option("--replace", "flag", "put the program in this cell instead of the next one")
NO_SANDBOX = Option("--no-sandbox", "flag", "run in this process, without time or memory limits")
OUT = Option("--out", "value", "also assign the program's output to this Python variable", "NAME")
CLEAR = Option("--clear", "flag", "forget every parameter first")
SKIP_CHANGED = Option("--skip-changed", "flag", "take back the files that did not change since, "
                      "and leave the others as they are now")
DROP = Option("--drop", "flag", "forget the last commit's undo record (no file changes); the "
              "next %undo takes back the commit before it")
PATTERN = Option("--pattern", "value", "the intents it answers, with {placeholders}; default: "
                 "the intent that last produced this program", "P")
LACKPY_SUMMARY = ("validate the cell as a lackpy program and run it (in the sandbox, unless "
                  "--no-sandbox); its last expression is the cell's result")


@dataclass
class MagicOptions:
    """What a ``%delegate`` or ``%%lackpy`` line said; ``param_texts`` keep the
    ``--param`` words as typed, to write them back."""

    kit: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    out: str | None = None
    sandbox: bool | None = None
    run: bool = False
    yes: bool = False
    replace: bool = False
    rest: str = ""
    param_texts: list[str] = field(default_factory=list)


def _options(line: MagicLine, usage: str) -> MagicOptions:
    given = line.options
    options = MagicOptions(
        kit=given.get("--kit"), params=dict(parse_param(raw) for raw in given.get("--param", [])),
        out=given.get("--out"), sandbox=False if given.get("--no-sandbox") else None,
        run=bool(given.get("--run")), yes=bool(given.get("--yes")),
        replace=bool(given.get("--replace")), rest=line.rest,
        param_texts=list(given.get("--param", [])))
    if options.yes and not options.run:
        raise UsageError("--yes approves running the program; use it with --run")
    if options.out is not None and (not options.out.isidentifier()
                                    or keyword.iskeyword(options.out)):
        raise UsageError(f"--out needs a variable name, not {options.out!r}; usage: {usage}")
    return options


def parse_magic_options(line: str, magic: str = "delegate") -> MagicOptions:
    """Read ``line``'s leading options; the text after them is ``rest``, verbatim.

    ``magic`` (``"lackpy"`` or ``"delegate"``) picks the options allowed; raises
    UsageError for options that cannot be read.
    """
    declared = declared_magics(CoreMagics)[magic][0]
    return _options(declared.parse(line), declared.usage)


def tool_sources(resolved: ResolvedKit) -> list[str]:
    """One line per tool source the kit draws on: ``from SOURCE: tool, tool`` (SOURCE as
    ``ToolSpec.source`` reads: ``builtin``, ``words (python: words.py)``, an MCP server)."""
    by_source: dict[str, list[str]] = {}
    for alias, spec in resolved.tools.items():
        by_source.setdefault(spec.source, []).append(alias)
    return [f"from {source}: {', '.join(names)}" for source, names in by_source.items()]


def show_run(port: NotebookPort, result: ExecutionResult, program: str) -> None:
    """Show what a program printed, its notes, its trace and its output (the magic's
    result); raises the NotebookError of a failed program."""
    port.stream("stdout", result.stdout)
    for note in result.notes:
        port.stream("stderr", f"lackpy: {note}\n")
    if result.trace.entries:
        port.display(trace_bundle(result.trace, compact=True))
    if not result.success:
        raise program_failure(result, program)
    port.result(result.output)


class CoreMagics(MagicFamily):
    """The magics that act on the session itself: its kit, parameters and variables, and
    the programs the tiers write for it."""

    @magic("delegate", DELEGATE_SUMMARY, options=(*DELEGATE_OPTIONS, REPLACE, NO_SANDBOX),
           rest="INTENT")
    async def delegate(self, line: MagicLine) -> None:
        options = _options(line, self._magic("delegate").usage)
        intent = options.rest
        if not intent:
            raise UsageError(f"what should the program do? usage: {self._magic('delegate').usage}")
        progress = _LiveProgress(self.port, f"delegating: {intent} ...")
        try:
            with tallying() as used:
                delegation = await self.session.delegate(intent, DelegateOptions(
                    kit=options.kit, params=options.params, on_event=progress.show,
                    sandbox=options.sandbox, variables=self.port.notebook_values()),
                    run=options.run, approved=options.yes)
        except GenerationError as exc:  # the card shows each tier; the error, what to do
            progress.close("failed")
            exc.args = (failure_text(exc, "notebook"),)
            raise
        except BaseException as exc:  # a bug, a refused change, or the stop button
            progress.close("failed" if isinstance(exc, Exception) else "interrupted")
            raise
        progress.close("done", delegation)
        where = "this cell now" if options.replace else "the next cell"
        spent = f" ({used.summary()})" if used.calls else ""
        self.port.stream("stdout", delegation_status(delegation, where) + spent + "\n")
        self.port.next_input(self.port.program_cell(ProgramCell(
            delegation.program, delegation.uses, options.kit, options.params,
            options.param_texts, options.sandbox)), replace=options.replace)
        if delegation.held:
            self.port.stream("stdout", f"lackpy: {held_message(delegation, where)}\n")  # no error
        if delegation.result is not None:
            show_run(self.port, delegation.result, delegation.program)

    @magic("kit", "show the session's kit, or set it (a kit name, or tool,tool,...)",
           rest="[NAME | tool,tool,...]")
    def kit(self, line: MagicLine) -> None:
        if line.rest:
            self.session.set_kit(line.rest)
        resolved = self.session.resolved_kit()
        grade = resolved.grade
        lines = [f"kit: {self.session.kit}  (grade w={grade.w} d={grade.d})",
                 resolved.description, *tool_sources(resolved)]
        self.port.display({"text/plain": "\n".join(lines)})

    @magic("params", "show or set the parameters programs see", options=(CLEAR,),
           rest="[name=value ...]")
    def params(self, line: MagicLine) -> None:
        if line.options.get("--clear"):
            self.session.params.clear()
        given = dict(parse_param(word) for word in shell_words(line.rest))  # all or nothing
        self.session.params.update(given)
        shown = "\n".join(f"{name} = {value!r}" for name, value in self.session.params.items())
        self.port.display({"text/plain": shown or "no parameters"})

    @magic("create", "save the cell's program as a template, so the same intent later needs "
           "no model (the ratchet)", options=(PATTERN, KIT), rest="NAME", cell=True)
    async def create(self, line: MagicLine, body: str) -> None:
        declared = self._magic("create")
        name, _, tail = line.rest.partition(" ")
        if not name:
            raise UsageError(f"name the template; usage: {declared.usage}")
        after_name = declared.parse(tail)  # options may follow NAME
        if after_name.rest:
            raise UsageError(f"one name only; usage: {declared.usage}")
        options = {**line.options, **after_name.options}
        kit = options.get("--kit")
        saved = await self.service.create(body, kit or self.session.kit, name,
                                          options.get("--pattern"))
        if not saved["success"]:
            errors = "; ".join(saved["errors"])
            if saved.get("valid") is False:
                checked = kit or (f"{kit_label(self.session.kit)}, the session's; --kit K "
                                  "checks against another")
                errors = f"{errors} (checked against the kit {checked})"
            raise NotebookError("LackpyCreateError", errors)
        shown = Path(saved["path"]).relative_to(self.workspace)
        self.port.display({"text/plain": f"saved {shown}\npattern: {saved['pattern']}"})

    @magic("providers", "the inference tiers, in order, and whether each is available")
    def providers(self, line: MagicLine) -> None:
        rows = [[p["name"], "yes" if p["available"] else "no", p["reason"] or ""]
                for p in self.service.providers_list()]
        self.port.display(table_bundle(["tier", "available", "why not"], rows))

    @magic("trace", "every tool call of the last program, in full")
    def trace(self, line: MagicLine) -> None:
        last = self.session.last_result
        if last is None or not last.trace.entries:
            self.port.display({"text/plain": "no tool calls yet"})
            return
        self.port.display(trace_bundle(last.trace, compact=False))

    @magic("validate", "validate the cell's program without running it", cell=True)
    def validate(self, line: MagicLine, body: str) -> None:
        check = self.session.validate(body, params=self._params_for(body))
        if not check.valid:
            raise program_failure(validation_failure(check.issues), body)
        self.port.display({"text/plain": f"valid: calls {', '.join(check.calls) or 'nothing'}"})

    @magic("who", "the session's variables and parameters, with their types")
    def who(self, line: MagicLine) -> None:
        rows = [[name, kind] for name, kind in sorted(self.session.variable_types.items())]
        rows += [[name, f"{type(value).__name__} (parameter)"]
                 for name, value in self.session.params.items()]
        self.port.display(table_bundle(["name", "type"], rows) if rows else
                          {"text/plain": "no variables yet"})

    @magic("reset", "forget the session's variables (the kit and parameters stay)")
    def reset(self, line: MagicLine) -> None:
        self.session.reset()
        self.port.display({"text/plain": "the session's variables are cleared"})

    @magic("lsmagic", "this list; %NAME? shows one magic's help")
    def lsmagic(self, line: MagicLine) -> None:
        usages = [f"{m.usage}: {m.summary}" for m, _ in self.declared.values()]
        self.port.display({"text/plain": "\n".join(usages)})

    @magic("undo", "take back the file changes of the last program that wrote files (again: "
           "the one before); refused, naming the file, when one changed since: "
           "--skip-changed takes back the rest, --drop forgets that commit's record",
           options=(SKIP_CHANGED, DROP))
    def undo(self, line: MagicLine) -> None:
        workspace = Workspace(self.workspace)
        done = (drop_last(workspace) if line.options.get("--drop")
                else undo_last(workspace, skip_changed=bool(line.options.get("--skip-changed"))))
        self.port.display({"text/plain": "\n".join(done) or NOTHING_TO_UNDO})

    @magic("diff", "show all of the last change a program asked to make, nothing cut or "
           "summarized (what the question offers as 'all')")
    def diff(self, line: MagicLine) -> None:
        last = self.approval.last
        self.port.display(change_bundle(last.in_full()) if last is not None else
                          {"text/plain": "no program of this session asked to change files yet"})

    @magic("lackpy", LACKPY_SUMMARY, options=(KIT, PARAM, OUT, NO_SANDBOX), cell=True)
    async def lackpy(self, line: MagicLine, body: str) -> None:
        declared = self._magic("lackpy")
        options = _options(line, declared.usage)
        if options.rest:
            raise UsageError(f"%%lackpy takes only options, not {options.rest!r}; the program "
                             f"goes in the cell; usage: {declared.usage}")
        result = await self.session.run_once(body, kit=options.kit, sandbox=options.sandbox,
                                             params=self._params_for(body, options.params,
                                                                     options.kit))
        show_run(self.port, result, body)
        if options.out is not None:
            self.port.assign(options.out, result.output)

    def _params_for(self, program: str, given: dict[str, Any] | None = None,
                    kit: str | None = None) -> dict[str, Any] | None:
        """The parameters ``program`` sees: the notebook's own values it reads (a Python
        notebook's), then the session's parameters, then ``given``; None where the notebook
        has no values of its own (the kernel: its variables are the session's)."""
        given = {**self.session.params, **(given or {})}
        unbound = free_names(program) - set(self.session.resolved_kit(kit).callables) - set(given)
        values = self.port.notebook_values(unbound)
        return None if values is None else {**values, **given}


class _LiveProgress:
    """One display that shows a generation's progress as it happens (see
    ``GenerationProgress``); where displays do not update in place, the title alone as a
    status line."""

    def __init__(self, port: NotebookPort, title: str) -> None:
        self.port, self.progress = port, GenerationProgress(title)
        self.display_id = uuid.uuid4().hex if port.live() else None
        if self.display_id is None:
            port.stream("stdout", f"{title} ")
        else:
            port.display({"text/plain": title}, self.display_id)

    def show(self, event: GenerationEvent) -> None:
        """Add ``event`` to what the display shows."""
        bundle = self.progress.add(event)
        if self.display_id is not None:
            self.port.update_display(bundle, self.display_id)

    def close(self, state: str, delegation: Delegation | None = None) -> None:
        """Show the title alone again as text (the status line follows it), and the card in
        ``state`` (with ``delegation``, the program it wrote); where displays do not update,
        a failure ends the title's line with ``state``."""
        if self.display_id is not None:
            self.port.update_display(self.progress.last_bundle(state, delegation), self.display_id)
        elif delegation is None:
            self.port.stream("stdout", f"{state}\n")
