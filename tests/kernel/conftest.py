"""Kernel tests start the kernel from a kernelspec installed for the test session."""

from __future__ import annotations

import os

import pytest

from lackpy_kernel.install import install_kernelspec
from tests.support.kernel import KERNEL_NAME, Kernel, make_workspace


@pytest.fixture(scope="session", autouse=True)
def installed_kernelspec(tmp_path_factory):
    """Install the kernelspec into a private prefix and point Jupyter at it."""
    prefix = tmp_path_factory.mktemp("jupyter-prefix")
    install_kernelspec(prefix=str(prefix), name=KERNEL_NAME, display_name="lackpy (tests)")
    saved = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = str(prefix / "share" / "jupyter")
    yield prefix
    if saved is None:
        os.environ.pop("JUPYTER_PATH", None)
    else:
        os.environ["JUPYTER_PATH"] = saved


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    workspace = make_workspace(tmp_path_factory.mktemp("ws"),
                               "[sandbox]\ntimeout = 3\nmemory_mb = 256\n")
    running = Kernel(workspace)
    yield running
    running.close()
