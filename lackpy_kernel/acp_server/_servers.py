"""The MCP servers an ACP client passes in ``session/new`` and ``session/load``, as tool
sources of that session: the same ``plugin = "mcp"`` tables as ``[tools.providers.NAME]``
(the same client, timeouts and limits), checked and bounded first.

The client is the person's own editor, which may start any program it likes, so any
command is allowed; what lackpy bounds is how many servers, how long each part is, and
what reaches lackpy's environment: an env value or header is taken literally (one that
reads ``${VAR}`` is refused, so a client cannot copy lackpy's secrets into a server).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from acp.schema import EnvVariable, HttpHeader, HttpMcpServer, McpServerStdio

from lackpy_kernel.config import BUILTIN_TOOL_PROVIDER

MAX_SERVERS = 8  # per session
MAX_ARGS = 64
MAX_VARIABLES = 64  # env variables or headers of one server
MAX_TEXT = 4096  # characters of a command, an argument, a URL, a value
MAX_NAME = 64
_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_HEADER = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+")


@dataclass
class ClientServers:
    """``settings``: the servers that passed, as tool source tables by name; ``problems``:
    one line for each server left out, saying why."""

    settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def client_servers(servers: Sequence[Any], configured: Collection[str]) -> ClientServers:
    """The tool source tables of ``servers`` (ACP's MCP server objects); a server that is
    malformed, over the bounds, of a transport lackpy does not speak, or named as one of
    ``configured`` (or an earlier one) is left out, with its reason in ``problems``."""
    found = ClientServers()
    for index, server in enumerate(servers):
        name = str(getattr(server, "name", ""))
        try:
            if index >= MAX_SERVERS:
                raise ValueError(f"a session takes at most {MAX_SERVERS} MCP servers")
            _check_name(name, [*configured, *found.settings])
            found.settings[name] = _settings(server)
        except ValueError as exc:
            found.problems.append(f"the MCP server {name[:MAX_NAME]!r} is left out: {exc}")
    return found


def _check_name(name: str, taken: Collection[str]) -> None:
    if not name or len(name) > MAX_NAME or not name.isprintable():
        raise ValueError(f"its name must be 1 to {MAX_NAME} printable characters")
    if name == BUILTIN_TOOL_PROVIDER or name in taken:
        raise ValueError("the name is taken (by lackpy's built-in tools, a tool source of "
                         ".lackpy/config.toml or another server); rename it")


def _settings(server: Any) -> dict[str, Any]:
    if isinstance(server, McpServerStdio):
        command = [_text(server.command, "command"), *_args(server.args)]
        if not command[0]:
            raise ValueError("its command is empty")
        return {"plugin": "mcp", "command": command,
                "env": _table(server.env, _VARIABLE, "environment variable")}
    if isinstance(server, HttpMcpServer):
        url = _text(server.url, "url")
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"its url must start with http:// or https://, not {url[:80]!r}")
        return {"plugin": "mcp", "url": url, "headers": _table(server.headers, _HEADER, "header")}
    kind = getattr(server, "type", None) or type(server).__name__
    raise ValueError(f"lackpy speaks MCP over stdio and streamable HTTP, not {kind}")


def _args(args: Sequence[str]) -> list[str]:
    if len(args) > MAX_ARGS:
        raise ValueError(f"it has {len(args)} arguments; lackpy takes at most {MAX_ARGS}")
    return [_text(arg, "an argument") for arg in args]


def _table(pairs: Sequence[EnvVariable | HttpHeader], names: re.Pattern[str],
           what: str) -> dict[str, str]:
    if len(pairs) > MAX_VARIABLES:
        raise ValueError(f"it has {len(pairs)} of them; lackpy takes at most {MAX_VARIABLES} "
                         f"{what}s")
    table = {}
    for pair in pairs:
        if not names.fullmatch(pair.name) or len(pair.name) > MAX_NAME:
            raise ValueError(f"{pair.name[:MAX_NAME]!r} is no {what} name")
        value = _text(pair.value, f"the {what} {pair.name}")
        if "${" in value or "\r" in value or "\n" in value:
            raise ValueError(f"the {what} {pair.name} holds ${{...}} or a line break; its "
                             "value is taken literally, so pass the value itself")
        table[pair.name] = value
    return table


def _text(value: str, what: str) -> str:
    if len(value) > MAX_TEXT or "\x00" in value:
        raise ValueError(f"{what} is over {MAX_TEXT} characters or holds a NUL character")
    return value
