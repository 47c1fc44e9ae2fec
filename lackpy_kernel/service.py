"""LackpyService: the one facade the CLI, the MCP server, the kernel and the extension share.

A service resolves a kit once per operation and hands the ``ResolvedKit`` down:
``delegation`` generates a program, runs it and records both for the ratchet in one
place, for every surface. ``LackpySession`` (``lackpy_kernel.session``) builds on it.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lackpy_kernel import telemetry
from lackpy_kernel.config import AUTO_RUN_LEVELS, CONFIG_DIR, LackpyConfig, load_config
from lackpy_kernel.errors import LackpyError, TemplateError, UsageError, error_text
from lackpy_kernel.execution import KibitzerHooks, RunPipeline, Settings, trace_sources, validate_for
from lackpy_kernel.infer import (
    GenerationEvent,
    GenerationResult,
    InferenceDispatcher,
    TemplatesProvider,
    Tryout,
    TryoutRunner,
    build_providers,
    format_params_description,
    is_available,
    not_dry_runnable,
    tryout_of,
    unavailable_reason,
)
from lackpy_kernel.infer.prompt import Interpreter
from lackpy_kernel.infer.tiers import (
    check_template_name,
    compile_pattern,
    fill_placeholders,
    format_template,
    parse_template,
)
from lackpy_kernel.kit import (
    Kit,
    ResolvedKit,
    Workspace,
    WorkspaceError,
    available_kits,
    builtin_toolbox,
    check_kit_name,
    resolve_kit,
    workspace_kits_dir,
    write_kit_file,
)
from lackpy_kernel.kit.atomic import atomic_write_text
from lackpy_kernel.kit.builtin_tools import PACKAGE_ROOT, read_workspace_text
from lackpy_kernel.kit.sources import ToolSources
from lackpy_kernel.lang import Grade, Rule, ValidationResult, free_names, validate
from lackpy_kernel.ratchet import Ratchet
from lackpy_kernel.run import ExecutionResult, SandboxLimits
from lackpy_kernel.run.context import describe_variables
from lackpy_kernel.run.kernel_side import Approver
from lackpy_kernel.run.plain import find_non_plain, jsonable
from lackpy_kernel.run.runner import no_rebinding
from lackpy_kernel.timing import ms_since as _ms_since

__all__ = ["DelegateOptions", "Delegation", "LackpyService", "NotebookContext", "RunCheck", "error_text",
           "jsonable", "trace_sources", "validate_for"]

KitOrResolved = Kit | ResolvedKit
# Runs a generated program somewhere else than a one-shot run (a session passes its own).
MODES = ("1-shot",)


@dataclass(frozen=True)
class RunCheck:
    """Whether a generated program may run before anyone has looked at it: only when every
    tool it calls is within ``[delegate] auto_run`` (``ceiling``). ``past`` names the tools
    it calls beyond that."""

    allowed: bool
    ceiling: str
    past: tuple[str, ...] = ()

    @property
    def reason(self) -> str:
        """Why the program was not run unseen ("" when it may run)."""
        if self.allowed:
            return ""
        if AUTO_RUN_LEVELS[self.ceiling] < 0:
            return f'[delegate] auto_run = "{self.ceiling}" runs no program unseen'
        return (f"it calls {', '.join(self.past)}, beyond what [delegate] auto_run = "
                f'"{self.ceiling}" lets a program do unseen')


@dataclass(frozen=True)
class NotebookContext:
    """The notebook's variables a generated program may use: their ``names`` (allowed when
    the program is validated) and a bounded ``description`` for the model's prompt (None
    when ``[delegate] context = "none"``)."""

    names: frozenset[str] = frozenset()
    description: str | None = None

    @classmethod
    def of_values(cls, values: Mapping[str, Any], mode: str) -> NotebookContext:
        """The context of ``values`` as ``mode`` (previews, names or none) describes them."""
        if mode == "none" or not values:
            return cls(frozenset(values), None)
        return cls(frozenset(values), describe_variables(values, previews=mode == "previews"))


@dataclass
class Delegation:
    """What a delegation did: the program and how it was written, and its run when it ran.

    ``result`` is None when the program was only written; ``held`` says why, when a run was
    asked for and the program was beyond ``[delegate] auto_run``. ``to_dict()`` is the
    documented ``delegate`` result.
    """

    intent: str
    generated: GenerationResult
    grade: Grade
    result: ExecutionResult | None = None
    execution_time_ms: float = 0.0
    total_time_ms: float = 0.0
    held: RunCheck | None = None
    uses: tuple[str, ...] = ()  # the notebook's variables the program reads
    runs: bool = False  # whether the program is to run (asked for, and not held)

    @property
    def program(self) -> str:
        """The program that was written."""
        return self.generated.program

    @property
    def ran(self) -> bool:
        """Whether the program was run."""
        return self.result is not None

    @property
    def success(self) -> bool:
        """Whether the program was written and, when it ran, succeeded."""
        return self.result is None or self.result.success

    def to_dict(self) -> dict[str, Any]:
        """The documented ``delegate`` dict: program, tier, timings, trace, output, error."""
        result = self.result if self.result is not None else ExecutionResult(True)
        generated = self.generated
        return {
            "success": self.success,
            "program": generated.program,
            "grade": {"w": self.grade.w, "d": self.grade.d},
            "generation_tier": generated.provider_name,
            "generation_time_ms": generated.generation_time_ms,
            "execution_time_ms": self.execution_time_ms,
            "total_time_ms": self.total_time_ms,
            "trace": [vars(entry) for entry in result.trace.entries],
            "files_read": result.trace.files_read,
            "files_modified": result.trace.files_modified,
            "output": result.output,
            "stdout": result.stdout,
            "error": result.error,
            "error_type": result.error_type,
            "error_line": result.error_line,
            "notes": result.notes,
            "correction_strategy": generated.correction_strategy,
            "held": self.held.reason if self.held else None,
            "uses": list(self.uses),
        }


@dataclass(frozen=True, kw_only=True)
class DelegateOptions:
    """How a delegation writes and runs its program; each option may be left out.

    ``kit`` (with ``extra_tools``), ``params`` and ``rules`` are those of the program;
    ``program`` skips generation and uses that text (the seed's ``_program_override``);
    ``interpreter`` and ``on_event`` (the generation's progress events) go to the
    dispatcher. With ``run`` the program runs once written; with ``ask`` as well, a program
    beyond ``[delegate] auto_run`` is held instead (what a surface passes when nobody has
    looked at it yet). ``sandbox`` False runs it in this process; ``variables`` (plain
    data) are the notebook's values it may use, described in the prompt and given to the
    run as parameters; ``approve`` is asked before its file changes land.
    """

    kit: KitOrResolved = None
    extra_tools: list[str] | None = None
    params: Mapping[str, Any] | None = None
    rules: Sequence[Rule] | None = None
    program: str | None = None
    interpreter: Any = None
    on_event: Callable[[GenerationEvent], None] | None = None
    run: bool = True
    ask: bool = False
    sandbox: bool | None = None
    variables: Mapping[str, Any] | None = None
    approve: Approver | None = None


DELEGATE = DelegateOptions()


class LackpyService:
    """Validate, generate, run and delegate lackpy programs in one workspace.

    ``inference_providers`` (also ``_inference_providers``, as in the lackpy
    docs) is the live provider list: insert a custom provider into it and the
    next ``generate`` or ``delegate`` uses it. ``ratchet`` keeps the intent log,
    template counts and replay recordings.
    """

    def __init__(self, workspace: str | os.PathLike[str] | None = None,
                 config: LackpyConfig | None = None) -> None:
        self.workspace = Path(workspace or Path.cwd()).resolve()
        self.config = config if config is not None else load_config(self.workspace)
        self.config_dir = self.workspace / CONFIG_DIR
        self.kits_dir = workspace_kits_dir(self.workspace)
        self.tool_sources = ToolSources(self.config.tool_providers, self.workspace)
        # The write tools refuse the sources' code (a program rewriting it would run outside
        # the sandbox the next time it loads).
        self.toolbox = builtin_toolbox(self.workspace, self.tool_sources.protected)
        self.tool_sources.attach(self.toolbox)  # each loads when a kit first needs its tools
        self.inference_providers: list[Any] = build_providers(
            self.config.inference_order, self.config.inference_providers, self.config_dir
        )
        self.notices: list[str] = []
        self.ratchet = Ratchet(self.config_dir, record=self.config.inference_record,
                               notice=self._notice)
        try:  # spans when [telemetry] exporter names one; without the extra, said once
            telemetry.configure(self.config.telemetry_exporter,
                                include_values=self.config.telemetry_include_values)
        except LackpyError as exc:
            self._notice(str(exc))
        # Kibitzer's session for the workspace, when installed and not turned off
        kibitzer = KibitzerHooks.open(self.workspace, enabled=self.config.kibitzer_enabled,
                                      mode=self.config.kibitzer_mode, notice=self._notice)
        self.kibitzer = kibitzer.watch if kibitzer is not None else None
        # every program of this workspace runs through it; its pool runs programs side by
        # side, up to [sandbox] workers at once
        self.runs = RunPipeline(self._run_settings(), self.toolbox, self.tool_sources.protected,
                                hooks=[kibitzer] if kibitzer is not None else [],
                                notice=self._notice)

    @property
    def _inference_providers(self) -> list[Any]:
        return self.inference_providers

    # -- kits -----------------------------------------------------------------

    def resolve_kit(self, kit: KitOrResolved = None, *, extra_tools: list[str] | None = None
                    ) -> ResolvedKit:
        """``kit`` resolved against the toolbox (the config's default kit for None).

        A ``ResolvedKit`` is returned as it is, so one resolution serves a whole operation.
        Raises KitError (UnknownKitError, UnknownToolError) naming the kit or tool and what
        exists.
        """
        if isinstance(kit, ResolvedKit):
            return kit
        chosen = self.config.kit_default if kit is None else kit
        return resolve_kit(chosen, self.toolbox, self.kits_dir, extra_tools)

    def kit_info(self, kit: KitOrResolved, extra_tools: list[str] | None = None) -> dict[str, Any]:
        """The kit's tools (as spec dicts), grade and namespace description; raises KitError."""
        resolved = self.resolve_kit(kit, extra_tools=extra_tools)
        return {
            "tools": {alias: _spec_dict(spec) for alias, spec in resolved.tools.items()},
            "grade": {"w": resolved.grade.w, "d": resolved.grade.d},
            "description": resolved.description,
        }

    def kit_list(self) -> list[dict[str, str]]:
        """Every kit a name can refer to: the workspace's, then those shipped with the package."""
        return [
            {"name": name, "path": str(path),
             "source": "workspace" if path.parent == self.kits_dir else "shipped"}
            for name, path in available_kits(self.kits_dir).items()
        ]

    def kit_create(self, name: str, tools: list[str], description: str | None = None
                   ) -> dict[str, Any]:
        """Write ``.lackpy/kits/<name>.kit``; raises KitError for a bad name or unknown tool."""
        stem = check_kit_name(name)
        for tool in tools:
            self.toolbox.resolve(tool)  # UnknownToolError naming the tool and close matches
        path = write_kit_file(self.kits_dir / f"{stem}.kit", stem, list(tools), description)
        return {"name": stem, "path": str(path), "tools": list(tools)}

    def toolbox_list(self) -> list[dict[str, Any]]:
        """Every registered tool: name, provider, source, description and grades (loading the
        configured tool sources, which may start their MCP servers)."""
        return [
            {"name": spec.name, "provider": spec.provider, "source": spec.source,
             "description": spec.description, "grade_w": spec.grade_w,
             "effects_ceiling": spec.effects_ceiling}
            for spec in self.toolbox.list_tools()
        ]

    def check_tool_sources(self) -> list[dict[str, Any]]:
        """Load every tool source of ``[tools.providers]`` now: for each, whether it loads, its
        tools, why it fails, and the tools it had to refuse."""
        return [status.to_dict() for status in self.tool_sources.check()]

    def docs_index(self, kit: KitOrResolved = None, extra_tools: list[str] | None = None
                   ) -> dict[str, Any]:
        """Relative doc paths: ``tool_docs`` (tool -> path) and ``kit_docs``; raises KitError."""
        resolved = self.resolve_kit(kit, extra_tools=extra_tools)
        tool_docs = {alias: spec.docs for alias, spec in resolved.tools.items() if spec.docs}
        return {"tool_docs": tool_docs, "kit_docs": list(resolved.docs)}

    def resolve_doc(self, doc_path: str) -> str | None:
        """A doc's text: from the workspace under ``read_file``'s rules (so never through a
        hard link to a file outside), else from the package's docs; None where neither has it."""
        try:
            return read_workspace_text(Workspace(self.workspace), doc_path)
        except (WorkspaceError, OSError, ValueError):
            pass
        try:
            real = Workspace(PACKAGE_ROOT).resolve(doc_path)
        except (WorkspaceError, OSError):
            return None
        return real.read_text(encoding="utf-8", errors="replace") if real.is_file() else None

    def templates_list(self) -> dict[str, Any]:
        """The workspace's templates in match order, and the files that were skipped."""
        provider = TemplatesProvider(self.config_dir / "templates")
        templates = [
            {"name": t.name, "pattern": t.pattern, "success_count": t.success_count,
             "fail_count": t.fail_count, "path": str(t.path)}
            for t in provider.templates()
        ]
        return {"templates": templates, "problems": list(provider.problems.values())}

    def providers_list(self) -> list[dict[str, Any]]:
        """Each inference tier in order: whether it is available now, and if not, why."""
        listing = []
        for provider in self.inference_providers:
            available = is_available(provider)
            reason = None if available else unavailable_reason(provider)
            if reason:  # paths inside the workspace read better relative to it
                reason = reason.replace(f"{self.workspace}{os.sep}", "")
            listing.append({"name": provider.name, "available": available,
                            "reason": reason, "kind": type(provider).__name__})
        return listing

    # -- validate, generate, run, delegate --------------------------------------

    def validate(self, program: str, kit: KitOrResolved = None, rules: list[Rule] | None = None,
                 param_names: Iterable[str] | None = None,
                 extra_tools: list[str] | None = None) -> ValidationResult:
        """Validate ``program`` against the kit's tools, the parameters and ``rules``.

        Returns the ValidationResult (invalid programs are results, not errors); raises
        KitError for a kit that cannot be resolved.
        """
        resolved = self.resolve_kit(kit, extra_tools=extra_tools)
        return validate_for(program, resolved, set(param_names or ()), rules)

    @telemetry.traced("lackpy.generate")
    async def generate(self, intent: str, kit: KitOrResolved = None,
                       params: dict[str, Any] | None = None, rules: list[Rule] | None = None,
                       mode: str | None = None, interpreter: Interpreter | None = None,
                       extra_tools: list[str] | None = None, *,
                       on_event: Callable[[GenerationEvent], None] | None = None,
                       variables: Mapping[str, Any] | None = None,
                       context: NotebookContext | None = None) -> GenerationResult:
        """A validated program for ``intent``, remembered in the ratchet's intent log.
        ``on_event`` receives the generation's progress events (``lackpy_kernel.infer``'s
        ProviderTried, ProgramStreaming, CorrectionStep, ...) as they happen.

        The program may also use the notebook's variables: ``variables`` (values, described
        as ``[delegate] context`` says) or a prepared ``context`` (a session's, whose values
        live in its worker).

        Raises GenerationError (a RuntimeError) listing each provider and why it gave no
        program, KitError for a bad kit, UsageError for an unknown ``mode``.
        """
        _check_mode(mode)
        resolved = self.resolve_kit(kit, extra_tools=extra_tools)
        params = params or {}
        if context is None:
            context = NotebookContext.of_values(variables or {}, self.config.delegate_context)
        dispatcher = InferenceDispatcher(self.inference_providers)
        generated = await dispatcher.generate(
            intent,
            resolved.description,
            {*resolved.callables, *params, *context.names},
            params_desc=format_params_description(params) if params else None,
            extra_rules=[no_rebinding(resolved.callables), *(rules or [])],
            interpreter=interpreter,
            example_pool=[example for spec in resolved.tools.values() for example in spec.examples],
            tool_names=sorted(resolved.callables),  # the names programs call: aliases included
            variables_desc=context.description,
            on_event=on_event,
            tryout=self.tryout_runner(resolved, params, rules, variables or {}, context.names),
            kibitzer_session=self.kibitzer,
        )
        self.ratchet.generated(intent, generated, tool_names(resolved))
        return generated

    async def run_program(self, program: str, kit: KitOrResolved = None,
                          params: dict[str, Any] | None = None, sandbox: bool | None = None,
                          rules: list[Rule] | None = None, extra_tools: list[str] | None = None,
                          *, approve: Approver | None = None, dry: bool = False,
                          ask: bool | None = None, unseen: bool = False,
                          session: str | None = None) -> ExecutionResult:
        """Validate, then run ``program`` on an empty namespace: in a sandbox worker unless
        the config or ``sandbox=False`` says otherwise (programs awaited together run side by
        side, each in a worker of its own, up to ``[sandbox] workers``). Its file changes land when it ends
        well, once ``approve`` let them where ``[sandbox] approve = "write"`` or ``ask``
        says so (without an approver they are refused: see ``Approver``); ``dry`` drops
        them, unasked. ``unseen``: a model wrote it and nobody has seen it run (it runs in a
        walled process of its own, see ``RunSpec``); ``session`` names the caller's session,
        within which one-shot runs may share a warm walled process (``[sandbox] reuse``).

        Returns a failed result rather than raising for an invalid program, a runtime error,
        a limit or a refused change; raises KitError for a kit that cannot be resolved.
        """
        resolved = self.resolve_kit(kit, extra_tools=extra_tools)
        spec = self.runs.spec(program, resolved, params=params, rules=rules, dry=dry,
                              approve=approve, ask=ask, unseen=unseen, session=session)
        return await self.runs.run(spec, self.runs.place(sandbox))

    def tryout_runner(self, resolved: ResolvedKit, params: Mapping[str, Any],
                      rules: list[Rule] | None, values: Mapping[str, Any],
                      names: Iterable[str] = ()) -> TryoutRunner:
        """How the dispatcher dry-runs a program a model wrote: validated, then run under the
        limits (in the sandbox when it applies) on ``params`` and the ``values`` it reads,
        its file changes dropped. Not run: a program that reads a notebook variable whose
        value is not at hand (in ``names`` only), or calls a tool whose effect cannot be
        staged (``not_dry_runnable``)."""
        async def tryout(program: str) -> Tryout:
            read = free_names(program)
            unknown = sorted((set(names) - set(values)) & read)
            why = (f"it reads the notebook variable {unknown[0]}, held by the session" if unknown
                   else not_dry_runnable(validate(program, set(resolved.callables)).calls, resolved,
                                         sandboxed=self.runs.sandboxed()))
            if why is not None:
                return Tryout(False, skipped=why)
            given = {**{name: values[name] for name in read & set(values)}, **params}
            spec = self.runs.spec(program, resolved, params=given, rules=rules, dry=True)
            return tryout_of(await self.runs.run(spec, self.runs.place()), str(self.workspace))
        return tryout

    def run_check(self, program: str, kit: KitOrResolved = None) -> RunCheck:
        """Whether ``program`` may run unseen: every tool it calls within ``[delegate]
        auto_run`` (the config is the only ceiling; nothing a notebook cell says raises it).
        Raises KitError for a kit that cannot be resolved."""
        resolved = self.resolve_kit(kit)
        ceiling = self.config.delegate_auto_run
        highest = AUTO_RUN_LEVELS[ceiling]
        called = validate(program, set(resolved.callables)).calls
        past = tuple(sorted({name for name in called if name in resolved.tools
                             and resolved.tools[name].grade_w > highest}))
        return RunCheck(highest >= 0 and not past, ceiling, past)

    async def delegation(self, intent: str, options: DelegateOptions = DELEGATE) -> Delegation:
        """Write a program for ``intent`` and, with ``options.run``, run it once: the whole
        delegate sequence, with the ratchet's bookkeeping (intent log, template counts,
        recordings). See ``DelegateOptions`` for what each option does.

        Raises GenerationError when no provider writes a valid program, KitError for a bad
        kit, UsageError for ``variables`` that are not plain data.
        """
        resolved = self.resolve_kit(options.kit, extra_tools=options.extra_tools)
        variables = dict(options.variables or {})
        _check_plain("variables", variables)
        delegation = await self.draft(intent, replace(options, kit=resolved),
                                      NotebookContext.of_values(variables,
                                                                self.config.delegate_context))
        if delegation.runs:
            # a one-shot run gets the variables it reads, as parameters
            given = {**{name: variables[name] for name in delegation.uses},
                     **(options.params or {})}
            spec = self.runs.spec(delegation.program, resolved, params=given, rules=options.rules,
                                  approve=options.approve, unseen=True)
            started = time.perf_counter()
            self.record_run(delegation, await self.runs.run(spec, self.runs.place(options.sandbox)),
                            started)
        return delegation

    async def draft(self, intent: str, options: DelegateOptions = DELEGATE,
                    context: NotebookContext | None = None) -> Delegation:
        """Write a program for ``intent``, not run: the caller runs it when ``runs`` says so
        and hands the result to ``record_run``.

        ``context`` is the notebook's variables the program may use (``uses`` lists those it
        reads). With ``options.run`` and ``options.ask``, a program beyond ``[delegate]
        auto_run`` is held (``held`` says why). Raises GenerationError when no provider
        writes a valid program, KitError for a bad kit.
        """
        started = time.perf_counter()
        resolved = self.resolve_kit(options.kit, extra_tools=options.extra_tools)
        context = context or NotebookContext()
        if options.program is not None:
            generated = GenerationResult(options.program, "override", 0.0)
        else:
            generated = await self.generate(
                intent, resolved, dict(options.params or {}), list(options.rules or ()),
                interpreter=options.interpreter, on_event=options.on_event, context=context)
        uses = sorted(free_names(generated.program) & context.names)
        delegation = Delegation(intent, generated, resolved.grade, uses=tuple(uses),
                                runs=options.run)
        if options.run and options.ask:
            check = self.run_check(generated.program, resolved)
            delegation.runs, delegation.held = check.allowed, None if check.allowed else check
        delegation.total_time_ms = _ms_since(started)
        return delegation

    def record_run(self, delegation: Delegation, result: ExecutionResult, started: float) -> None:
        """Keep ``result``, the run of ``delegation``'s program begun at ``started`` (a
        ``time.perf_counter()``), in the delegation and the ratchet."""
        delegation.result = result
        delegation.execution_time_ms = _ms_since(started)
        delegation.total_time_ms += delegation.execution_time_ms
        self.ratchet.ran(delegation.generated, result.success)

    async def delegate(self, intent: str, kit: KitOrResolved = None,
                       params: dict[str, Any] | None = None, sandbox: bool | None = None,
                       rules: list[Rule] | None = None, _program_override: str | None = None,
                       mode: str | None = None, interpreter: Any = None,
                       extra_tools: list[str] | None = None, *,
                       variables: Mapping[str, Any] | None = None,
                       approve: Approver | None = None) -> dict[str, Any]:
        """The seed's delegate: generate a program for ``intent`` and run it; the documented
        result dict (``Delegation.to_dict``). Raises as ``delegation`` does, and UsageError
        for an unknown ``mode``."""
        _check_mode(mode)
        delegation = await self.delegation(intent, DelegateOptions(
            kit=kit, params=params, program=_program_override, sandbox=sandbox, rules=rules,
            interpreter=interpreter, extra_tools=extra_tools, variables=variables,
            approve=approve))
        return delegation.to_dict()

    async def create(self, program: str, kit: KitOrResolved = None, name: str = "",
                     pattern: str | None = None, extra_tools: list[str] | None = None
                     ) -> dict[str, Any]:
        """Validate ``program`` and save it as ``.lackpy/templates/<name>.tmpl``.

        Without ``pattern``, the intent that last produced this program (from the ratchet's
        intent log) becomes the pattern. Returns ``{"success": False, "errors": [...]}`` for a
        program, name or pattern that cannot be used (with ``"valid": False`` where the program
        does not validate against ``kit``); raises KitError for a bad kit.
        """
        try:
            stem = check_template_name(name)
        except ValueError as exc:
            return {"success": False, "errors": [str(exc)]}
        if pattern is None:
            pattern = self.ratchet.intent_for(program)
            if pattern is None:
                return {"success": False, "errors": [
                    "no delegate produced this program yet, so there is no intent to match; "
                    "pass a pattern such as 'read the file {path}'"]}
            pattern = pattern.replace("{", "{{").replace("}", "}}")
        try:
            filled = fill_placeholders(program, {n: "x" for n in compile_pattern(pattern)[1]})
        except (SyntaxError, ValueError, TemplateError) as exc:
            return {"success": False, "errors": [f"the template cannot be used: {exc}"]}
        check = self.validate(filled, kit, extra_tools=extra_tools)
        if not check.valid:
            return {"success": False, "errors": check.errors, "valid": False}
        path = self.config_dir / "templates" / f"{stem}.tmpl"
        try:
            text = format_template(stem, pattern, program)
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, text)
            parse_template(path)
        except (OSError, ValueError) as exc:
            return {"success": False, "errors": [str(exc)]}
        return {"success": True, "path": str(path), "pattern": pattern}

    # -- the sandbox ------------------------------------------------------------

    @property
    def sandbox_worker_pid(self) -> int | None:
        """The process id of the first one-shot sandbox worker while it runs, else None."""
        return self.runs.shared.worker_pid

    @property
    def sandbox_worker_pids(self) -> list[int]:
        """The process ids of the one-shot sandbox workers that run (several while programs
        run side by side; the extras stop once idle)."""
        return self.runs.shared.worker_pids

    # -- lifecycle ------------------------------------------------------------

    def close(self) -> None:
        """Stop the sandbox workers, if any were started, the tool sources' MCP servers and
        Kibitzer's thread."""
        self.runs.close()
        self.ratchet.flush()
        self.tool_sources.close()
        if self.kibitzer is not None:
            self.kibitzer.close()

    def __enter__(self) -> LackpyService:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- internals ------------------------------------------------------------

    def _run_settings(self) -> Settings:
        config = self.config
        return Settings(workspace=self.workspace, kits_dir=self.kits_dir,
                        limits=SandboxLimits(config.sandbox_timeout, config.sandbox_memory_mb,
                                             config.sandbox_max_result_mb,
                                             config.sandbox_max_tool_calls,
                                             config.sandbox_reuse,
                                             config.sandbox_reuse_idle),
                        sandbox=config.sandbox_enabled,
                        asks_writes=config.sandbox_approve == "write",
                        workers=config.sandbox_workers)

    def _notice(self, message: str) -> None:
        if message not in self.notices:
            self.notices.append(message)
            print(f"lackpy: {message}", file=sys.stderr)


def tool_names(resolved: ResolvedKit) -> list[str]:
    """The real names of a kit's tools (not their aliases), sorted."""
    return sorted({spec.name for spec in resolved.tools.values()})


def _check_plain(what: str, values: Mapping[str, Any]) -> None:
    bad = find_non_plain(values)
    if bad is not None:
        raise UsageError(f"{what} must be plain data (str, numbers, lists, dicts), "
                         f"not {bad.__name__}")


def _check_mode(mode: str | None) -> None:
    if mode is not None and mode not in MODES:
        raise UsageError(f"inference mode {mode!r} is not supported; lackpy-kernel generates "
                         f"one program per provider ({', '.join(MODES)}), so leave mode unset")


def _spec_dict(spec: Any) -> dict[str, Any]:
    return {
        "name": spec.name, "provider": spec.provider, "description": spec.description,
        "args": [vars(arg) for arg in spec.args], "returns": spec.returns,
        "grade_w": spec.grade_w, "effects_ceiling": spec.effects_ceiling, "docs": spec.docs,
    }
