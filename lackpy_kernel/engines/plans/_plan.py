"""Plan: steps run in order, in parallel bands and along routes, with checkpoints in a Store."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from lackpy_kernel.errors import (
    PlanCompileError,
    PlanPaused,
    PlanRuntimeError,
    UsageError,
)
from lackpy_kernel.kit import Kit
from lackpy_kernel.run import summarize
from lackpy_kernel.service import LackpyService

from ..loop import run_sync
from ._checkpoint import Checkpointer, is_checkpoint
from ._compiler import compile_steps
from ._envelope import Envelope, ErrorInfo, StepResult, error_info
from ._evaluate import Evaluator, PlanState, pause_error
from ._execute import ServiceExecutor, StepExecutor
from ._ledger import ChangePaused
from ._serialise import PLAN_FORMAT, step_from_dict, step_to_dict
from ._step import Approval, Step, target_label
from ._store import Store

__all__ = ["Plan", "ProgressCallback", "TaskCallback"]

# on_step(step name, status, ms): status is running, done, failed or paused; ms once it ended.
ProgressCallback = Callable[[str, str, float | None], None]
# on_task(index in tasks, its Envelope once it ended else None, ms once it ended).
TaskCallback = Callable[[int, Envelope | None, float | None], None]
_ON_CONCURRENT = ("fail", "fork")


class Plan:
    """Steps run in order: one by one, consecutive ``parallel=True`` steps as one band, and
    along ``routes`` (loops included, up to ``max_iterations`` steps or bands).

    Steps run lackpy through a LackpyService (``service=``, else one for the current
    directory): tool names resolve in ``kit`` (default: the config's), as do programs and
    intents that name no kit. Every check runs here, at construction: a plan that cannot run
    raises PlanCompileError, never later.

    With ``store`` and ``checkpoint_key`` the run checkpoints after every step or band, in
    the same Store transaction as that step's ``writes`` (so a write is applied exactly
    once, whenever the process dies). ``resume=True`` continues a paused, failed or dead
    run where it stopped; it refuses (PlanResumeError) when a completed step's program or
    kit changed. ``on_concurrent="fail"`` raises ConcurrentPlanRunError when a live run
    holds the key; ``"fork"`` gives each run the key ``f"{checkpoint_key}:{run_uid}"``.
    """

    def __init__(self, *steps: Step, kit: Kit = None, max_iterations: int = 100,
                 store: Store | None = None, checkpoint_key: str | None = None,
                 resume: bool = False, on_concurrent: str = "fail", name: str | None = None,
                 service: LackpyService | None = None) -> None:
        _check_options(max_iterations, store, checkpoint_key, resume, on_concurrent)
        self.steps = list(steps)
        self.kit = kit
        self.max_iterations = max_iterations
        self.store = store
        self.checkpoint_key = checkpoint_key
        self.resume = resume
        self.on_concurrent = on_concurrent
        self.name = name
        self._service = service
        self._own_service: LackpyService | None = None
        self._own_users = 0
        self._own_lock = threading.Lock()
        compile_steps(self.steps, kit=kit, service=self._construction_service,
                      checkpoint_key=checkpoint_key)
        self._evaluator = Evaluator(self.steps, max_iterations)

    def __repr__(self) -> str:
        names = ", ".join(step.name for step in self.steps)
        return f"<Plan {self.name or ''}{' ' if self.name else ''}[{names}]>"

    # -- running ----------------------------------------------------------------

    def run(self, task: Any = None, *, service: LackpyService | None = None,
            on_step: ProgressCallback | None = None, approve: bool = False) -> Envelope:
        """Run the plan on ``task`` and return its Envelope; safe inside a running event loop
        (a notebook). See ``arun``."""
        return run_sync(self.arun(task, service=service, on_step=on_step, approve=approve))

    async def arun(self, task: Any = None, *, service: LackpyService | None = None,
                   on_step: ProgressCallback | None = None, approve: bool = False) -> Envelope:
        """Run the plan on ``task``; the Envelope's ``error`` says why it stopped, if it did.

        A step's failure, a pause (``PlanPaused``) and ``max_iterations`` come back as the
        Envelope's error. Raises ConcurrentPlanRunError (the key is held), PlanResumeError
        (the checkpoint does not fit), PlanRuntimeError (a bug in the plan: a route
        predicate raised). On resume, ``task=None`` means the checkpoint's task. Cancelling
        the await (an interrupt) checkpoints the run as paused. ``on_step(name, status, ms)``
        hears of each step as it starts and ends.

        Where ``[sandbox] approve = "write"``, a step whose program changes files pauses
        the run carrying the change, nothing written; resuming with ``approve=True`` lets
        exactly that change land (a step that now makes another change pauses again).
        """
        with self._using_service(service) as chosen:
            return await self._execute(task, chosen, on_step, restart=False, approve=approve)

    def restart(self, task: Any = None, *, service: LackpyService | None = None,
                on_step: ProgressCallback | None = None) -> Envelope:
        """Start the checkpointed run over from its first step (``task=None``: the
        checkpoint's task), whatever state it stopped in; see ``arestart``."""
        return run_sync(self.arestart(task, service=service, on_step=on_step))

    async def arestart(self, task: Any = None, *, service: LackpyService | None = None,
                       on_step: ProgressCallback | None = None) -> Envelope:
        """Async ``restart``. Raises UsageError without a store and checkpoint key (or in fork
        mode), ConcurrentPlanRunError while a live run holds the key."""
        if self.store is None or self.checkpoint_key is None or self.on_concurrent == "fork":
            raise UsageError("restart needs a plan with store= and checkpoint_key= "
                             "(on_concurrent='fail'): there is no checkpoint to start over")
        with self._using_service(service) as chosen:
            return await self._execute(task, chosen, on_step, restart=True)

    def run_many(self, tasks: Sequence[Any], *, concurrency: int | None = None,
                 service: LackpyService | None = None) -> list[Envelope]:
        """Run the plan on each task, at most ``concurrency`` at once; see ``arun_many``."""
        return run_sync(self.arun_many(tasks, concurrency=concurrency, service=service))

    async def arun_many(self, tasks: Sequence[Any], *, concurrency: int | None = None,
                        service: LackpyService | None = None,
                        on_task: TaskCallback | None = None) -> list[Envelope]:
        """One Envelope per task, in the order of ``tasks``; never raises for a run's failure:
        an error (a held key included) is the error of that task's Envelope. Pair it with
        ``on_concurrent="fork"`` so each task claims its own checkpoint key. ``on_task(i,
        envelope, ms)`` hears when task ``i`` starts (None, None) and ends."""
        if concurrency is not None and (not isinstance(concurrency, int) or concurrency < 1):
            raise UsageError(f"concurrency must be a whole number of at least 1, not "
                             f"{concurrency!r}, or None for no limit")
        limit = asyncio.Semaphore(concurrency) if concurrency else None

        async def one(index: int, task: Any, chosen: Any) -> Envelope:
            async with limit if limit is not None else contextlib.nullcontext():
                if on_task is not None:
                    on_task(index, None, None)
                began = time.perf_counter()
                try:
                    envelope = await self._execute(task, chosen, None, restart=False)
                except Exception as exc:  # the seed's contract: errors go in the slot
                    envelope = Envelope(error=error_info(exc))
                if on_task is not None:
                    on_task(index, envelope, (time.perf_counter() - began) * 1000)
                return envelope

        with self._using_service(service) as chosen:
            return list(await asyncio.gather(*(one(i, task, chosen)
                                               for i, task in enumerate(tasks))))

    # -- the wire form ----------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON data (steps, programs, sentinels, writes, parallel flags, route
        order, limits); callables and types by name. UsageError for an unnamed callable."""
        return {
            "format": PLAN_FORMAT, "name": self.name, "kit": self.kit,
            "max_iterations": self.max_iterations, "checkpoint_key": self.checkpoint_key,
            "resume": self.resume, "on_concurrent": self.on_concurrent,
            "steps": [step_to_dict(step) for step in self.steps],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], registry: Mapping[str, Any] | None = None, *,
                  store: Store | None = None, service: LackpyService | None = None,
                  **overrides: Any) -> Plan:
        """The plan ``to_dict`` wrote, its callables and types looked up by name in
        ``registry``. ``overrides`` replace saved options (``resume=True``, ``checkpoint_key``).

        Raises PlanRegistryError (a KeyError) naming a missing callable, PlanCompileError for
        data that is not a plan or a plan that does not compile.
        """
        if not isinstance(data, Mapping) or data.get("format") != PLAN_FORMAT \
                or not isinstance(data.get("steps"), list):
            raise PlanCompileError(f"not a saved plan (format {PLAN_FORMAT} with a list of "
                                   f"steps): {summarize(data)}")
        steps = [step_from_dict(item, registry or {}) for item in data["steps"]]
        options = {name: data.get(name, default) for name, default in (
            ("kit", None), ("max_iterations", 100), ("checkpoint_key", None),
            ("resume", False), ("on_concurrent", "fail"), ("name", None))}
        options.update(overrides)
        return cls(*steps, store=store, service=service, **options)

    # -- one run ----------------------------------------------------------------

    async def _execute(self, task: Any, service: Callable[[], LackpyService],
                       on_step: ProgressCallback | None, *, restart: bool,
                       approve: bool = False) -> Envelope:
        executor = ServiceExecutor(service, self.kit)
        run_uid = uuid.uuid4().hex
        state = PlanState(task, next_step=self._evaluator.first_step())
        key = self._key_for(run_uid)
        if self.store is None or key is None:
            return await _Run(self, executor, None, on_step).drive(state)
        hashes = {step.name: executor.fingerprint(step) for step in self.steps}
        checkpointer = Checkpointer(self.store, key, run_uid, self.name, hashes)
        try:
            state, status = checkpointer.claim(state, resume=self.resume, restart=restart,
                                               task_given=task is not None)
            if status == "done":
                return Envelope.from_steps(state.history)
            self._arm(executor, checkpointer, approve)
            async with checkpointer.beating():
                return await _Run(self, executor, checkpointer, on_step).drive(state)
        finally:
            checkpointer.release()

    @staticmethod
    def _arm(executor: ServiceExecutor, checkpointer: Checkpointer, approve: bool) -> None:
        """Give the executor the run's commit records (a run that starts over drops the old
        ones) and, with ``approve``, the change the resumed run paused on."""
        ledger = checkpointer.ledger
        if not checkpointer.resumed:
            ledger.clear()
        executor.ledger = ledger
        if approve:
            executor.approved.update(checkpointer.paused_change)

    def _key_for(self, run_uid: str) -> str | None:
        if self.checkpoint_key is None or self.on_concurrent == "fail":
            return self.checkpoint_key
        return f"{self.checkpoint_key}:{run_uid}"

    # -- the service ------------------------------------------------------------

    def _construction_service(self) -> LackpyService:
        if self._service is not None:
            return self._service
        with self._own_lock:
            if self._own_service is None:
                self._own_service = LackpyService()
            return self._own_service

    @contextlib.contextmanager
    def _using_service(self, service: LackpyService | None
                       ) -> Iterator[Callable[[], LackpyService]]:
        """What gives the run its service: the one given, the plan's, or the plan's own,
        made only when a step needs it, whose sandbox worker stops when the last run using
        it ends."""
        chosen = service if service is not None else self._service
        if chosen is not None:
            yield lambda: chosen
            return
        with self._own_lock:
            self._own_users += 1
        try:
            yield self._construction_service
        finally:
            with self._own_lock:
                self._own_users -= 1
                if self._own_users == 0 and self._own_service is not None:
                    self._own_service.close()


class _Run:
    """One run's loop: the evaluator decides, the executor runs, the checkpointer saves."""

    def __init__(self, plan: Plan, executor: StepExecutor, checkpointer: Checkpointer | None,
                 on_step: ProgressCallback | None) -> None:
        self.plan = plan
        self.evaluator = plan._evaluator
        self.executor = executor
        self.checkpointer = checkpointer
        self.on_step = on_step or (lambda name, status, ms: None)

    async def drive(self, state: PlanState) -> Envelope:
        while state.next_step is not None:
            if self.evaluator.exhausted(state):
                error = self.evaluator.exhausted_error(state)
                self._save(state, "failed", error=error)
                return Envelope.from_steps(state.history, error)
            band = self.evaluator.band(state)
            try:
                results = await self._run_band(band, state)
                failed = [result for result in results if not result.ok]
                if failed:
                    self._save(state, "failed", error=failed[0].error)
                    return Envelope.from_steps(state.history, failed[0].error, results)
                self._check_storable(band, results)
                writes = self.evaluator.advance(state, band, results)
                if self.checkpointer is not None:  # the band's commits are done with
                    writes.update(self.checkpointer.ledger.cleared([step.name for step in band]))
            except _Paused as paused:
                error = paused.error()
                if self.checkpointer is not None:
                    change = paused.pause
                    self.checkpointer.save(
                        state, "paused", error=error, paused_step=paused.step,
                        paused_change=change.to_dict() if isinstance(change, ChangePaused)
                        else None)
                return Envelope.from_steps(state.history, error)
            except BaseException as exc:
                interrupted = isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt))
                self._save_quietly(state, "paused" if interrupted else "failed", exc)
                raise
            self._save(state, "running" if state.next_step else "done", writes=writes)
        return Envelope.from_steps(state.history)

    async def _run_band(self, band: list[Step], state: PlanState) -> list[StepResult]:
        inputs = [self.evaluator.inputs(step, state) for step in band]
        for step in band:
            self.on_step(step.name, "running", None)
        outcomes = await asyncio.gather(
            *(self._execute(step, state, *given) for step, given in zip(band, inputs, strict=True)),
            return_exceptions=True)
        for outcome in outcomes:
            if isinstance(outcome, BaseException) and not isinstance(outcome, PlanPaused):
                raise outcome
        for step, outcome in zip(band, outcomes, strict=True):
            if isinstance(outcome, PlanPaused):
                self.on_step(step.name, "paused", None)
                raise _Paused(step.name, band, outcome)
        results = [outcome for outcome in outcomes if isinstance(outcome, StepResult)]  # all now
        for result in results:
            self.on_step(result.name, "done" if result.ok else "failed", result.ms)
        return results

    async def _execute(self, step: Step, state: PlanState, task: Any, context: Any
                       ) -> StepResult:
        if not isinstance(step.target, Approval):
            return await self.executor.execute(step, task, context)
        if state.approved != step.name:
            raise PlanPaused(step.target.prompt)
        state.approved = None
        return StepResult(step.name, task)

    def _check_storable(self, band: list[Step], results: list[StepResult]) -> None:
        if self.checkpointer is None and self.plan.store is None:
            return
        for step, result in zip(band, results, strict=True):
            if step.writes and self.plan.store is not None \
                    and is_checkpoint(self.plan.store.read(step.writes)):
                raise PlanRuntimeError(
                    f"step {step.name!r} ({target_label(step.target)}) writes {step.writes!r}, "
                    f"the key of another run's checkpoint, which the write would destroy; "
                    f"nothing was written: choose another key for writes=")
            if self.checkpointer is None and not step.writes:
                continue
            try:
                json.dumps(result.output, allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise PlanRuntimeError(
                    f"step {step.name!r} ({target_label(step.target)}) output a "
                    f"{type(result.output).__name__}, which a Store cannot hold ({exc}); return "
                    f"JSON data: str, numbers, bool, None, lists and dicts") from None

    def _save(self, state: PlanState, status: str, *, writes: dict[str, Any] | None = None,
              error: ErrorInfo | None = None) -> None:
        if self.checkpointer is not None:
            self.checkpointer.save(state, status, writes=writes, error=error)
        elif writes and self.plan.store is not None:
            self.plan.store.write_many(writes)

    def _save_quietly(self, state: PlanState, status: str, exc: BaseException) -> None:
        """Checkpoint a run that is ending with ``exc``, which goes on being raised."""
        if self.checkpointer is None:
            return
        with contextlib.suppress(Exception):
            self.checkpointer.save(state, status, error=error_info(exc))


class _Paused(Exception):
    """A step of the band raised PlanPaused."""

    def __init__(self, step: str, band: list[Step], pause: PlanPaused) -> None:
        super().__init__(step)
        self.step = step
        self.band = band
        self.pause = pause

    def error(self) -> ErrorInfo:
        return pause_error(self.step, self.band, self.pause.message)


def _check_options(max_iterations: Any, store: Any, checkpoint_key: Any, resume: bool,
                   on_concurrent: str) -> None:
    if not isinstance(max_iterations, int) or isinstance(max_iterations, bool) \
            or max_iterations < 1:
        raise PlanCompileError(f"max_iterations={max_iterations!r} must be a whole number of at "
                               f"least 1; did you mean max_iterations=100?")
    if on_concurrent not in _ON_CONCURRENT:
        raise PlanCompileError(f"on_concurrent={on_concurrent!r}; did you mean 'fail' (a second "
                               f"run on the key raises) or 'fork' (each run its own key)?")
    if store is not None and not isinstance(store, Store):
        raise PlanCompileError(f"store={store!r} is not a Store; did you mean "
                               f"store=Store(db='run.sqlite')?")
    if checkpoint_key is not None and (not isinstance(checkpoint_key, str) or not checkpoint_key):
        raise PlanCompileError(f"checkpoint_key={checkpoint_key!r} must be a non-empty str; "
                               f"did you mean checkpoint_key='my-plan'?")
    if checkpoint_key is not None and store is None:
        raise PlanCompileError("checkpoint_key= without store= has nowhere to checkpoint; "
                               "did you mean store=Store(db='run.sqlite')?")
    if resume and checkpoint_key is None:
        raise PlanCompileError("resume=True needs store= and checkpoint_key= to resume from; "
                               "did you mean checkpoint_key='my-plan'?")
    if resume and on_concurrent == "fork":
        raise PlanCompileError("resume=True with on_concurrent='fork' cannot work: each fork run "
                               "has its own key, so there is no one checkpoint to resume; did "
                               "you mean on_concurrent='fail' with a key per run?")
