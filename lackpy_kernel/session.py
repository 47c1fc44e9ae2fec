"""LackpySession: a notebook's lackpy session, the kernel's whole cell and delegate sequence.

A session holds a kit, parameters and the variables kept from one program to the
next. ``run`` validates and runs a cell's program; ``delegate`` has the inference
tiers write one and, when asked, runs it in the session. It uses only the service's
public API, so a second surface (the IPython extension, a plan) can do the same.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from lackpy_kernel.errors import UsageError
from lackpy_kernel.execution import HerePlace, WorkerPlace, validate_for
from lackpy_kernel.kit import Kit, ResolvedKit
from lackpy_kernel.lang import Rule, ValidationResult
from lackpy_kernel.run import ExecutionResult
from lackpy_kernel.run.kernel_side import Approver
from lackpy_kernel.service import (
    DELEGATE,
    DelegateOptions,
    Delegation,
    KitOrResolved,
    LackpyService,
    NotebookContext,
)

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
        self._place: WorkerPlace | HerePlace | None = None  # where programs run, from the first
        self.name = os.urandom(8).hex()  # its one-shot runs share a warm process (run_once)

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
        place = self._place
        if isinstance(place, WorkerPlace):
            return dict(place.sandbox.variable_types)
        values = place.variables if place is not None else None
        return {name: type(value).__name__ for name, value in (values or {}).items()}

    def known_names(self, resolved: ResolvedKit | None = None) -> set[str]:
        """Every name a program may use besides the builtins: tools (of ``resolved``, else of
        the session's kit), parameters, variables.

        Raises KitError when the session's kit cannot be resolved.
        """
        tools = (resolved if resolved is not None else self.resolved_kit()).callables
        return {*tools, *self.params, *self.variable_types}

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

    async def delegate(self, intent: str, options: DelegateOptions = DELEGATE, *,
                       run: bool = False, approved: bool = False) -> Delegation:
        """Have the inference tiers write a program for ``intent`` (see ``DelegateOptions``:
        ``kit``, ``params`` joining the session's for this call, ``rules``, ``on_event``);
        with ``run``, run it in this session (its variables kept as for a cell) when it is
        within ``[delegate] auto_run`` or the user ``approved`` it, else hold it
        (``Delegation.held`` says why). The program may use the session's variables (see
        ``context``); ``Delegation.uses`` lists those it reads.

        ``options.variables``, a Python notebook's values, take the session's place: the
        program may read them, and runs once with those it reads as parameters
        (``options.sandbox`` False: in this process), leaving the session's variables alone.

        Raises GenerationError when no provider writes a valid program, KitError for a bad
        kit, UsageError for ``sandbox`` without ``variables`` (a session's programs run where
        its first ran).
        """
        resolved = self.resolved_kit(options.kit)
        given = {**self.params, **(options.params or {})}
        options = replace(options, kit=resolved, params=given, run=run, ask=not approved,
                          approve=self.approve)
        if options.variables is not None:
            delegation = await self.service.delegation(intent, options)
            if delegation.result is not None:
                self.last_result = delegation.result
            return delegation
        if options.sandbox is not None:
            raise UsageError("this session's programs run where its first program ran; "
                             "--no-sandbox is for a Python notebook's %delegate")
        delegation = await self.service.draft(intent, options, self.context())
        if delegation.runs:
            started = time.perf_counter()
            self.service.record_run(delegation, await self._run_checked(
                delegation.program, resolved, list(options.rules or ()), given, unseen=True),
                started)
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
                                                sandbox=sandbox, approve=self.approve,
                                                session=self.name)
        return self._finish(result)

    def context(self) -> NotebookContext:
        """The session's variables as a generated program may use them: their names, and
        a description for the prompt as ``[delegate] context`` asks (previews, names or
        none). A sandboxed session's worker describes its own values."""
        names = frozenset(self.variable_types)
        mode = self.service.config.delegate_context
        place = self._place
        if mode == "none" or not names:
            return NotebookContext(names)
        if isinstance(place, WorkerPlace):
            description = place.sandbox.describe_variables(previews=mode == "previews")
            return NotebookContext(names, description or None)
        return NotebookContext.of_values(place.variables or {} if place else {}, mode)

    def start(self) -> None:
        """Start the sandbox worker in the background if this session's programs will run
        there, so that the first finds it ready; returns at once."""
        place = self._own_place()
        if isinstance(place, WorkerPlace):
            place.sandbox.start()

    def reset(self) -> None:
        """Forget the session's variables (the kit and parameters stay)."""
        if isinstance(self._place, WorkerPlace):
            self._place.sandbox.reset()
        elif self._place is not None:
            self._place.variables = {}

    def close(self) -> None:
        """Stop the session's worker."""
        if isinstance(self._place, WorkerPlace):
            self._place.sandbox.close()
            self._place = None

    # -- internals ------------------------------------------------------------

    async def _run_checked(self, program: str, resolved: ResolvedKit, rules: list[Rule] | None,
                           params: dict[str, Any] | None = None, *,
                           unseen: bool = False) -> ExecutionResult:
        """Run ``program`` in this session (``unseen``: a model wrote it and nobody has seen it
        run, so it gets a walled process of its own, replaced after it)."""
        runs = self.service.runs
        spec = runs.spec(program, resolved, params=self.params if params is None else params,
                         rules=rules, names=self.variable_types, approve=self.approve,
                         unseen=unseen)
        try:
            result = await runs.run(spec, self._own_place())
        except KeyboardInterrupt:
            result = _interrupted()
        return self._finish(result)

    def _validate(self, program: str, resolved: ResolvedKit, rules: list[Rule] | None,
                  params: dict[str, Any] | None = None) -> ValidationResult:
        names = {*(self.params if params is None else params), *self.variable_types}
        with self._here():  # a long validation can be interrupted like a program
            return validate_for(program, resolved, names, rules)

    @contextmanager
    def _here(self) -> Iterator[None]:
        """While this thread validates or runs a program here: ``running_here`` is true;
        raises KeyboardInterrupt for a stop requested before (``stop_requested``, which the
        caller sets when its stop came while nothing ran here yet, and clears per cell)."""
        self.running_here = True
        try:
            if self.stop_requested:
                raise KeyboardInterrupt
            yield
        finally:
            self.running_here = False

    def _finish(self, result: ExecutionResult) -> ExecutionResult:
        self.last_result = result
        return result

    def _own_place(self) -> WorkerPlace | HerePlace:
        """Where this session's programs run: decided by its first, and kept."""
        if self._place is None:
            runs = self.service.runs
            self._place = (runs.worker(self._here) if runs.sandboxed()
                           else runs.here(variables={}, guard=self._here))
        return self._place


def _interrupted() -> ExecutionResult:
    return ExecutionResult(False, error=INTERRUPTED, error_type="KeyboardInterrupt")
