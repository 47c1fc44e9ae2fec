"""Fixtures for the kit tests: a workspace, and toolboxes with configured tool sources."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from lackpy_kernel.kit import Toolbox, builtin_toolbox
from lackpy_kernel.kit.sources import ToolSources

MakeSources = Callable[..., tuple[Toolbox, ToolSources]]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace folder (inside tmp_path, so tmp_path itself is outside it)."""
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


@pytest.fixture
def ws(workspace: Path) -> Path:
    """A workspace holding a.txt ("old a"), for the staging and undo tests."""
    (workspace / "a.txt").write_text("old a")
    return workspace


@pytest.fixture
def make_sources(workspace: Path) -> Iterator[MakeSources]:
    """``make_sources(name=table, ...)``: a toolbox of the built-in tools with those tool
    sources attached; every source is closed (its servers stopped) after the test."""
    made: list[ToolSources] = []

    def make(**settings: dict[str, Any]) -> tuple[Toolbox, ToolSources]:
        toolbox = builtin_toolbox(workspace)
        sources = ToolSources(settings, workspace)
        sources.attach(toolbox)
        made.append(sources)
        return toolbox, sources

    yield make
    for sources in made:
        sources.close()
