"""Kernel tests start the kernel from a kernelspec installed for the test session."""

from __future__ import annotations

import pytest

from tests.support.kernel import Kernel, make_workspace


@pytest.fixture(scope="session", autouse=True)
def _kernelspec(installed_kernelspec):
    return installed_kernelspec


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    workspace = make_workspace(tmp_path_factory.mktemp("ws"),
                               "[sandbox]\ntimeout = 3\nmemory_mb = 256\n")
    running = Kernel(workspace)
    yield running
    running.close()
