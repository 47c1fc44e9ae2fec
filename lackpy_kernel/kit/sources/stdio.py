"""An MCP stdio transport with bounds: the server's process, its messages, its stderr.

The SDK's ``stdio_client`` holds any line the server writes, however long,
and joins a long line's pieces in quadratic time. This transport, which the
SDK's ``Client`` accepts as any ``Transport``, reads bytes and ends the
connection when one message passes ``max_message_bytes`` or is broken MCP
(a line that starts like JSON but does not parse, e.g. nested too deeply: then it names
the listed tool whose schema nests past ``max_nesting``, if one does); it
skips lines that are not JSON at all (a server printing on stdout) and keeps a
few of them, and the tail of the server's stderr, for error messages.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field

import anyio
import mcp_types
from anyio.abc import ObjectReceiveStream, ObjectSendStream, Process
from mcp.shared.message import SessionMessage

READ_CHUNK = 1 << 16
STDERR_TAIL = 2000
STRAY_LINES_KEPT = 3
STRAY_LINE_CHARS = 200
EXIT_WAIT = 2.0  # seconds to exit after stdin closes, then again after SIGTERM
TOOL_DEPTH = 4  # {"result": {"tools": [{ a listed tool
_JSON_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


@dataclass
class StdioState:
    """What the transport saw: why it ended the connection, stray stdout lines, stderr's tail."""

    closed: bool = False
    reason: str | None = None
    stray_lines: deque[str] = field(default_factory=lambda: deque(maxlen=STRAY_LINES_KEPT))
    stderr_tail: bytearray = field(default_factory=bytearray)
    returncode: int | None = None
    pid: int | None = None

    def exited(self) -> bool:
        """Whether the server's process has ended (checked now, without reaping it)."""
        if self.pid is None:
            return False
        try:
            return os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:
            return True  # already reaped

    def stderr_text(self) -> str:
        """The last part of what the server wrote on stderr."""
        return self.stderr_tail.decode("utf-8", errors="replace").strip()


@asynccontextmanager
async def bounded_stdio(command: list[str], *, env: dict[str, str], cwd: str,
                        max_message_bytes: int, state: StdioState, max_nesting: int
                        ) -> AsyncIterator[tuple[ObjectReceiveStream[SessionMessage | Exception],
                                                 ObjectSendStream[SessionMessage]]]:
    """Start ``command`` and exchange newline-delimited JSON-RPC with it.

    Raises OSError when the command cannot be started.
    """
    process = await anyio.open_process(command, env=env, cwd=cwd, stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       start_new_session=True)
    state.pid = process.pid
    to_session, from_server = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    to_server, from_session = anyio.create_memory_object_stream[SessionMessage](0)

    async def read_messages() -> None:
        async with to_session:
            with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                await _read_lines(process, to_session, max_message_bytes, state, max_nesting)
        state.closed = True

    async def write_messages() -> None:
        async with from_session:
            with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                async for message in from_session:
                    text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((text + "\n").encode())  # type: ignore[union-attr]

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(read_messages)
        tasks.start_soon(write_messages)
        tasks.start_soon(_keep_stderr_tail, process, state)
        try:
            yield from_server, to_server
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(process, state)
            tasks.cancel_scope.cancel()


async def _read_lines(process: Process,
                      to_session: ObjectSendStream[SessionMessage | Exception],
                      max_message_bytes: int, state: StdioState, max_nesting: int) -> None:
    buffer = bytearray()
    async for chunk in process.stdout:  # type: ignore[union-attr]
        searched = len(buffer)
        buffer += chunk
        while (end := buffer.find(b"\n", searched)) >= 0:
            line = bytes(buffer[:end])
            del buffer[:end + 1]
            searched = 0
            message = _parse(line, state, max_nesting)
            if isinstance(message, SessionMessage):
                await to_session.send(message)
            elif message is not None:
                state.reason = message
                return
        if len(buffer) > max_message_bytes:
            state.reason = (f"it sent a message of more than {max_message_bytes:,} bytes, over "
                            "the limit for one answer")
            return
    state.reason = "it closed its stdout"
    if await _exited(process, EXIT_WAIT):
        state.reason = f"the process exited with status {process.returncode}"


def _parse(line: bytes, state: StdioState, max_nesting: int) -> SessionMessage | str | None:
    """A message; None for a line to skip; a reason to stop for broken MCP."""
    text = line.strip()
    if not text:
        return None
    try:
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(text, by_name=False))
    except ValueError as exc:
        if text.startswith(b"{"):
            tool = _tool_nested_past(text, max_nesting)
            if tool is not None:
                return (f"its tool {tool[:80]!r} has a schema nested more than {max_nesting} "
                        "deep, too deep to be a tool's; fix the server")
            first = str(exc).splitlines()[1:2] or [str(exc)]
            return f"it sent a message that is not valid MCP ({first[0].strip()[:200]})"
        state.stray_lines.append(text[:STRAY_LINE_CHARS].decode("utf-8", errors="replace"))
        return None


def _tool_nested_past(text: bytes, max_nesting: int) -> str | None:
    """The name of the tool of a ``tools/list`` answer (raw JSON) whose part nests more
    than ``max_nesting`` deep, else None; read token by token, never parsed."""
    depth, name, naming = 0, None, False
    for match in _JSON_TOKEN.finditer(text):
        token = match.group()
        if token in (b"{", b"["):
            depth += 1
            if depth > TOOL_DEPTH + max_nesting:
                return name
        elif token in (b"}", b"]"):
            depth -= 1
        else:
            if naming:
                name = json.loads(token) if len(token) < 1000 else "?"
            naming = depth == TOOL_DEPTH and token == b'"name"'
    return None


async def _keep_stderr_tail(process: Process, state: StdioState) -> None:
    with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream,
                  OSError):
        async for chunk in process.stderr:  # type: ignore[union-attr]
            state.stderr_tail += chunk
            del state.stderr_tail[:-STDERR_TAIL]


async def _stop(process: Process, state: StdioState) -> None:
    """Close stdin, give the server time to exit, then end its whole process group."""
    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()  # type: ignore[union-attr]
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if await _exited(process, EXIT_WAIT):
            break
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)
    await _exited(process, EXIT_WAIT)
    state.returncode = process.returncode
    for stream in (process.stdout, process.stderr):
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await stream.aclose()  # type: ignore[union-attr]
    # asyncio's transport would otherwise be closed by the garbage collector, maybe after its
    # loop (and warn); nothing public reaches it, hence the attribute walk.
    close = getattr(getattr(getattr(process, "_process", None), "_transport", None), "close", None)
    if callable(close):
        with suppress(PermissionError):
            close()


async def _exited(process: Process, wait: float) -> bool:
    # Polled, not process.wait(): that also waits for the pipes, which a child may hold open.
    with anyio.move_on_after(wait):
        while process.returncode is None:
            await anyio.sleep(0.01)
    return process.returncode is not None
