"""LackpyService: the one facade the CLI, the MCP server, the kernel and the extension share."""

from __future__ import annotations

import ast
import asyncio
import copy
import json
import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from lackpy_kernel.config import CONFIG_DIR, LackpyConfig, load_config
from lackpy_kernel.errors import error_text
from lackpy_kernel.infer import (
    GenerationResult,
    InferenceDispatcher,
    TemplatesProvider,
    format_params_description,
    record_generation,
)
from lackpy_kernel.infer.dispatcher import is_available, unavailable_reason
from lackpy_kernel.infer.factory import build_providers
from lackpy_kernel.infer.provider import KIND_TEMPLATE
from lackpy_kernel.infer.replay import REPLAY_FILE
from lackpy_kernel.infer.templates import (
    TemplateError,
    check_template_name,
    compile_pattern,
    fill_placeholders,
    format_template,
    parse_template,
    update_counts,
)
from lackpy_kernel.kit import (
    ResolvedKit,
    Workspace,
    WorkspaceError,
    available_kits,
    builtin_toolbox,
    check_kit_name,
    resolve_kit,
    write_kit_file,
)
from lackpy_kernel.kit.atomic import atomic_write_text
from lackpy_kernel.kit.builtin_tools import PACKAGE_ROOT
from lackpy_kernel.lang import Rule, ValidationResult, validate
from lackpy_kernel.run import (
    ExecutionResult,
    RestrictedRunner,
    Sandbox,
    SandboxLimits,
    sandbox_supported,
    validation_failure,
)
from lackpy_kernel.run.plain import jsonable
from lackpy_kernel.run.runner import no_rebinding

__all__ = ["LackpyService", "LackpySession", "error_text", "jsonable"]

HISTORY_FILE = "history.jsonl"
HISTORY_LIMIT = 200

Kit = str | list[str] | dict[str, Any] | None


