"""Agents against loopback model servers: a workspace whose config names the server as the
provider ``loop``, in whichever tool-calling protocol a test asks for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lackpy_kernel.engines import LLMEngine

from . import loopback as lb

KEY = "sk-ant-api03-LOOPBACK-agent-key-0123456789abcdef"
MODEL = "loop-model"
# Fast retries and short but generous deadlines: a busy machine never trips them by itself.
FAST = {"retry_delay": 0.001, "request_timeout": 30.0, "stream_idle_timeout": 30.0}
CLEARED_ENV = ("ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE",
               "ANTHROPIC_CONFIG_DIR", "ANTHROPIC_CUSTOM_HEADERS", "OLLAMA_HOST",
               "OPENAI_BASE_URL", "OPENAI_API_KEY", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
               "http_proxy", "https_proxy", "all_proxy")


def provider_table(protocol: str, server: lb.LoopbackServer) -> dict[str, Any]:
    """The ``[inference.providers.loop]`` table for ``server`` speaking ``protocol``."""
    if protocol == "ollama":
        return {"plugin": "ollama", "host": server.url}
    if protocol == "openai":
        return {"plugin": "openai", "base_url": f"{server.url}/v1"}
    return {"plugin": "anthropic", "base_url": server.url}


def write_config(workspace: Path, protocol: str, server: lb.LoopbackServer, extra: str = "",
                 **settings: Any) -> None:
    """``.lackpy/config.toml`` naming ``server`` the provider ``loop`` (plus ``settings``);
    ``extra`` is more TOML for the file."""
    table = {**provider_table(protocol, server), **settings}
    lines = ["[inference.providers.loop]", *(f"{key} = {_toml(value)}" for key, value in table.items())]
    (workspace / ".lackpy").mkdir(exist_ok=True)
    (workspace / ".lackpy" / "config.toml").write_text("\n".join(lines) + "\n" + extra)


def engine(protocol: str, server: lb.LoopbackServer, workspace: Path, **knobs: Any) -> LLMEngine:
    """An LLMEngine on ``server`` (through the workspace's config), fast unless ``knobs`` say."""
    write_config(workspace, protocol, server)
    return LLMEngine(MODEL, provider="loop", workspace=workspace, **{**FAST, **knobs})


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)


def tool_results(protocol: str, request: lb.Request) -> list[str]:
    """The tool results a request sends back (the last turn's), in order, as their text."""
    messages = (request.json or {}).get("messages", [])
    if protocol == "anthropic":
        last = messages[-1]["content"] if messages and isinstance(messages[-1]["content"], list) else []
        return [block["content"] for block in last if block.get("type") == "tool_result"]
    results = []
    for message in reversed(messages):
        if message.get("role") != "tool":
            break
        results.append(message["content"])
    return results[::-1]


def system_text(protocol: str, request: lb.Request) -> str:
    """The system prompt a request carries ('' when none)."""
    body = request.json or {}
    if protocol == "anthropic":
        return body.get("system") or ""
    first = (body.get("messages") or [{}])[0]
    return first.get("content", "") if first.get("role") == "system" else ""


def temperature_of(protocol: str, request: lb.Request) -> float | None:
    """The temperature a request sets (None when it sets none)."""
    body = request.json or {}
    if protocol == "ollama":
        return (body.get("options") or {}).get("temperature")
    return body.get("temperature")
