"""A Program step's file commit, recorded before it lands, so that a resumed plan neither
loses nor repeats a step's writes.

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
The record is made by the step's approver, which a checkpointed run asks whatever
``[sandbox] approve`` says (with ``never`` it lets every change land, recorded first). A
``Delegate`` step's change is not recorded: under ``write`` it is refused, naming the
config; under ``never`` it lands unrecorded, so a resumed Delegate step may write again.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from lackpy_kernel.errors import PlanPaused
from lackpy_kernel.kit.changes import Change, changed_since, snapshot
from lackpy_kernel.kit.workspace import Workspace

from ._store import Store, UnreadableValueError

__all__ = ["COMMIT_MARK", "ChangePaused", "Ledger", "change_digest"]

COMMIT_MARK = ":commit:"  # a step's record lives under <checkpoint key>:commit:<step>


def change_digest(change: Change) -> str:
    """A hash of ``change`` as the person saw it (each file's path, status, counts and
    diff lines), naming it in a pause and in its approval."""
    text = json.dumps(change.to_frame(), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class Ledger:
    """The commit records of the run checkpointed under ``key`` in ``store``."""

    store: Store
    key: str

    def record(self, step: str, change: Change, workspace: Workspace) -> None:
        """Record that ``step`` is committing ``change`` to ``workspace`` now, with what its
        files hold before (durable once this returns)."""
        self.store.write(self._key(step), {"digest": change_digest(change),
                                           "before": snapshot(workspace, change.paths)})

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

    def cleared(self, steps: list[str]) -> dict[str, None]:
        """The Store writes that drop the records of ``steps`` (with their checkpoint)."""
        kept = set(self.store.keys(f"{self.key}{COMMIT_MARK}"))
        return {self._key(step): None for step in steps if self._key(step) in kept}

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
        super().__init__(f"step {step!r} would change files ({change.summary()}; change "
                         f"{self.digest}): resume the run approving it to let it land"
                         f"\n{change.to_text()}")

    def to_dict(self) -> dict[str, Any]:
        """What the paused checkpoint keeps: the digest and the change as plain data."""
        return {"digest": self.digest, "change": self.change.to_frame()}