class LackpyService:
    """Validate, generate, run and delegate lackpy programs in one workspace.

    ``inference_providers`` (also ``_inference_providers``, as in the lackpy
    docs) is the live provider list: insert a custom provider into it and the
    next ``generate`` or ``delegate`` uses it.
    """

    def __init__(self, workspace: str | os.PathLike[str] | None = None,
                 config: LackpyConfig | None = None) -> None:
        self.workspace = Path(workspace or Path.cwd()).resolve()
        self.config = config if config is not None else load_config(self.workspace)
        self.config_dir = self.workspace / CONFIG_DIR
        self.kits_dir = self.config_dir / "kits"
        self.toolbox = builtin_toolbox(self.workspace)
        self.inference_providers: list[Any] = build_providers(
            self.config.inference_order, self.config.inference_providers, self.config_dir
        )
        self._sandbox: Sandbox | None = None
        self.notices: list[str] = []

    @property
    def _inference_providers(self) -> list[Any]:
        return self.inference_providers

    # -- kits -----------------------------------------------------------------

    def _resolve_kit(self, kit: Kit = None, extra_tools: list[str] | None = None) -> ResolvedKit:
        chosen = self.config.kit_default if kit is None else kit
        return resolve_kit(chosen, self.toolbox, self.kits_dir, extra_tools)

    def kit_info(self, kit: Kit, extra_tools: list[str] | None = None) -> dict[str, Any]:
        """The kit's tools (as spec dicts), grade and namespace description."""
        resolved = self._resolve_kit(kit, extra_tools)
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
        """Write ``.lackpy/kits/<name>.kit``; every tool must exist."""
        stem = check_kit_name(name)
        for tool in tools:
            self.toolbox.resolve(tool)  # KeyError naming the tool and close matches
        path = write_kit_file(self.kits_dir / f"{stem}.kit", stem, list(tools), description)
        return {"name": stem, "path": str(path), "tools": list(tools)}

    def toolbox_list(self) -> list[dict[str, Any]]:
        """Every registered tool: name, provider, description and grades."""
        return [
            {"name": spec.name, "provider": spec.provider, "description": spec.description,
             "grade_w": spec.grade_w, "effects_ceiling": spec.effects_ceiling}
            for spec in self.toolbox.list_tools()
        ]

    def docs_index(self, kit: Kit = None, extra_tools: list[str] | None = None) -> dict[str, Any]:
        """Relative doc paths: ``tool_docs`` (tool -> path) and ``kit_docs``."""
        resolved = self._resolve_kit(kit, extra_tools)
        tool_docs = {alias: spec.docs for alias, spec in resolved.tools.items() if spec.docs}
        return {"tool_docs": tool_docs, "kit_docs": list(resolved.docs)}

    def resolve_doc(self, doc_path: str) -> str | None:
        """A doc's text: from the workspace, else the package's docs; never from outside either."""
        for root in (self.workspace, PACKAGE_ROOT):
            try:
                real = Workspace(root).resolve(doc_path)
            except (WorkspaceError, OSError):
                continue
            if real.is_file():
                return real.read_text(encoding="utf-8", errors="replace")
        return None

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

    # -- validate, generate, run -----------------------------------------------

    def validate(self, program: str, kit: Kit = None, rules: list[Rule] | None = None,
                 param_names: Iterable[str] | None = None,
                 extra_tools: list[str] | None = None) -> ValidationResult:
        """Validate ``program`` against the kit's tools, the parameters and ``rules``."""
        resolved = self._resolve_kit(kit, extra_tools)
        return _validate_for(program, resolved, set(param_names or ()), rules)

    async def generate(self, intent: str, kit: Kit = None, params: dict[str, Any] | None = None,
                       rules: list[Rule] | None = None, mode: str | None = None,
                       interpreter: Any = None, extra_tools: list[str] | None = None
                       ) -> GenerationResult:
        """A validated program for ``intent``; RuntimeError when every provider fails.

        The intent is remembered with the program, so ``create`` can take it as the
        template's pattern (and a model tier's program is recorded for replay when
        ``[inference] record = true``).
        """
        resolved = self._resolve_kit(kit, extra_tools)
        params = params or {}
        dispatcher = InferenceDispatcher(self.inference_providers)
        generated = await dispatcher.generate(
            intent,
            resolved.description,
            {*resolved.callables, *params},
            params_desc=format_params_description(params) if params else None,
            extra_rules=[no_rebinding(resolved.callables), *(rules or [])],
            interpreter=interpreter,
            example_pool=[example for spec in resolved.tools.values() for example in spec.examples],
        )
        self.record_generation(intent, generated, resolved)
        return generated

    async def run_program(self, program: str, kit: Kit = None,
                          params: dict[str, Any] | None = None, sandbox: bool | None = None,
                          rules: list[Rule] | None = None, extra_tools: list[str] | None = None
                          ) -> ExecutionResult:
        """Validate, then run ``program``: in the sandbox worker unless the config or
        ``sandbox=False`` says otherwise. Returns a failed result rather than raising."""
        resolved = self._resolve_kit(kit, extra_tools)
        params = dict(params or {})
        check = _validate_for(program, resolved, set(params), rules)
        if not check.valid:
            return validation_failure(check.issues)
        if self._use_sandbox(sandbox, resolved):
            box = self._one_shot_sandbox()
            alias_map = {alias: spec.name for alias, spec in resolved.tools.items()}
            return await _in_thread(box.run, box.interrupt, program, alias_map, params,
                                    keep=False, return_variables=True)
        return RestrictedRunner().run(program, resolved.callables, params, extra_rules=rules)

    async def delegate(self, intent: str, kit: Kit = None, params: dict[str, Any] | None = None,
                       sandbox: bool | None = None, rules: list[Rule] | None = None,
                       _program_override: str | None = None, mode: str | None = None,
                       interpreter: Any = None, extra_tools: list[str] | None = None
                       ) -> dict[str, Any]:
        """Generate a program for ``intent`` and run it; the documented result dict."""
        started = time.perf_counter()
        resolved = self._resolve_kit(kit, extra_tools)
        if _program_override is not None:
            generated = GenerationResult(_program_override, "override", 0.0)
        else:
            generated = await self.generate(intent, kit, params, rules, mode, interpreter,
                                            extra_tools)
        run_started = time.perf_counter()
        result = await self.run_program(generated.program, kit, params, sandbox, rules,
                                        extra_tools)
        execution_ms = _ms_since(run_started)
        self.record_outcome(generated, result)
        return {
            "success": result.success,
            "program": generated.program,
            "grade": {"w": resolved.grade.w, "d": resolved.grade.d},
            "generation_tier": generated.provider_name,
            "generation_time_ms": generated.generation_time_ms,
            "execution_time_ms": execution_ms,
            "total_time_ms": _ms_since(started),
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
        }

    async def create(self, program: str, kit: Kit = None, name: str = "",
                     pattern: str | None = None, extra_tools: list[str] | None = None
                     ) -> dict[str, Any]:
        """Validate ``program`` and save it as ``.lackpy/templates/<name>.tmpl``.

        Without ``pattern``, the intent that last produced this program (from the
        delegate history) becomes the pattern.
        """
        try:
            stem = check_template_name(name)
        except ValueError as exc:
            return {"success": False, "errors": [str(exc)]}
        if pattern is None:
            pattern = self._intent_for(program)
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
            return {"success": False, "errors": check.errors}
        path = self.config_dir / "templates" / f"{stem}.tmpl"
        try:
            text = format_template(stem, pattern, program)
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, text)
            parse_template(path)
        except (OSError, ValueError) as exc:
            return {"success": False, "errors": [str(exc)]}
        return {"success": True, "path": str(path), "pattern": pattern}

    def session(self, kit: Kit = None) -> LackpySession:
        """A new session (kit, parameters, persistent variables) on this service."""
        return LackpySession(self, kit)

    # -- lifecycle ------------------------------------------------------------

    def close(self) -> None:
        """Stop the sandbox worker, if one was started."""
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None

    def __enter__(self) -> LackpyService:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- internals ------------------------------------------------------------

    @property
    def sandbox_worker_pid(self) -> int | None:
        """The process id of the one-shot sandbox worker while it runs, else None."""
        return self._sandbox.worker_pid if self._sandbox is not None else None

    def sandbox_limits(self) -> SandboxLimits:
        """The configured per-program limits."""
        return SandboxLimits(self.config.sandbox_timeout, self.config.sandbox_memory_mb,
                             self.config.sandbox_max_result_mb)

    def _use_sandbox(self, requested: bool | None, resolved: ResolvedKit) -> bool:
        wanted = self.config.sandbox_enabled if requested is None else requested
        if not wanted:
            return False
        if not sandbox_supported():
            self._notice(f"no sandbox on {sys.platform}: programs run in this process, "
                         "without time or memory limits")
            return False
        custom = sorted(a for a, spec in resolved.tools.items() if spec.provider != "builtin")
        if custom:
            self._notice(f"tools {', '.join(custom)} are not built in, so programs using them "
                         "run in this process, without the sandbox's limits")
            return False
        return True

    def _notice(self, message: str) -> None:
        if message not in self.notices:
            self.notices.append(message)
            print(f"lackpy: {message}", file=sys.stderr)

    def _one_shot_sandbox(self) -> Sandbox:
        if self._sandbox is None:
            self._sandbox = self._new_sandbox()
        return self._sandbox

    def _new_sandbox(self) -> Sandbox:
        return Sandbox(self.workspace, self.sandbox_limits(), self.kits_dir)

    def record_generation(self, intent: str, generated: GenerationResult,
                          kit: Kit | ResolvedKit = None) -> None:
        """Remember which intent produced a program (so ``create`` can take it as the pattern),
        and with ``[inference] record = true`` append a model tier's program to the replay file."""
        resolved = kit if isinstance(kit, ResolvedKit) else self._resolve_kit(kit)
        tools = sorted({spec.name for spec in resolved.tools.values()})
        self._remember(intent, generated.program, tools, generated.provider_name)
        if self.config.inference_record and generated.from_model:
            record_generation(self.config_dir / REPLAY_FILE, intent, tools, generated.program,
                              generated.provider_name)

    def record_outcome(self, generated: GenerationResult, result: ExecutionResult) -> None:
        """Count a run of a template's program in that template's success or fail count."""
        if generated.kind == KIND_TEMPLATE and generated.source:
            try:
                update_counts(Path(generated.source), result.success)
            except (OSError, TemplateError) as exc:
                self._notice(f"could not count the run in {generated.source}: {exc}")

    def _remember(self, intent: str, program: str, tools: list[str], tier: str) -> None:
        path = self.config_dir / HISTORY_FILE
        entries = _read_history(path)[-(HISTORY_LIMIT - 1):]
        entries.append({"intent": intent, "program": program, "tools": tools, "tier": tier})
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, "".join(json.dumps(e) + "\n" for e in entries))
        except OSError as exc:
            self._notice(f"could not save the delegate history to {path}: {exc}")

    def _intent_for(self, program: str) -> str | None:
        wanted = _normalise(program)
        for entry in reversed(_read_history(self.config_dir / HISTORY_FILE)):
            if _normalise(entry.get("program", "")) == wanted:
                return entry.get("intent")
        return None


