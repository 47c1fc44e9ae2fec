"""An MCP server for the tool-source tests, written with the official SDK.

Run it as a script: ``python mcp_tool_server.py`` serves on stdio,
``python mcp_tool_server.py http PORT`` serves streamable HTTP on
127.0.0.1:PORT (at ``/mcp``). Its tools cover what a tool source must
handle: read-only and writing tools, optional arguments, a list argument, a name that is not a
Python name, structured and unstructured results, a failing tool, a slow one,
one that kills the server mid-call, and what the process sees (its pid, its
environment, its working folder, the HTTP headers of the request).
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

READ_ONLY = ToolAnnotations(read_only_hint=True)
server = MCPServer("lackpy-test-tools", log_level="WARNING")
notes: dict[str, str] = {}


@server.tool(annotations=READ_ONLY)
def add(a: int, b: int = 2) -> int:
    """Add two integers.

    More text the tool list does not need.
    """
    return a + b


@server.tool(annotations=READ_ONLY)
def shout(text: str, times: int = 1) -> str:
    """The text in capitals, repeated."""
    return " ".join([text.upper()] * times)


@server.tool()
def remember(key: str, value: str) -> dict[str, str]:
    """Keep a note in the server's memory and return all the notes."""
    notes[key] = value
    return dict(notes)


@server.tool(annotations=READ_ONLY)
def lines(count: int) -> list[str]:
    """Numbered lines."""
    return [f"line {number}" for number in range(1, count + 1)]


@server.tool(annotations=READ_ONLY)
def person(name: str) -> dict:
    """A dict, sent as JSON text (no output schema)."""
    return {"name": name, "tags": ["a", "b"], "size": 3}


@server.tool(annotations=READ_ONLY)
def count_items(items: list[str]) -> int:
    """How many items a list holds."""
    return len(items)


@server.tool(name="get-issue", annotations=READ_ONLY)
def get_issue(number: int) -> str:
    """An issue by its number."""
    return f"issue {number}: it does not work"


@server.tool(annotations=READ_ONLY)
def fail(message: str) -> str:
    """Fail with the message."""
    raise ToolError(message)


@server.tool(annotations=READ_ONLY)
async def slow(seconds: float) -> str:
    """Answer after a while."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}"


@server.tool()
def exit_now(code: int = 3) -> str:
    """End the server's process in the middle of the call."""
    sys.stdout.flush()
    os._exit(code)


@server.tool(annotations=READ_ONLY)
def server_pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.tool(annotations=READ_ONLY)
def environment(name: str) -> str:
    """The value of an environment variable of the server ('' when unset)."""
    return os.environ.get(name, "")


@server.tool(annotations=READ_ONLY)
def working_folder() -> str:
    """The server's working folder."""
    return os.getcwd()


@server.tool(annotations=READ_ONLY)
def request_header(name: str, ctx: Context) -> str:
    """A header of the HTTP request that carried this call ('' over stdio)."""
    request = ctx.request_context.request
    return request.headers.get(name, "") if request is not None else ""


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
