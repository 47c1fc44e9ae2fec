"""Checkpoints: a run's state in its Store, claimed and saved through compare-and-swap.

A checkpoint has the seed's v2 shape (``next_step``, ``kv``, ``completed_steps``, ``status``,
``run_uid``, ``history``) plus ``task``, ``plan``, ``iterations``, ``branch_return``,
``step_hashes`` (a fingerprint of each step's program and kit), ``owner`` (host, process and
heartbeat of the run holding it), ``error``, ``paused_step`` and ``paused_change`` (the file
change a paused step waits on: its digest and the change as plain data). Status is
``running``, ``paused``, ``failed`` or ``done``; only a ``running`` checkpoint whose owner
is alive holds its key.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from lackpy_kernel.errors import ConcurrentPlanRunError, PlanResumeError

from ._envelope import ErrorInfo
from ._evaluate import CHECKPOINT_MARK, PlanState
from ._ledger import Ledger
from ._store import Store, UnreadableValueError

__all__ = [
    "CHECKPOINT_VERSION",
    "Checkpointer",
    "HEARTBEAT_SECONDS",
    "STALE_AFTER_SECONDS",
    "checkpoint_problem",
    "is_checkpoint",
    "owner_alive",
]

CHECKPOINT_VERSION = 2
HEARTBEAT_SECONDS = 10.0
STALE_AFTER_SECONDS = 60.0  # another host's run counts as dead after this long without a beat

# The runs this process is executing now, so a checkpoint this process left behind (an
# abandoned run) is told apart from a live one.
_LIVE_RUNS: set[str] = set()


def is_checkpoint(value: Any) -> bool:
    """Whether a Store value is a plan checkpoint."""
    return isinstance(value, dict) and value.get(CHECKPOINT_MARK) == CHECKPOINT_VERSION \
        and "status" in value and "run_uid" in value


_OPTIONAL_TEXT = ("plan", "next_step", "paused_step")
_DICTS = ("kv", "branch_return", "step_hashes", "owner", "paused_change")


def checkpoint_problem(checkpoint: dict[str, Any]) -> str | None:
    """What is wrong with the shape of ``checkpoint`` (a value ``is_checkpoint`` accepts), or
    None: a row this module did not write (an old version, a file edited by hand) is refused
    with this, never read half-way."""
    def kind(name: str) -> str:
        return type(checkpoint.get(name)).__name__

    if not isinstance(checkpoint["status"], str) or not isinstance(checkpoint["run_uid"], str):
        return "its status and run_uid are not text"
    for name in _OPTIONAL_TEXT:
        if checkpoint.get(name) is not None and not isinstance(checkpoint[name], str):
            return f"its {name} is a {kind(name)}, not a name"
    for name in _DICTS:
        if not isinstance(checkpoint.get(name) or {}, dict):
            return f"its {name} is a {kind(name)}, not a dict"
    steps = checkpoint.get("completed_steps") or []
    if not isinstance(steps, list) or not all(isinstance(step, str) for step in steps):
        return "its completed_steps are not a list of step names"
    history = checkpoint.get("history") or []
    if not isinstance(history, list) or not all(isinstance(item, dict) for item in history):
        return "its history is not a list of step results"
    error = checkpoint.get("error")
    if error is not None and not (isinstance(error, dict) and isinstance(error.get("type"), str)
                                  and isinstance(error.get("message"), str)):
        return "its error is not a type and a message"
    if not isinstance(checkpoint.get("iterations") or 0, int):
        return f"its iterations are a {kind('iterations')}, not a count"
    return None


def owner_alive(checkpoint: dict[str, Any], now: float | None = None) -> bool:
    """Whether the run that holds ``checkpoint`` is still running somewhere.

    On this host: its process exists (the same one: its start time matches) and, when it is
    this process, the run is still going. On another host: its heartbeat is recent.
    """
    owner = checkpoint.get("owner")
    if not isinstance(owner, dict):
        return False
    if owner.get("host") != socket.gethostname():
        beat = owner.get("heartbeat")
        return isinstance(beat, (int, float)) and (now or time.time()) - beat < STALE_AFTER_SECONDS
    pid = owner.get("pid")
    if not isinstance(pid, int):
        return False
    if pid == os.getpid():
        return checkpoint.get("run_uid") in _LIVE_RUNS
    return _process_alive(pid, owner.get("started"))


@dataclass
class Checkpointer:
    """One run's hold on its checkpoint key: claim it, save after every band, beat."""

    store: Store
    key: str
    run_uid: str
    plan_name: str | None = None
    step_hashes: dict[str, str] = field(default_factory=dict)
    last: dict[str, Any] | None = None
    resumed: bool = False  # claim took over a stopped run (its commit records stand)
    paused_change: dict[str, str] = field(default_factory=dict)  # step -> the change's digest
    # that the resumed run paused on

    def __post_init__(self) -> None:
        _LIVE_RUNS.add(self.run_uid)

    @property
    def ledger(self) -> Ledger:
        """The run's records of the file commits its steps are making."""
        return Ledger(self.store, self.key)

    def release(self) -> None:
        """The run is over (however it ended)."""
        _LIVE_RUNS.discard(self.run_uid)

    def claim(self, fresh: PlanState, *, resume: bool, restart: bool = False,
              task_given: bool = True) -> tuple[PlanState, str]:
        """Take the key for this run; returns the state to run from and the checkpoint's status.

        A fresh key, or one whose run is done, starts ``fresh``. ``resume=True`` continues a
        paused, failed or dead run (status ``done``: nothing to run). ``restart=True`` starts
        over whatever the old run's status, unless it is alive. Raises
        ConcurrentPlanRunError when a live run holds the key (or a stopped one does and
        neither resume nor restart was asked), PlanResumeError when the checkpoint does not
        fit this plan.
        """
        try:
            existing = self.store.read(self.key)
        except UnreadableValueError as exc:
            if not restart:
                raise PlanResumeError(f"{exc}; restart the run (plan.restart(), `lackpy plan "
                                      f"restart {self.key}`) to start over") from None
            self.last = self._snapshot(fresh, "running")
            self.store.write(self.key, self.last)  # nothing to compare with: overwrite it
            return fresh, "running"
        if existing is None:
            self._swap(None, self._snapshot(fresh, "running"), "claiming a fresh key")
            return fresh, "running"
        if not is_checkpoint(existing):
            raise ConcurrentPlanRunError(
                f"the Store key {self.key!r} holds a value that is not a plan checkpoint; "
                f"refusing to overwrite it: choose another checkpoint_key")
        problem = checkpoint_problem(existing)
        if problem is not None and not restart:
            raise PlanResumeError(f"the checkpoint {self.key!r} cannot be read ({problem}); "
                                  f"restart the run (plan.restart(), `lackpy plan restart "
                                  f"{self.key}`) to start over")
        status = existing["status"]
        if status == "running" and owner_alive(existing):
            owner = existing["owner"]
            raise ConcurrentPlanRunError(
                f"checkpoint {self.key!r} is held by a live run (run {existing['run_uid']}, "
                f"process {owner.get('pid')} on {owner.get('host')}); wait for it, use another "
                f"checkpoint_key, or on_concurrent='fork' to give each run its own key")
        if restart or (status == "done" and not resume):
            if restart and not task_given:
                fresh.task = existing.get("task")
            self._swap(existing, self._snapshot(fresh, "running"), "restarting")
            return fresh, "running"
        if not resume:
            run = "run whose process died" if status == "running" else f"{status} run"
            raise ConcurrentPlanRunError(
                f"checkpoint {self.key!r} holds a {run} at step {existing.get('next_step')!r}; "
                f"pass resume=True to "
                f"continue it, or restart it (plan.restart(), `lackpy plan restart "
                f"{self.key}`) to start over")
        state = self._check_fit(existing, fresh.task, task_given)
        self.resumed = True
        if status == "paused":
            state.approved = existing.get("paused_step")  # resuming is the approval
            change, step = existing.get("paused_change") or {}, existing.get("paused_step")
            if isinstance(change.get("digest"), str) and isinstance(step, str):
                self.paused_change = {step: change["digest"]}
        if status == "done":
            self.last = existing
            return state, "done"
        self._swap(existing, self._snapshot(state, "running"), "taking over the run")
        return state, "running"

    def save(self, state: PlanState, status: str, *, writes: dict[str, Any] | None = None,
             error: ErrorInfo | None = None, paused_step: str | None = None,
             paused_change: dict[str, Any] | None = None) -> None:
        """Checkpoint ``state`` and commit ``writes`` with it, in one transaction;
        ``paused_step`` names the step that paused the run, ``paused_change`` the file change
        it waits on.

        Raises ConcurrentPlanRunError when another run changed the checkpoint meanwhile.
        """
        snapshot = {**self._snapshot(state, status, error), "paused_step": paused_step,
                    "paused_change": paused_change}
        self._swap(self.last, snapshot, "saving", writes)

    def beat(self) -> bool:
        """Refresh the owner's heartbeat; False when another run has taken the key."""
        if self.last is None or self.last.get("status") != "running":
            return True
        new = {**self.last, "owner": _owner()}
        if self.store.compare_and_swap(self.key, self.last, new):
            self.last = new
            return True
        return False

    @contextlib.asynccontextmanager
    async def beating(self) -> AsyncIterator[None]:
        """While the block runs, beat every HEARTBEAT_SECONDS (until the key is lost)."""
        beat = asyncio.ensure_future(self._beat_forever())
        try:
            yield
        finally:
            beat.cancel()

    async def _beat_forever(self) -> None:
        while True:
            await asyncio.sleep(HEARTBEAT_SECONDS)
            if not self.beat():
                return

    # -- internals --------------------------------------------------------------

    def _snapshot(self, state: PlanState, status: str, error: ErrorInfo | None = None
                  ) -> dict[str, Any]:
        return {**state.to_dict(), "checkpoint_version": CHECKPOINT_VERSION, "status": status,
                "run_uid": self.run_uid, "plan": self.plan_name,
                "step_hashes": dict(self.step_hashes), "owner": _owner(),
                "error": error.to_dict() if error else None}

    def _swap(self, expected: dict[str, Any] | None, new: dict[str, Any], doing: str,
              writes: dict[str, Any] | None = None) -> None:
        if not self.store.compare_and_swap(self.key, expected, new, writes=writes):
            holder = (self.store.read(self.key) or {}).get("run_uid", "another run")
            raise ConcurrentPlanRunError(
                f"checkpoint {self.key!r} changed under this run (run {self.run_uid}) while "
                f"{doing}: {holder} holds it now. Two runs share this key: use a key per "
                f"run, or on_concurrent='fork'")
        self.last = new

    def _check_fit(self, existing: dict[str, Any], task: Any, task_given: bool) -> PlanState:
        try:
            state = PlanState.from_dict(existing)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise PlanResumeError(f"cannot resume {self.key!r}: its checkpoint cannot be read "
                                  f"({type(exc).__name__}: {exc}); restart the run") from None
        if state.next_step is not None and state.next_step not in self.step_hashes:
            raise PlanResumeError(
                f"cannot resume {self.key!r}: its next step {state.next_step!r} is not in this "
                f"plan; resume it with the plan that wrote it, or restart the run")
        if task_given and state.task != task:
            raise PlanResumeError(
                f"checkpoint {self.key!r} is a run of the task {state.task!r}, not {task!r}; "
                f"resume with that task (or none), or restart with the new one")
        saved = existing.get("step_hashes") or {}
        changed = [name for name in dict.fromkeys(state.completed_steps)
                   if saved.get(name) != self.step_hashes.get(name)]
        if changed:
            listed = ", ".join(repr(name) for name in changed)
            raise PlanResumeError(
                f"cannot resume {self.key!r}: the completed step(s) {listed} changed since the "
                f"checkpoint (program, intent or kit), so the resumed run would mix two "
                f"versions of the plan; undo the change, or restart the run to start over")
        return state


def _owner() -> dict[str, Any]:
    pid = os.getpid()
    return {"host": socket.gethostname(), "pid": pid, "started": _process_started(pid),
            "heartbeat": time.time()}


def _process_alive(pid: int, started: Any) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    stat = _proc_stat(pid)
    if stat is None:
        return True  # no /proc: existence is all we can tell
    state, now_started = stat
    if state in ("Z", "X"):
        return False  # dead, not yet reaped
    return started is None or now_started == started


def _process_started(pid: int) -> int | None:
    stat = _proc_stat(pid)
    return stat[1] if stat else None


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """The process's state letter and start time (clock ticks since boot), from /proc."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as file:
            text = file.read()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2:].split()  # the command name may hold spaces
    try:
        return fields[0], int(fields[19])
    except (IndexError, ValueError):
        return None
