"""What the notebook's agent helpers (``lackpy_kernel.notebook.turns``) run against: a
throwaway workspace, its service, and a loopback model server."""

from __future__ import annotations

import pytest

from lackpy_kernel.config import LackpyConfig
from lackpy_kernel.service import LackpyService
from tests.support import agents, loopback


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    return tmp_path


@pytest.fixture
def service(workspace):
    """Programs run in this process (fast)."""
    with LackpyService(workspace, LackpyConfig(sandbox_enabled=False)) as running:
        yield running


@pytest.fixture
def model_env(monkeypatch):
    """No proxy or base-URL variables leak in; the Anthropic key is a known fake."""
    for name in agents.CLEARED_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", agents.KEY)


@pytest.fixture
def model_server():
    with loopback.LoopbackServer() as running:
        yield running
