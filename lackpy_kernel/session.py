"""LackpySession: a notebook's lackpy session, the kernel's whole cell and delegate sequence.

A session holds a kit, parameters and the variables kept from one program to the
next. ``run`` validates and runs a cell's program; ``delegate`` has the inference
tiers write one and, when asked, runs it in the session. It uses only the service's
public API, so a second surface (the IPython extension, a plan) can do the same.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping
from typing import Any

from lackpy_kernel.errors import UsageError
from lackpy_kernel.infer import GenerationEvent
from lackpy_kernel.kit import Kit, ResolvedKit
from lackpy_kernel.lang import Rule, ValidationResult
from lackpy_kernel.run import ExecutionResult, RestrictedRunner, Sandbox, validation_failure
from lackpy_kernel.run.kernel_side import Approver
from lackpy_kernel.service import (
    Delegation,
    KitOrResolved,
    LackpyService,
    NotebookContext,
    trace_sources,
    validate_for,
)
from lackpy_kernel.telemetry import traced_run

__all__ = ["Delegation", "LackpySession"]

INTERRUPTED = "interrupted: the program was stopped before it finished"


class LackpySession:
    """A notebook's session: a kit, parameters, and variables kept from one program to the next.

    Programs run in a sandbox worker that holds the variables, whatever tools
    they call, or in this process where the sandbox is off or missing; a
    session keeps to the place its first program ran, so its variables never
    split in two. A program that fails, however it fails (an interrupt
    included), leaves the variables exactly as they were.

    ``approve`` (see ``Approver``), set by the host, is asked before a program's file
    changes land where ``[sandbox] approve = "write"``; without one they are refused.
    """

    def __init__(self, service: LackpyService, kit: Kit = None) -> None:
        self.service = service
        self.kit: Kit = service.config.kit_default if kit is None else kit
        self.params: dict[str, Any] = {}
        self.last_result: ExecutionResult | None = None
        self.running_here = False  # True while this thread validates or runs a program (see run)
        self.stop_requested = False  # a stop that came before running_here (see _here)
        self.approve: Approver | None = None
        self._sandboxed: bool | None = None  # where programs run, fixed by the first one
        self._sandbox: Sandbox | None = None
        self._variables: dict[str, Any] = {}  # in-process sessions only

    def resolved_kit(self, kit: KitOrResolved = None) -> ResolvedKit:
        """The session's kit (or ``kit``), resolved; raises KitError."""
        return self.service.resolve_kit(self.kit if kit is None else kit)

    def set_kit(self, kit: Kit) -> ResolvedKit:
        """Use ``kit`` from now on; raises KitError (naming the kit or tool) if it does not resolve."""
        resolved = self.service.resolve_kit(kit)
        self.kit = kit
        return resolved

    @property
    def variable_types(self) -> dict[str, str]:
        """The session's variables: name -> type name."""
        if self._sandbox is not None:
            return dict(self._sandbox.variable_types)
        return {name: type(value).__name__ for name, value in self._variables.items()}

    def known_names(self) -> set[str]:
        """Every name a program may use besides the builtins: tools, parameters, variables.

        Raises KitError when the session's kit cannot be resolved.
        """
        return {*self.resolved_kit().callables, *self.params, *self.variable_types}

    def validate(self, program: str, rules: list[Rule] | None = None,
                 kit: KitOrResolved = None, *,
                 params: dict[str, Any] | None = None) -> ValidationResult:
        """Validate against the kit, the parameters (``params`` in place of the session's)
        and the session's variables; raises KitError."""
        return self._validate(program, self.resolved_kit(kit), rules, params)

    async def run(self, program: str, rules: list[Rule] | None = None,
                  kit: KitOrResolved = None) -> ExecutionResult:
        """Validate and run ``program`` (with the session's kit, or ``kit``).

        Returns the result, failed for an invalid program, a runtime error or a limit;
        raises KitError when the kit cannot be resolved. In the sandbox, cancelling the
        await stops the program. In this process the program runs on the caller's thread:
        the caller stops it by raising KeyboardInterrupt there while ``running_here`` is
        true (the kernel does); validation, which always runs here, stops the same way.
        """
        return await self._run_checked(program, self.resolved_kit(kit), rules)

    async def delegate(self, intent: str, *, kit: KitOrResolved = None, run: bool = False,
                       approved: bool = False, params: dict[str, Any] | None = None,
                       rules: list[Rule] | None = None,
                       on_event: Callable[[GenerationEvent], None] | None = None,
                       variables: Mapping[str, Any] | None = None,
                       sandbox: bool | None = None) -> Delegation:
        """Have the inference tiers write a program for ``intent``; with ``run``, run it in
        this session (its variables kept as for a cell) when it is within ``[delegate]
        auto_run`` or the user ``approved`` it, else hold it (``Delegation.held`` says why).
        ``params`` join the session's parameters for this call; ``on_event`` receives the
        generation's progress events. The program may use the session's variables (see
        ``context``); ``Delegation.uses`` lists those it reads.

        ``variables``, a Python notebook's values, take the session's place: the program
        may read them, and runs once with those it reads as parameters (``sandbox`` False:
        in this process), leaving the session's variables alone.

        Raises GenerationError when no provider writes a valid program, KitError for a bad
        kit, UsageError for ``sandbox`` without ``variables`` (a session's programs run where
        its first ran).
        """
        resolved = self.resolved_kit(kit)
        given = {**self.params, **(params or {})}
        if variables is not None:
            delegation = await self.service.delegation(
                intent, resolved, given, run=run, ask=not approved, sandbox=sandbox,
                rules=rules, on_event=on_event, variables=variables, approve=self.approve)
            if delegation.result is not None:
                self.last_result = delegation.result
            return delegation
        if sandbox is not None:
            raise UsageError("this session's programs run where its first program ran; "
                             "--no-sandbox is for a Python notebook's %delegate")
        delegation = await self.service.write(intent, resolved, given, run=run,
                                              ask=not approved, rules=rules,
                                              on_event=on_event, context=self.context())
        if delegation.runs:
            started = time.perf_counter()
            self.service.ran(delegation, await self._run_checked(delegation.program, resolved,
                                                                 rules, given), started)
        return delegation

    async def run_once(self, program: str, *, kit: KitOrResolved = None,
                       params: dict[str, Any] | None = None,
                       sandbox: bool | None = None) -> ExecutionResult:
        """Run ``program`` once, apart from the session's variables, with ``params`` in
        place of the session's parameters (``sandbox`` False: in this process); the result
        is the session's ``last_result``. Returns a failed result as ``run`` does; raises
        KitError."""
        result = await self.service.run_program(program, self.resolved_kit(kit),
                                                self.params if params is None else params,
                                                sandbox=sandbox, approve=self.approve)
        return self._finish(result)

    def context(self) -> NotebookContext:
        """The session's variables as a generated program may use them: their names, and
        a description for the prompt as ``[delegate] context`` asks (previews, names or
        none). A sandboxed session's worker describes its own values."""
        names = frozenset(self.variable_types)
        mode = self.service.config.delegate_context
        if mode == "none" or not names:
            return NotebookContext(names)
        if self._sandbox is not None:
            description = self._sandbox.describe_variables(previews=mode == "previews")
            return NotebookContext(names, description or None)
        return NotebookContext.of_values(self._variables, mode)

    def start(self) -> None:
        """Start the sandbox worker in the background if this session's programs will run
        there, so that the first finds it ready; returns at once."""
        if self._runs_sandboxed():
            self._session_sandbox().start()

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

    # -- internals ------------------------------------------------------------

    async def _run_checked(self, program: str, resolved: ResolvedKit, rules: list[Rule] | None,
                           params: dict[str, Any] | None = None) -> ExecutionResult:
        try:
            check = self._validate(program, resolved, rules, params)
        except KeyboardInterrupt:
            return self._finish(_interrupted())
        return await self._run_resolved(program, resolved, check, params)

    def _validate(self, program: str, resolved: ResolvedKit, rules: list[Rule] | None,
                  params: dict[str, Any] | None = None) -> ValidationResult:
        names = {*(self.params if params is None else params), *self.variable_types}
        try:
            self._here()  # a long validation can be interrupted like a program
            return validate_for(program, resolved, names, rules)
        finally:
            self.running_here = False

    def _here(self) -> None:
        """Say this thread now validates or runs here (``running_here``); raises
        KeyboardInterrupt for a stop requested before (``stop_requested``, which the
        caller sets when its stop came while nothing ran here yet, and clears per cell)."""
        self.running_here = True
        if self.stop_requested:
            raise KeyboardInterrupt

    @traced_run
    async def _run_resolved(self, program: str, resolved: ResolvedKit, check: ValidationResult,
                            params: dict[str, Any] | None = None) -> ExecutionResult:
        params = self.params if params is None else params
        refused = self.service.kibitzer_refusal(check, resolved) if check.valid else None
        if not check.valid:
            result = validation_failure(check.issues)
        elif refused is not None:
            result = refused
        elif self._runs_sandboxed():
            result = self.service.kibitzer_heard(await self._session_sandbox().run_async(
                program, self.service.kibitzer_kit(resolved), dict(params), approve=self.approve))
        else:
            result = await self._run_here(program, check, resolved, params)
        return self._finish(result)

    def _finish(self, result: ExecutionResult) -> ExecutionResult:
        self.last_result = result
        return result

    def _runs_sandboxed(self) -> bool:
        """Whether this session's programs run in the sandbox (decided once)."""
        if self._sandboxed is None:
            self._sandboxed = self.service.sandbox_applies()
        return self._sandboxed

    async def _run_here(self, program: str, check: ValidationResult, resolved: ResolvedKit,
                        params: dict[str, Any]) -> ExecutionResult:
        scratch = copy.deepcopy(self._variables)  # a failed program must not change them
        runner = RestrictedRunner(max_tool_calls=self.service.config.sandbox_max_tool_calls)
        stage = self.service.stage_here()
        try:
            try:
                self._here()
                result = self.service.kibitzer_heard(stage.run(lambda: runner.run_validated(
                    program, check,
                    self.service.callables_here(
                        self.service.kibitzer_kit(resolved, here=True), self.approve),
                    params, scratch, sources=trace_sources(resolved))))
            except KeyboardInterrupt:
                return _interrupted()
            finally:
                self.running_here = False
            result = await stage.settle(result, ask=self.service.approves_writes,
                                        approve=self.approve)
        finally:
            stage.discard()
        if result.success:
            self._variables = result.variables
        return result

    def _session_sandbox(self) -> Sandbox:
        if self._sandbox is None:
            self._sandbox = self.service.new_sandbox()
        return self._sandbox


def _interrupted() -> ExecutionResult:
    return ExecutionResult(False, error=INTERRUPTED, error_type="KeyboardInterrupt")
