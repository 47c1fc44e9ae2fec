"""Fixtures shared across the test folders."""

from __future__ import annotations

import os

import pytest

from lackpy_kernel.install import install_kernelspec
from tests.support import agents, loopback
from tests.support.kernel import KERNEL_NAME


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
