"""A Program or Delegate step's file commit, recorded before it lands, so that a resumed plan
neither loses nor repeats a step's writes.

The sandbox worker commits a step's staged files all at once (or none), after asking the
step's approver; the plan's checkpoint is saved after the step's band. A kill between the
two would leave a resumed run unable to tell whether the files landed. So the approver
first records in the plan's Store, durably, the change it lets land and what its files held
just before (``Ledger.record``); the checkpoint that saves the step's band clears the record
(``Ledger.cleared``), and a restart clears them all. On resume, a step with a record
whose files no longer hold what they held before had its commit land: it runs again dry
(its writes dropped) only to recompute its output. Otherwise the commit did not land, and
the step runs as usual, the change it recorded approved already.

Limits: the dry re-run reads the workspace as the commit left it, so a step whose output
depends on re-reading a file it wrote itself may compute another output the second time.
A file changed by something else between the kill and the resume reads as landed; one
whose name is shown escaped (control characters) is not read back, so reads as not landed.
A call of a tool graded write that runs in the kernel (``Change.call``) pauses the run the
same way; once approved it is kept as allowed for that step (``Ledger.allow``) until the
step's checkpoint, so a step that then pauses on its file change, and runs again once that
is approved, makes the call without asking again (it acts again: a call cannot be staged).

The record is made by the step's approver, which a checkpointed run asks whatever
``[sandbox] approve`` says (with ``never`` it lets every change land, recorded first). A
``Delegate`` step's record also keeps the program it ran (a model may write another one the
next time), and its dry re-run runs that program; under ``write`` a Delegate step's change
is refused, naming the config.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lackpy_kernel.errors import PlanPaused
from lackpy_kernel.kit.changes import Change, change_digest, changed_since, snapshot
from lackpy_kernel.kit.workspace import Workspace

from ._store import Store, UnreadableValueError

__all__ = ["COMMIT_MARK", "ChangePaused", "Ledger", "change_digest"]

COMMIT_MARK = ":commit:"  # a step's record lives under <checkpoint key>:commit:<step>
CALLS = ":calls"  # the calls allowed to a step, under its record's key and this


@dataclass(frozen=True)
class Ledger:
    """The commit records of the run checkpointed under ``key`` in ``store``."""

    store: Store
    key: str

    def record(self, step: str, change: Change, workspace: Workspace,
               program: str | None = None) -> None:
        """Record that ``step`` is committing ``change`` to ``workspace`` now, with what its
        files hold before and the ``program`` making it, when given (durable once this
        returns)."""
        ran = {} if program is None else {"program": program}
        self.store.write(self._key(step), {"digest": change_digest(change),
                                           "before": snapshot(workspace, change.paths), **ran})

    def program(self, step: str) -> str | None:
        """The program ``step`` recorded with its commit, or None."""
        try:
            record = self.store.read(self._key(step))
        except UnreadableValueError:
            return None
        program = record.get("program") if isinstance(record, dict) else None
        return program if isinstance(program, str) else None

    def pending(self, step: str, workspace: Workspace) -> tuple[str, bool] | None:
        """The digest of the change ``step`` recorded as committing and whether it landed (a
        file of it holds something else than before); None without a record."""
        try:
            record = self.store.read(self._key(step))
        except UnreadableValueError:
            return None
        if not isinstance(record, dict) or not isinstance(record.get("before"), dict) \
                or not isinstance(record.get("digest"), str):
            return None
        return record["digest"], bool(changed_since(workspace, record["before"]))

    def allow(self, step: str, change: Change) -> None:
        """Keep the call ``change`` names as allowed to ``step`` until its checkpoint."""
        self.store.write(self._key(step) + CALLS, sorted({*self.allowed(step),
                                                          change_digest(change)}))

    def allowed(self, step: str) -> set[str]:
        """The digests of the calls allowed to ``step``."""
        try:
            digests = self.store.read(self._key(step) + CALLS)
        except UnreadableValueError:
            return set()
        return {digest for digest in digests if isinstance(digest, str)} \
            if isinstance(digests, list) else set()

    def cleared(self, steps: list[str]) -> dict[str, None]:
        """The Store writes that drop the records of ``steps`` (with their checkpoint)."""
        kept = set(self.store.keys(f"{self.key}{COMMIT_MARK}"))
        return {key: None for step in steps for key in (self._key(step), self._key(step) + CALLS)
                if key in kept}

    def clear(self) -> None:
        """Drop every record of this run (it starts over)."""
        for key in self.store.keys(f"{self.key}{COMMIT_MARK}"):
            self.store.delete(key)

    def _key(self, step: str) -> str:
        return f"{self.key}{COMMIT_MARK}{step}"


class ChangePaused(PlanPaused):
    """A step's file change waits for a person: the run pauses carrying ``change``, and a
    resume that approves it (``approve=True``, ``%plan resume K --approve``) lets exactly
    that change land (another change pauses again)."""

    def __init__(self, step: str, change: Change) -> None:
        self.change = change
        self.digest = change_digest(change)
        if change.call is not None:
            what = f"would {change.summary()} (change {self.digest}): resume the run " \
                   "approving it to let it run"
        else:
            what = f"would change files ({change.summary()}; change {self.digest}): resume " \
                   "the run approving it to let it land"
        super().__init__(f"step {step!r} {what}\n{change.to_text()}")

    def to_dict(self) -> dict[str, Any]:
        """What the paused checkpoint keeps: the digest and the change as plain data."""
        return {"digest": self.digest, "change": self.change.to_frame()}