class LackpySession:
    """A notebook's session: a kit, parameters, and variables kept from one program to the next.

    Programs run in a sandbox worker that holds the variables, or in this
    process where the sandbox is off or missing; a session keeps to the place
    its first program ran, so its variables never split in two. A program that
    fails, however it fails (an interrupt included), leaves the variables
    exactly as they were.
    """

    def __init__(self, service: LackpyService, kit: Kit = None) -> None:
        self.service = service
        self.kit: Kit = service.config.kit_default if kit is None else kit
        self.params: dict[str, Any] = {}
        self.last_result: ExecutionResult | None = None
        self.running_here = False  # True while a program runs in this process (see run)
        self._sandboxed: bool | None = None  # where programs run, fixed by the first one
        self._sandbox: Sandbox | None = None
        self._variables: dict[str, Any] = {}  # in-process sessions only

    def resolved_kit(self, kit: Kit = None) -> ResolvedKit:
        """The session's kit (or ``kit``), resolved."""
        return self.service._resolve_kit(self.kit if kit is None else kit)

    def set_kit(self, kit: Kit) -> ResolvedKit:
        """Use ``kit`` from now on; it must resolve (errors name the kit or tool)."""
        resolved = self.service._resolve_kit(kit)
        self.kit = kit
        return resolved

    @property
    def variable_types(self) -> dict[str, str]:
        """The session's variables: name -> type name."""
        if self._sandbox is not None:
            return dict(self._sandbox.variable_types)
        return {name: type(value).__name__ for name, value in self._variables.items()}

    def known_names(self) -> set[str]:
        """Every name a program may use besides the builtins: tools, parameters, variables."""
        return {*self.resolved_kit().callables, *self.params, *self.variable_types}

    def validate(self, program: str, rules: list[Rule] | None = None, kit: Kit = None
                 ) -> ValidationResult:
        """Validate against the kit, the parameters and the session's variables."""
        resolved = self.resolved_kit(kit)
        return _validate_for(program, resolved, {*self.params, *self.variable_types}, rules)

    async def run(self, program: str, rules: list[Rule] | None = None, kit: Kit = None
                  ) -> ExecutionResult:
        """Validate and run ``program`` (with the session's kit, or ``kit``).

        In the sandbox, cancelling the await stops the program. In this process
        the program runs on the caller's thread: the caller stops it by raising
        KeyboardInterrupt there while ``running_here`` is true (the kernel does).
        """
        resolved = self.resolved_kit(kit)
        check = _validate_for(program, resolved, {*self.params, *self.variable_types}, rules)
        if not check.valid:
            result = validation_failure(check.issues)
        elif (mismatch := self._place_for(resolved)) is not None:
            result = ExecutionResult(False, error=mismatch, error_type="KitError")
        elif self._sandboxed:
            box = self._session_sandbox()
            aliases = {alias: spec.name for alias, spec in resolved.tools.items()}
            result = await _in_thread(box.run, box.interrupt, program, aliases, dict(self.params))
        else:
            result = self._run_here(program, resolved, rules)
        self.last_result = result
        return result

    def _place_for(self, resolved: ResolvedKit) -> str | None:
        """Why this kit cannot run where the session runs programs, or None."""
        sandboxed = self.service._use_sandbox(None, resolved)
        if self._sandboxed is None:
            self._sandboxed = sandboxed
        if sandboxed == self._sandboxed:
            return None
        where = "in the sandbox" if self._sandboxed else "in this process"
        return (f"this session runs its programs {where}, and this kit's tools cannot run "
                "there; use it in a new session (restart the kernel), or keep to built-in tools")

    def _run_here(self, program: str, resolved: ResolvedKit, rules: list[Rule] | None
                  ) -> ExecutionResult:
        scratch = copy.deepcopy(self._variables)  # a failed program must not change them
        self.running_here = True
        try:
            result = RestrictedRunner().run(program, resolved.callables, self.params, scratch,
                                            rules)
        except KeyboardInterrupt:
            return ExecutionResult(False, error="interrupted: the program was stopped before "
                                   "it finished", error_type="KeyboardInterrupt")
        finally:
            self.running_here = False
        if result.success:
            self._variables = result.variables
        return result

    def _session_sandbox(self) -> Sandbox:
        if self._sandbox is None:
            self._sandbox = self.service._new_sandbox()
        return self._sandbox

    def reset(self) -> None:
        """Forget the session's variables (the kit and parameters stay)."""
        self._variables = {}
        if self._sandbox is not None:
            self._sandbox.reset()

    def close(self) -> None:
        """Stop the session's worker."""
        if self._sandbox is not None:
            self._sandbox.close()
            self._sandbox = None


