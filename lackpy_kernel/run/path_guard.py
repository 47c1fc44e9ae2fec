"""Kibitzer's guard of written paths, applied where a program's staged files are committed.

The kernel sends it with a request when no person is asked (``RunRequest.path_guard``: the
mode's ``writable`` paths, Kibitzer's ``floor`` settings and ``source``, the file of
Kibitzer's path guard module the kernel itself runs); the worker lets a commit land unasked
when the guard allows each of its paths, and asks the kernel, whose Kibitzer has the last
word, about any other. The worker runs without site-packages (``python -S``), so it loads
that one module (standard library only) from its file, never from inside the workspace,
which programs write. The guard is at least as strict as Kibitzer's ``before_call``: a
floor override by an explicit writable path is left to the kernel's question.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterable, Mapping
from types import ModuleType
from typing import Any

__all__ = ["allows"]

MODULE = "_lackpy_kibitzer_path_guard"  # the name it is loaded under in the worker
_loaded: dict[str, ModuleType] = {}


def allows(guard: Mapping[str, Any], workspace: str, paths: Iterable[str]) -> bool:
    """Whether ``guard`` lets every one of ``paths`` (relative to ``workspace``) be
    written: False when it refuses one or cannot say (its module cannot be loaded, the
    guard is malformed, a check raises), so that the kernel is asked."""
    floor, writable, source = guard.get("floor"), guard.get("writable"), guard.get("source")
    if not (isinstance(floor, dict) and isinstance(writable, list) and isinstance(source, str)):
        return False
    policy = {"writable": writable}
    try:
        checks = _module(source, workspace)
        if checks is None:
            return False
        return all((floor.get("enabled", True) is False
                    or checks.check_floor(path, floor, workspace).allowed)
                   and checks.check_path(path, policy, project_dir=workspace).allowed
                   for path in paths)
    except Exception:  # noqa: BLE001 - a guard that fails says nothing: the kernel is asked
        return False


def _module(source: str, workspace: str) -> ModuleType | None:
    """Kibitzer's path guard module from the file ``source``, loaded once; None when that
    file is inside ``workspace`` or is not a module."""
    real, root = os.path.realpath(source), os.path.realpath(workspace)
    if os.path.commonpath([real, root]) == root:  # checked for each workspace it serves
        return None
    module = _loaded.get(real)
    if module is not None:
        return module
    spec = importlib.util.spec_from_file_location(MODULE, real)
    if spec is None or spec.loader is None:
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules[MODULE] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    _loaded[real] = module
    return module
