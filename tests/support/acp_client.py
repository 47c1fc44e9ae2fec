"""The ACP SDK's own client side, driving ``lackpy acp`` as a real subprocess over stdio."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process, text_block
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    AllowedOutcome,
    AvailableCommand,
    AvailableCommandsUpdate,
    ClientCapabilities,
    EnvVariable,
    Implementation,
    McpServerStdio,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UserMessageChunk,
)

from tests.support.mcp_servers import TOOL_SERVER

SETTLE_ROUNDS = 20


def block(text: str) -> str:
    """``text`` as the agent says a result: a Markdown code block, which the chat shows as it is."""
    return f"```text\n{text}\n```"


def template(workspace: Path, name: str, pattern: str, body: str) -> None:
    """Save a template, so a prompt matching ``pattern`` is answered by ``body``."""
    folder = workspace / ".lackpy" / "templates"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.tmpl").write_text(f"---\nname: {name}\npattern: {pattern}\n---\n{body}\n")


class RecordingClient:
    """A client that records every session update and each permission asked for
    (``asked``: the tool call update and the options), answering with the option
    ``permission`` names ("apply", "discard"), never while it is "wait", or, when it is
    None, as a client without permission support. It grants no files and no terminals."""

    def __init__(self) -> None:
        self.updates: list[Any] = []
        self.asked: list[tuple[ToolCallUpdate, list[PermissionOption]]] = []
        self.permission: str | None = "apply"

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(update)

    async def request_permission(self, session_id: str, tool_call: ToolCallUpdate,
                                 options: list[PermissionOption],
                                 **kwargs: Any) -> RequestPermissionResponse:
        self.asked.append((tool_call, options))
        if self.permission is None:
            raise RequestError.method_not_found("session/request_permission")
        if self.permission == "wait":
            await asyncio.Event().wait()  # until the agent gives up asking
        return RequestPermissionResponse(outcome=AllowedOutcome(
            outcome="selected", option_id=self.permission))

    def on_connect(self, conn: Any) -> None:
        pass

    def messages(self) -> str:
        """The agent's messages, joined."""
        return "".join(u.content.text for u in self.updates if isinstance(u, AgentMessageChunk))

    def said(self) -> str:
        """What the person said (the user's messages, as a loaded session replays them)."""
        return "".join(u.content.text for u in self.updates if isinstance(u, UserMessageChunk))

    async def message_within(self, seconds: float) -> str:
        """The agent's messages, once there is one (sent outside a prompt, after the response
        that opened a session); "" when none came within ``seconds``."""
        deadline = asyncio.get_running_loop().time() + seconds
        while not self.messages() and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
        return self.messages()

    def commands(self) -> list[AvailableCommand]:
        """The slash commands the agent advertised last."""
        updates = [u for u in self.updates if isinstance(u, AvailableCommandsUpdate)]
        return updates[-1].available_commands if updates else []

    def thoughts(self) -> str:
        """The agent's thoughts (the tiers tried), one a line."""
        return "\n".join(u.content.text for u in self.updates if isinstance(u, AgentThoughtChunk))

    def tool_calls(self) -> list[ToolCallStart]:
        return [u for u in self.updates if isinstance(u, ToolCallStart)]

    def call_updates(self, call_id: str) -> list[ToolCallStart | ToolCallProgress]:
        """The updates of the tool call ``call_id``, its start first."""
        return [u for u in self.updates if isinstance(u, (ToolCallStart, ToolCallProgress))
                and u.tool_call_id == call_id]

    def statuses(self) -> list[str]:
        return [u.status for u in self.updates if isinstance(u, ToolCallProgress) and u.status]

    def clear(self) -> None:
        self.updates.clear()


@asynccontextmanager
async def lackpy_acp(workspace: Path, client_name: str = "tests"
                     ) -> AsyncIterator[tuple[ClientSideConnection, RecordingClient, Any]]:
    """``lackpy acp`` started in ``workspace`` and initialized by a client that calls itself
    ``client_name``: (connection, client, process)."""
    client = RecordingClient()
    async with spawn_agent_process(client, sys.executable, "-m", "lackpy_kernel", "acp",
                                   cwd=workspace, env=os.environ) as (conn, process):
        await conn.initialize(protocol_version=PROTOCOL_VERSION,
                              client_capabilities=ClientCapabilities(),
                              client_info=Implementation(name=client_name, version="0"))
        try:
            yield conn, client, process
        finally:
            await _ended(process)


async def _ended(process: Any) -> None:
    """Close the agent's stdin and read what it still sends, so no message arrives while
    the SDK closes the connection (its receive loop then fails: "queue already closed")."""
    process.stdin.close()
    try:
        await asyncio.wait_for(process.wait(), timeout=30)
    except TimeoutError:
        process.kill()
        await process.wait()
    for _ in range(3000):
        if process.stdout.at_eof():
            break
        await asyncio.sleep(0.01)
    for _ in range(SETTLE_ROUNDS):
        await asyncio.sleep(0)


def tool_server(name: str = "tools", *args: str, env: dict[str, str] | None = None
                ) -> McpServerStdio:
    """The MCP test server (``tests/support/mcp_tool_server.py``) as a client passes it."""
    return McpServerStdio(name=name, command=sys.executable, args=[str(TOOL_SERVER), *args],
                          env=[EnvVariable(name=k, value=v) for k, v in (env or {}).items()])


async def prompt(conn: ClientSideConnection, session_id: str, text: str) -> Any:
    """Send ``text`` as a prompt; the response, once the updates sent before it are in
    (the SDK hands each notification to its own task, which may run after the response)."""
    return await settled(conn.prompt(session_id=session_id, prompt=[text_block(text)]))


async def settled(request: Awaitable[Any]) -> Any:
    """``request``'s response, after the client has handled what came before it."""
    response = await request
    for _ in range(SETTLE_ROUNDS):
        await asyncio.sleep(0)
    await asyncio.sleep(0.1)
    return response
