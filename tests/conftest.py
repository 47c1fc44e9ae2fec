"""Fixtures shared across the test folders."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lackpy_kernel.install import install_kernelspec
from tests.support import agents, loopback
from tests.support.kernel import KERNEL_NAME

ROOT = Path(__file__).resolve().parent.parent
# What a test starts, told by where it lives and by the fixtures it takes; registered in pyproject.toml.
# The fast part: python -m pytest -m "not kernel and not browser and not temporal"
MARKED_FOLDERS = {"kernel": ("tests/kernel", "notebooks"), "browser": ("tests/browser",)}
MARKED_FIXTURES = {
    "kernel": {"installed_kernelspec", "kernelspec", "kernel", "host"},  # each starts a Jupyter kernel
    "temporal": {"temporal_server"},
    "model": {"llama_server"},  # llama-cpp-python's server with a real model
}


def pytest_collection_modifyitems(config, items):
    """Mark each test kernel, browser, temporal or model by its folder and its fixtures."""
    for item in items:
        path = Path(item.path).resolve()
        where = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else ""
        used = set(getattr(item, "fixturenames", ()))
        markers = {marker for marker, folders in MARKED_FOLDERS.items()
                   if any(where == folder or where.startswith(f"{folder}/") for folder in folders)}
        markers |= {marker for marker, fixtures in MARKED_FIXTURES.items() if used & fixtures}
        for marker in sorted(markers):
            item.add_marker(marker)


@pytest.fixture(scope="session")
def installed_kernelspec(tmp_path_factory):
    """The kernelspec installed into a private prefix, with Jupyter pointed at it."""
    prefix = tmp_path_factory.mktemp("jupyter-prefix")
    install_kernelspec(prefix=str(prefix), name=KERNEL_NAME, display_name="lackpy (tests)")
    saved = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = str(prefix / "share" / "jupyter")
    yield prefix
    if saved is None:
        os.environ.pop("JUPYTER_PATH", None)
    else:
        os.environ["JUPYTER_PATH"] = saved


@pytest.fixture
def model_env(monkeypatch):
    """No proxy or base-URL variables leak in; the Anthropic key is a known fake."""
    for name in agents.CLEARED_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", agents.KEY)


@pytest.fixture
def model_server():
    """A loopback server speaking the model providers' protocols."""
    with loopback.LoopbackServer() as running:
        yield running
