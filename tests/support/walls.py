"""Putting up a sandbox child's walls in a forked process of a test, for the walls' tests."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from lackpy_kernel.kit.staging import make_stage, stage_folder
from lackpy_kernel.run.child import wall_plan
from lackpy_kernel.run.protocol import RunRequest
from lackpy_kernel.run.walls import WallPlan, os_walls

UP = {wall.name for wall in os_walls() if wall.up}


def needs(wall: str) -> pytest.MarkDecorator:
    """Skip a test where this machine's kernel does not put up ``wall``."""
    return pytest.mark.skipif(wall not in UP, reason=f"this kernel does not put up {wall}")


def in_walled_child(workspace: Path, attempt: Callable[[], object],
                    plan: WallPlan | None = None) -> dict:
    """Run ``attempt`` in a forked child behind the walls (``plan``'s, by default a plan for
    ``workspace`` made as the worker makes it), its own stage made as a sandbox child makes
    it; what it returned or raised, and its pid."""
    plan = plan or wall_plan(RunRequest(program="", workspace=str(workspace)))
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read_end)
        try:
            stage = stage_folder(os.path.realpath(workspace), os.getpid())
            make_stage(stage)
            up = plan.put_up(stage)
            try:
                outcome = {"up": up, "value": repr(attempt())}
            except BaseException as exc:
                outcome = {"up": up, "error": type(exc).__name__, "errno": getattr(exc, "errno", None)}
            outcome["pid"] = os.getpid()
            os.write(write_end, json.dumps(outcome).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    plan.close()
    data = b""
    while chunk := os.read(read_end, 65536):
        data += chunk
    os.close(read_end)
    os.waitpid(pid, 0)
    return json.loads(data)
