"""The installed package brings its Lab extension and server extension, both enabled (what
``pip install`` of the wheel, or ``pip install -e`` with Node.js, puts into the environment)."""

from __future__ import annotations

import re
import subprocess
import sys

_COLOUR = re.compile(r"\x1b\[[0-9;]*m")


def _jupyter(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "jupyter", *args], text=True, timeout=120,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return _COLOUR.sub("", done.stdout)


def test_jupyter_labextension_list_shows_the_extension_enabled():
    listed = _jupyter("labextension", "list")
    assert re.search(r"lackpy-kernel v\S+ enabled OK", listed), (
        f"{listed}\nthe Lab extension is not installed: build it with `pip install -e .` "
        "where Node.js is installed (README, Set up)")


def test_jupyter_server_extension_list_shows_the_validation_endpoint_enabled():
    listed = _jupyter("server", "extension", "list")
    assert re.search(r"lackpy_kernel\.lab enabled", listed), listed
    assert re.search(r"lackpy_kernel\.lab\s+OK", listed), listed
