"""What a child starts from (``Snapshot``), and which requests it runs (``fits``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..commit import UnitLog
from ..protocol import RunRequest
from ..walls import WallPlan
from ._prepared import PythonTools
from ._tools import ChildChannel


@dataclass
class Snapshot:
    """What a child starts from: the session as it was when it was forked."""

    session: dict[str, Any]
    log: UnitLog
    like: RunRequest  # the last program's request, less its program: for the warm-up
    pending: bytes  # stdin the worker read but did not use
    walls: WallPlan  # built for like's workspace
    walled_for: tuple[str, list[str]]  # what they are built for (``RunRequest.walled_for``)
    python_tools: PythonTools  # the tool modules the worker imported
    channel: ChildChannel = field(default_factory=ChildChannel)  # calls to the kernel's tools
    walls_up: bool = False
    stage: str | None = None  # its staging folder, made fresh before its walls went up
    held: bool = False  # waits for the worker's go before it reads stdin


def fits(request: RunRequest, snapshot: Snapshot) -> bool:
    """Whether a child forked with ``snapshot`` runs ``request``: a program for the workspace
    and kits folder its walls were built for, whose Python tools the worker has imported."""
    return _walls_fit(request, snapshot) and snapshot.python_tools.has_tried(request)


def _walls_fit(request: RunRequest, snapshot: Snapshot) -> bool:
    """Whether the walls were built for the folders ``request`` names: the same paths as
    the last request (what a session sends every time), else the same real paths."""
    like = snapshot.like
    if request.workspace == like.workspace and request.kits_dir == like.kits_dir:
        return True
    return request.walled_for() == snapshot.walled_for
