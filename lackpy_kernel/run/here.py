"""Programs run in the caller's process (the sandbox off, or missing on this platform) are
staged as in the worker: while the program runs, the file tools write a stage of this
process (``.lackpy/staging/<pid>-<n>/``), and its changes land when it ends well, all at
once, and, when approval is asked for, only once its ``Approver`` let them. A program
that fails, or whose change is refused, leaves the workspace as it was.

    stage = HereStage(workspace, protected)
    try:
        result = stage.run(lambda: runner.run_validated(...))   # or on a thread: stage.run
        result = await stage.settle(result, ask=True, approve=approve)
    finally:
        stage.discard()
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Collection
from pathlib import Path

from lackpy_kernel.kit import Workspace
from lackpy_kernel.kit.changes import changed_since, describe_changes, snapshot
from lackpy_kernel.kit.journal import commit_changes, staged_changes
from lackpy_kernel.kit.staging import Stage, discard_stage, stage_folder, staging

from .failures import changed_meanwhile, dropped_note, not_kept, refused_message
from .kernel_side import Approver
from .kernel_side._approval import judge_async
from .runner import CHANGE_REFUSED, ExecutionResult

_RUNS = itertools.count(1)  # the stages of this process: one a run, never two the same


class HereStage:
    """The stage of one program run in this process, for the workspace at ``root``
    (``protected``: what the write tools refuse)."""

    def __init__(self, root: str | os.PathLike[str], protected: Collection[str] = ()) -> None:
        self.root = str(Path(root).resolve())
        self.protected = frozenset(protected)
        self.stage = Stage(self.root, f"{stage_folder(self.root, os.getpid())}-{next(_RUNS)}")

    def run(self, program_run: Callable[[], ExecutionResult]) -> ExecutionResult:
        """Call ``program_run`` (on this thread) with the file tools writing the stage."""
        with staging(self.stage):
            return program_run()

    async def settle(self, result: ExecutionResult, *, ask: bool,
                     approve: Approver | None) -> ExecutionResult:
        """``result`` once its staged files landed (after ``approve`` let them, with
        ``ask``); a failure, nothing written, when they may not land or were refused; a
        failed ``result`` noting the files it dropped."""
        paths = list(dict.fromkeys([*result.trace.files_modified, *sorted(self.stage.files)]))
        paths = [path for path in paths if path in self.stage.files]
        if not paths:
            return result
        if not result.success:
            result.notes.append(dropped_note(paths))
            return result
        try:
            workspace = Workspace(self.root, self.protected)
            changes = staged_changes(workspace, self.stage.folder, paths)
            if ask:
                before = snapshot(workspace, paths)
                answer = await judge_async(approve, describe_changes(workspace, changes))
                moved = changed_since(workspace, before) if answer.apply else []
                why = changed_meanwhile(moved) if moved else answer.reason
                if not answer.apply or moved:
                    return not_kept(result, CHANGE_REFUSED, refused_message(paths, why))
            landed = commit_changes(workspace, changes)
            landed.finish()
            result.notes.extend(landed.notes)
        except OSError as exc:
            return not_kept(result, type(exc).__name__,
                            f"the program's file changes were not written: {exc}")
        return result

    def discard(self) -> None:
        """Remove the stage (nothing if it was never made)."""
        discard_stage(self.stage.folder)
