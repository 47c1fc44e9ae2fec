"""The MCP servers the tool-source tests run: where they are, their settings, the HTTP one.

``tool_server_settings()`` is a ``[tools.providers.NAME]`` table (as a dict) that
runs ``mcp_tool_server.py`` (the official SDK) over stdio;
``hostile_settings(mode)`` runs ``hostile_mcp_server.py`` in one of its modes;
``http_tool_server()`` starts the SDK server on a free loopback port and
yields its URL.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.support.ports import free_port

SUPPORT = Path(__file__).resolve().parent
TOOL_SERVER = SUPPORT / "mcp_tool_server.py"
HOSTILE_SERVER = SUPPORT / "hostile_mcp_server.py"
START_WAIT = 60.0


def tool_server_settings(**settings: Any) -> dict[str, Any]:
    """An MCP source running the SDK test server over stdio, with ``settings`` added."""
    return {"plugin": "mcp", "command": [sys.executable, str(TOOL_SERVER)],
            "startup_timeout": START_WAIT, **settings}


def hostile_settings(mode: str, **settings: Any) -> dict[str, Any]:
    """An MCP source running the hostile server in ``mode``."""
    return {"plugin": "mcp", "command": [sys.executable, str(HOSTILE_SERVER), mode],
            "startup_timeout": START_WAIT, **settings}


@contextlib.contextmanager
def http_tool_server() -> Iterator[str]:
    """Run the SDK test server over streamable HTTP on loopback; yields its ``/mcp`` URL."""
    port = free_port()
    process = subprocess.Popen([sys.executable, str(TOOL_SERVER), "http", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_for_port(port: int, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + START_WAIT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the HTTP MCP server exited with status {process.returncode}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.05)
    raise RuntimeError(f"the HTTP MCP server did not listen on port {port} within {START_WAIT} s")
