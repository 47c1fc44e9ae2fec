"""Plans run against a real LackpyService in a throwaway workspace."""

from __future__ import annotations

import pytest

from lackpy_kernel.config import LackpyConfig
from lackpy_kernel.service import LackpyService
from tests.support import loopback


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    (tmp_path / "todo.txt").write_text("write tests\n")
    (tmp_path / ".lackpy").mkdir()  # plans and agents here write with no one to ask
    (tmp_path / ".lackpy" / "config.toml").write_text('[sandbox]\napprove = "never"\n')
    return tmp_path


@pytest.fixture
def service(workspace):
    """Programs run in this process (fast); the sandbox has tests of its own below."""
    with LackpyService(workspace, LackpyConfig(sandbox_enabled=False,
                                               sandbox_approve="never")) as running:
        yield running


@pytest.fixture
def sandboxed(workspace):
    """Programs run in the sandbox worker, with a short time limit."""
    with LackpyService(workspace, LackpyConfig(sandbox_timeout=2)) as running:
        yield running


# -- agents against loopback model servers ---------------------------------------------




@pytest.fixture(params=loopback.TOOL_PROTOCOLS)
def protocol(request, model_env):
    """Each tool-calling wire protocol in turn: anthropic, ollama, openai."""
    return request.param


