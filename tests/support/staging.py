"""A stage of this process, filled through the file tools, for the staging and undo tests."""

from __future__ import annotations

import os
from pathlib import Path

from lackpy_kernel.kit import FileToolsProvider
from lackpy_kernel.kit.staging import Stage, stage_folder, staging


def staged(ws: Path, files: dict[str, str]) -> Stage:
    """A stage of this process holding ``files`` (written through the file tools)."""
    stage = Stage(str(ws), stage_folder(ws, os.getpid()))
    tools = FileToolsProvider(ws)
    with staging(stage):
        for path, text in files.items():
            tools.write_file(path, text)
    return stage
