"""``lackpy acp`` on stdio: JSON-RPC lines in, the SDK's connection, lines out."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import cast

from acp import Agent, run_agent, stdio_streams

from ._agent import LackpyAgent

MAX_LINE_BYTES = 50 * 1024 * 1024  # a longer JSON-RPC line is dropped (the SDK's own limit)
PARSE_ERROR = json.dumps({"jsonrpc": "2.0", "id": None, "error": {
    "code": -32700, "message": "Parse error: each line must be one JSON-RPC object"}}).encode() + b"\n"
_log = logging.getLogger(__name__)


async def serve(agent: LackpyAgent) -> None:
    """Run ``agent`` over this process's stdin and stdout until the client leaves. Python's
    ``print`` goes to stderr meanwhile, so that nothing but the protocol reaches stdout."""
    reader, writer = await stdio_streams(limit=MAX_LINE_BYTES)
    sys.stdout = sys.stderr
    objects = asyncio.StreamReader(limit=MAX_LINE_BYTES)
    pump = asyncio.ensure_future(_pump_objects(reader, objects, writer))
    try:
        await run_agent(cast(Agent, agent), writer, objects)
    finally:
        pump.cancel()


async def _pump_objects(reader: asyncio.StreamReader, objects: asyncio.StreamReader,
                        writer: asyncio.StreamWriter) -> None:
    """Feed ``objects`` the lines of ``reader`` that are JSON objects. Any other line (not
    JSON, a JSON list or number, a line over ``MAX_LINE_BYTES``) gets JSON-RPC's parse
    error on ``writer`` and goes no further, so that it cannot stop the SDK's receive loop."""
    while True:
        try:
            line = await reader.readline()
        except ValueError:  # over the limit: asyncio has dropped what it held of the line
            line = b"\x00"
        if not line:
            break
        if _is_object(line):
            objects.feed_data(line)
        elif line.strip():
            _log.warning("dropped a line that is not a JSON-RPC message (%d bytes)", len(line))
            writer.write(PARSE_ERROR)
    objects.feed_eof()


def _is_object(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than json parses
        return False


def main() -> int:
    """``lackpy acp``: serve over stdio until the client closes stdin; returns the exit
    code (each session's ``cwd`` is its workspace)."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    agent = LackpyAgent()
    try:
        asyncio.run(serve(agent))
    except KeyboardInterrupt:
        pass
    finally:
        agent.close()
    return 0
