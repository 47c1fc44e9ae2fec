"""Notebook magics run in both hosts: the lackpy kernel starts from a kernelspec installed
for the test session."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session", autouse=True)
def _kernelspec(installed_kernelspec):
    return installed_kernelspec
