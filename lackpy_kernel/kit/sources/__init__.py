"""Tool sources: the tools of ``[tools.providers.NAME]`` in ``.lackpy/config.toml``.

A source is a Python module (``plugin = "python"``) or an MCP server
(``plugin = "mcp"``). ``ToolSources`` builds them from the config's tables,
adds them to a toolbox, which loads each when it first needs its tools, and
owns the MCP servers they start: ``close()`` stops them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..spec import ToolSpec
from ..toolbox import Toolbox
from .base import (
    FAILED,
    GRADES,
    LOADED,
    NOT_LOADED,
    SourceStatus,
    ToolSource,
    call_deadline,
    plain_results,
    protections_added,
    time_left,
)
from .describe import describe_function, parse_docstring
from .mcp import EventLoopThread, McpToolSource, json_schema_type, lackpy_name
from .python import PythonToolSource

__all__ = [
    "FAILED",
    "GRADES",
    "LOADED",
    "NOT_LOADED",
    "McpToolSource",
    "PythonToolSource",
    "SourceStatus",
    "ToolSource",
    "ToolSources",
    "call_deadline",
    "describe_function",
    "json_schema_type",
    "lackpy_name",
    "parse_docstring",
    "plain_results",
    "protections_added",
    "time_left",
]


class ToolSources:
    """The tool sources of one workspace, and the MCP servers they run.

    ``settings`` maps each source's name to its table (as ``LackpyConfig.tool_providers``
    holds them, validated by ``load_config``). ``attach(toolbox)`` adds the sources to a
    toolbox; ``check()`` loads them all now and reports how each fared; ``close()`` stops
    the MCP servers (a later call of one of their tools starts its server again).

    ``protected`` maps the real paths of the sources' code in the workspace (a Python
    source's module, what it imports from there as it loads or as its tools run in this
    process, an MCP server's script), and their folders, to the source each is code of:
    lackpy runs that code outside the sandbox, so the file tools refuse to write it
    (``builtin_toolbox(workspace, protected)``). It grows as sources load and run.
    """

    def __init__(self, settings: Mapping[str, Mapping[str, Any]] | None,
                 workspace: str | os.PathLike[str]) -> None:
        self._loop = EventLoopThread()
        self.protected: dict[str, str] = {}
        self.sources: list[ToolSource] = [
            _make_source(name, dict(table), workspace, self._loop, self.protected)
            for name, table in (settings or {}).items()
        ]
        self._toolbox: Toolbox | None = None

    def attach(self, toolbox: Toolbox) -> None:
        """Add every source to ``toolbox``, which loads each when it first needs it."""
        for source in self.sources:
            toolbox.add_source(source)
        self._toolbox = toolbox

    def check(self) -> list[SourceStatus]:
        """Load every source now (trying again those that failed) and say how each fared."""
        if self._toolbox is None:
            self.attach(Toolbox())
        assert self._toolbox is not None
        self._toolbox.load_sources(retry_failed=True)
        return self.statuses()

    def statuses(self) -> list[SourceStatus]:
        """Each source's status as it stands, without loading anything."""
        return [source.status for source in self.sources]

    def close(self) -> None:
        """Stop every MCP server the sources started."""
        for source in self.sources:
            source.close()
        self._loop.stop()

    def __enter__(self) -> ToolSources:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class _UnknownPlugin(ToolSource):
    """A source whose plugin lackpy does not know; it fails to load, saying so."""

    def __init__(self, name: str, settings: dict[str, Any]) -> None:
        self.plugin = str(settings.get("plugin"))
        super().__init__(name, settings)

    @property
    def origin(self) -> str:
        return "?"

    def _load(self) -> list[ToolSpec]:
        raise self.error(f"unknown plugin {self.settings.get('plugin')!r}; use \"python\" or "
                         "\"mcp\"")


def _make_source(name: str, settings: dict[str, Any], workspace: str | os.PathLike[str],
                 loop: EventLoopThread, protected: dict[str, str]) -> ToolSource:
    plugin = settings.get("plugin")
    if plugin == PythonToolSource.plugin:
        return PythonToolSource(name, settings, workspace, protected)
    if plugin == McpToolSource.plugin:
        return McpToolSource(name, settings, workspace, loop, protected)
    return _UnknownPlugin(name, settings)
