"""What the notebook's agent helpers (``lackpy_kernel.notebook.turns``) run against: a
throwaway workspace, its service, and a loopback model server."""

from __future__ import annotations

import pytest

from lackpy_kernel.config import LackpyConfig
from lackpy_kernel.service import LackpyService


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    return tmp_path


@pytest.fixture
def service(workspace):
    """Programs run in this process (fast)."""
    with LackpyService(workspace, LackpyConfig(sandbox_enabled=False)) as running:
        yield running




