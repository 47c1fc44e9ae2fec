"""How a step runs on this machine: lackpy through the LackpyService, callables in Python."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import time
from collections.abc import Callable
from typing import Any, Protocol

from lackpy_kernel.errors import LackpyError
from lackpy_kernel.kit import Kit
from lackpy_kernel.kit.changes import Change
from lackpy_kernel.kit.workspace import Workspace
from lackpy_kernel.run import ExecutionResult
from lackpy_kernel.service import DelegateOptions, LackpyService
from lackpy_kernel.telemetry import traced_step

from ._compiler import kit_tools
from ._envelope import ErrorInfo, StepResult, error_info
from ._evaluate import type_problem
from ._ledger import ChangePaused, Ledger, change_digest
from ._step import Delegate, Program, Step, target_kind

__all__ = ["ServiceExecutor", "StepExecutor"]


class StepExecutor(Protocol):
    """Runs one step with its inputs. A failure comes back as a StepResult with ``error``;
    ``PlanPaused`` raised by the step propagates."""

    async def execute(self, step: Step, task: Any, context: Any) -> StepResult: ...


class ServiceExecutor:
    """Runs steps here: a Program with ``run_program`` (validated again, under the sandbox's
    limits), a Delegate with ``delegate`` (through the ratchet), a tool name as the one-line
    program ``tool(task)``, a callable directly (a sync one in a worker thread).

    ``service`` is called for the LackpyService the first time a step needs one; ``kit`` is
    the plan's kit, for tool steps and for programs that name none.

    With a ``ledger`` (a checkpointed run, which can be resumed), a program's file change
    (``[sandbox] approve = "write"``) lands only when ``approved`` holds its digest under the
    step's name (once), recorded in the ledger first; otherwise the step raises
    ``ChangePaused`` carrying it, nothing written. Where ``approve = "never"`` it lands
    unasked, still recorded first (a Delegate step's with its program). A step whose
    recorded change landed runs again dry (see ``_ledger``). Without a ledger the change is
    refused, naming the config.
    """

    def __init__(self, service: Callable[[], LackpyService], kit: Kit = None) -> None:
        self._service = service
        self.kit = kit
        self._kits: dict[str, dict[str, str]] = {}
        self.ledger: Ledger | None = None
        self.approved: dict[str, str] = {}

    @traced_step
    async def execute(self, step: Step, task: Any, context: Any) -> StepResult:
        """Run ``step`` with ``task`` and ``context``; see the class docstring."""
        problem = type_problem(task, step.input)
        if problem is not None:
            return StepResult(step.name, error=ErrorInfo(
                "TypeError", f"step {step.name!r} takes input={_type_name(step.input)}, and its "
                             f"task is not one: {problem}"))
        started = time.perf_counter()
        kind = target_kind(step.target)
        if kind == "callable":
            result = await self._call(step, task, context)
        else:
            program, outcome = await self._run_lackpy(step, task, context)
            result = _from_execution(step.name, program, outcome)
        result.ms = round((time.perf_counter() - started) * 1000, 3)
        problem = type_problem(result.output, step.output) if result.ok else None
        if problem is not None:
            result.error = ErrorInfo("TypeError", f"step {step.name!r} should output "
                                                  f"{_type_name(step.output)}, and {problem}")
        return result

    def fingerprint(self, step: Step) -> str:
        """A hash of what the step runs: its program text (or intent, tool, callable name) and
        its kit's tools, so a resume can tell that a completed step changed."""
        target = step.target
        kind = target_kind(target)
        if kind == "callable":
            what: dict[str, Any] = {"callable": getattr(target, "__qualname__", step.name)}
        elif kind == "approval":
            what = {"prompt": target.prompt}
        else:
            what = {"program": target.source} if kind == "program" else (
                {"intent": target.intent} if kind == "delegate" else {"tool": target})
            what["kit"] = self._kit_tools(self._kit_for(step))
        text = json.dumps({"kind": kind, **what}, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]

    # -- lackpy targets ---------------------------------------------------------

    async def _run_lackpy(self, step: Step, task: Any, context: Any
                          ) -> tuple[str | None, ExecutionResult | LackpyError]:
        service = self._service()
        params = {"task": task, "context": context}
        kit = self._kit_for(step)
        target = step.target
        try:
            if isinstance(target, Delegate):
                return await self._delegate(step.name, target.intent, kit, params, service)
            program = target.source if isinstance(target, Program) else f"{target}(task)"
            if not isinstance(target, Program):
                params = {"task": task}
            workspace = Workspace(service.workspace)
            pending = self.ledger.pending(step.name, workspace) if self.ledger else None
            if pending is not None and pending[1]:
                # its commit landed before the run died: only its output is wanted again
                return program, await service.run_program(program, kit, params, dry=True)
            if pending is not None:  # approved before the run died, and not landed
                self.approved.setdefault(step.name, pending[0])
            asked: list[Change] = []
            approve = self._approver(step.name, workspace, asked, service.runs.asks_writes) \
                if self.ledger else None
            # with a ledger every change is seen before it lands, to be recorded
            outcome = await service.run_program(program, kit, params, approve=approve,
                                                ask=True if self.ledger else None)
            if asked:
                raise ChangePaused(step.name, asked[0])
            return program, outcome
        except LackpyError as exc:  # a kit that went away, no tier could write a program
            return None, exc

    async def _delegate(self, step: str, intent: str, kit: Kit, params: dict[str, Any],
                        service: LackpyService) -> tuple[str, ExecutionResult]:
        """The program written for ``intent`` and its run. With a ledger and no person to ask
        (``approve = "never"``), its change is recorded with the program before it lands,
        and a step whose recorded change landed runs that program again dry."""
        ledger = None if service.runs.asks_writes else self.ledger
        if ledger is None:
            written = await service.delegation(intent, DelegateOptions(kit=kit, params=params))
            return written.program, written.result or ExecutionResult(True)  # nothing held it
        workspace = Workspace(service.workspace)
        pending, ran = ledger.pending(step, workspace), ledger.program(step)
        if pending is not None and pending[1] and ran is not None:
            return ran, await service.run_program(ran, kit, params, dry=True)
        delegation = await service.delegation(intent, DelegateOptions(kit=kit, params=params,
                                                                      run=False))
        started = time.perf_counter()
        approve = self._approver(step, workspace, [], False, delegation.program)
        result = await service.run_program(delegation.program, kit, params, approve=approve,
                                           ask=True, unseen=True)
        service.record_run(delegation, result, started)
        return delegation.program, result

    def _approver(self, step: str, workspace: Workspace, asked: list[Change], person: bool,
                  program: str | None = None) -> Callable[[Change], bool]:
        """Lets the change ``approved`` holds for ``step`` land (recorded first), or a call
        the ledger allows it run, else keeps the change in ``asked`` and declines it; without
        a ``person`` to ask (``approve = "never"``), lets every change land, its files (and
        the ``program`` making it, when given) recorded first."""
        def approve(change: Change) -> bool:
            ledger = self.ledger
            if ledger is None or not person:
                if ledger is not None and change.call is None:
                    ledger.record(step, change, workspace, program)
                return True
            digest = change_digest(change)
            if change.call is not None and digest in ledger.allowed(step):
                return True
            if self.approved.get(step) != digest:
                asked.append(change)
                return False
            del self.approved[step]
            if change.call is not None:
                ledger.allow(step, change)
            else:
                ledger.record(step, change, workspace)
            return True
        return approve

    def _kit_for(self, step: Step) -> Kit:
        own = getattr(step.target, "kit", None)
        return own if own is not None else self.kit

    def _kit_tools(self, kit: Kit) -> dict[str, str]:
        key = json.dumps(kit, sort_keys=True)
        if key not in self._kits:
            try:
                self._kits[key] = kit_tools(self._service(), kit)
            except LackpyError:
                self._kits[key] = {}
        return self._kits[key]

    # -- callables --------------------------------------------------------------

    async def _call(self, step: Step, task: Any, context: Any) -> StepResult:
        function = step.target
        extra = {"context": context} if step.context is not None else {}
        try:
            if inspect.iscoroutinefunction(function):
                output = await function(task, **extra)
            else:
                output = await asyncio.to_thread(function, task, **extra)
            if inspect.isawaitable(output):
                output = await output
        except Exception as exc:  # the step's own failure: the run reports it as a value
            return StepResult(step.name, error=error_info(exc))
        return StepResult(step.name, output)


def _from_execution(name: str, program: str | None,
                    outcome: ExecutionResult | LackpyError) -> StepResult:
    if isinstance(outcome, LackpyError):
        return StepResult(name, program=program, error=error_info(outcome))
    error = None
    try:
        outcome.raise_for_error()
    except LackpyError as exc:
        error = error_info(exc)
    return StepResult(name, outcome.output if error is None else None, program,
                      trace=list(outcome.trace.entries), error=error)


def _type_name(kind: Any) -> str:
    return getattr(kind, "__name__", None) or repr(kind)
