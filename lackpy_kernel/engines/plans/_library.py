"""A workspace's plans: saved plans in ``.lackpy/plans/NAME.json`` and the plan Store
``.lackpy/plans.sqlite``, where runs checkpoint. Programs cannot write ``.lackpy/``, so a plan
cannot change its own definition or checkpoints."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lackpy_kernel.config import CONFIG_DIR
from lackpy_kernel.errors import PlanResumeError, UsageError
from lackpy_kernel.kit.atomic import atomic_write_text
from lackpy_kernel.service import LackpyService

from ._checkpoint import checkpoint_problem, is_checkpoint, owner_alive
from ._plan import Plan
from ._store import Store, UnreadableValueError

__all__ = ["PLANS_DB", "PLANS_DIR", "PlanLibrary", "RunStatus"]

PLANS_DB = "plans.sqlite"
PLANS_DIR = "plans"
_PLAN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


@dataclass
class RunStatus:
    """One checkpointed run: its key, plan, status (``running`` only while its owner lives;
    a run whose process died shows as ``stopped``; a checkpoint of the wrong shape as
    ``unreadable``, its error saying why), next step, completed steps, task, error, and the
    file change a paused run waits on (``Change.to_frame()``; approving it resumes the run)."""

    key: str
    plan: str | None
    status: str
    next_step: str | None
    completed_steps: list[str]
    task: Any
    error: dict[str, Any] | None
    change: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form."""
        return asdict(self)


class PlanLibrary:
    """The saved plans and the plan Store of the workspace ``workspace``."""

    def __init__(self, workspace: str | os.PathLike[str]) -> None:
        self.workspace = Path(workspace).resolve()
        self.folder = self.workspace / CONFIG_DIR / PLANS_DIR
        self._store: Store | None = None

    @property
    def store(self) -> Store:
        """The workspace's plan Store, ``.lackpy/plans.sqlite``."""
        if self._store is None:
            self._store = Store(self.workspace / CONFIG_DIR / PLANS_DB)
        return self._store

    def path(self, name: str) -> Path:
        """Where plan ``name`` is saved; UsageError for a name that is not a plain file stem."""
        if not isinstance(name, str) or not _PLAN_NAME.fullmatch(name) or ".." in name:
            raise UsageError(f"invalid plan name {name!r}: use letters, digits, '_', '-' and '.'")
        return self.folder / f"{name}.json"

    def names(self) -> list[str]:
        """The saved plans' names, sorted."""
        return sorted(path.stem for path in self.folder.glob("*.json")) if self.folder.is_dir() \
            else []

    def save(self, name: str, plan: Plan) -> Path:
        """Save ``plan`` (its ``to_dict``, named ``name``) as ``.lackpy/plans/NAME.json``."""
        path = self.path(name)
        data = {**plan.to_dict(), "name": name}
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        return path

    def load(self, name: str, registry: Mapping[str, Any] | None = None, *,
             service: LackpyService | None = None, **overrides: Any) -> Plan:
        """Plan ``name``, checkpointing in the plan Store; UsageError when there is none,
        PlanCompileError (or PlanRegistryError) when it no longer compiles."""
        path = self.path(name)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            known = ", ".join(self.names()) or "none yet"
            raise UsageError(f"no saved plan {name!r} ({path}); saved plans: {known}") from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise UsageError(f"cannot read the saved plan {path}: {exc}") from None
        except RecursionError:  # JSON nested deeper than the parser goes: not a plan we wrote
            raise UsageError(f"cannot read the saved plan {path}: it is nested too deeply "
                             f"to be a plan") from None
        overrides.setdefault("name", name)
        return Plan.from_dict(data, registry, store=self.store, service=service, **overrides)

    def runs(self) -> list[RunStatus]:
        """Every checkpointed run in the plan Store, by key."""
        return [status for key in self.store.keys() if (status := self.run(key)) is not None]

    def run(self, key: str) -> RunStatus | None:
        """The run under ``key``, or None when the key holds no checkpoint."""
        try:
            saved = self.store.read(key)
        except UnreadableValueError as exc:
            return RunStatus(key, None, "unreadable", None, [], None, {
                "type": "PlanResumeError", "message": f"{exc}; `lackpy plan restart {key}` "
                "starts it over"})
        if not is_checkpoint(saved):
            return None
        problem = checkpoint_problem(saved)
        if problem is not None:
            plan = saved.get("plan") if isinstance(saved.get("plan"), str) else None
            return RunStatus(key, plan, "unreadable", None, [], None, {
                "type": "PlanResumeError", "message": f"the checkpoint cannot be read "
                f"({problem}); `lackpy plan restart {key}` starts it over"})
        status = saved["status"]
        if status == "running" and not owner_alive(saved):
            status = "stopped"
        paused = saved.get("paused_change") if status == "paused" else None
        return RunStatus(key, saved.get("plan"), status, saved.get("next_step"),
                         list(saved.get("completed_steps") or []), saved.get("task"),
                         saved.get("error"), (paused or {}).get("change"))

    def plan_for(self, key: str, registry: Mapping[str, Any] | None = None, *,
                 service: LackpyService | None = None, **overrides: Any) -> Plan:
        """The saved plan that the run under ``key`` belongs to, set to checkpoint there."""
        run = self.run(key)
        if run is None:
            raise UsageError(f"no plan run under the key {key!r}; `lackpy plan status` lists them")
        if run.status == "unreadable" and run.plan is None:
            assert run.error is not None  # an unreadable run always says why
            raise PlanResumeError(f"{key!r}: {run.error['message']}")
        if run.plan is None:
            raise UsageError(f"the run {key!r} was not started from a saved plan, so there is no "
                             f"plan to load; resume it from the code that started it")
        return self.load(run.plan, registry, service=service, checkpoint_key=key, **overrides)

    def close(self) -> None:
        """Close the plan Store."""
        if self._store is not None:
            self._store.close()
            self._store = None