def _validate_for(program: str, resolved: ResolvedKit, names: set[str],
                  rules: list[Rule] | None) -> ValidationResult:
    """Validate against a kit's tools plus ``names``, refusing assignments to the tools."""
    return validate(program, {*resolved.callables, *names},
                    [no_rebinding(resolved.callables), *(rules or [])])


def _read_history(path: Path) -> list[dict[str, Any]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    entries = []
    for line in lines:
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def _normalise(program: str) -> str:
    try:
        return ast.dump(ast.parse(program))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return program.strip()


def _spec_dict(spec: Any) -> dict[str, Any]:
    return {
        "name": spec.name, "provider": spec.provider, "description": spec.description,
        "args": [vars(arg) for arg in spec.args], "returns": spec.returns,
        "grade_w": spec.grade_w, "effects_ceiling": spec.effects_ceiling, "docs": spec.docs,
    }


async def _in_thread(call: Any, interrupt: Any, *args: Any, **kwargs: Any) -> Any:
    """Run a blocking sandbox call in a thread; cancelling the await stops the program."""
    task = asyncio.ensure_future(asyncio.to_thread(call, *args, **kwargs))
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        if task.done() and not task.cancelled() and task.exception() is None:
            return task.result()  # it finished as the interrupt came: its result stands
        interrupt()
        await asyncio.wait([task], timeout=5)
        raise


def _ms_since(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
