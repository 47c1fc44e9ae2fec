"""The workspace API of Python tools: how a tool's own code writes the workspace's files.

A Python tool (``plugin = "python"``) runs in the program's process, whose walls let it
write nothing in the workspace itself. Its writes go, like ``write_file``'s, to the
program's stage: the program's later reads see them, and they are committed with the
program when it ends well (and, where the config asks, once the person approves the
change) or dropped with it. The same rules hold as for the file tools: a path inside the
workspace, not in ``.lackpy/``, not the code of a tool source.

Outside a program (a tool called from plain Python, or in the kernel's process) there
is no stage: the file is written at once, in the current folder's workspace.
"""

from __future__ import annotations

import os

from .builtin_tools import FileToolsProvider, write_workspace_bytes
from .staging import current
from .workspace import Workspace

API_NAMES = ("lackpy_kernel.kit.write_text(path, text)",
             "lackpy_kernel.kit.write_bytes(path, data)")  # for the walls' message


def write_text(path: str, text: str) -> str:
    """Create or replace the workspace file ``path`` (relative to the workspace) with
    ``text``, as UTF-8, as ``write_file`` does; what it wrote. Raises WorkspaceError (a
    PermissionError: outside the workspace, ``.lackpy/``, a tool's code), TypeError or
    ValueError (not text, over 16 MiB, over the program's write budget)."""
    return FileToolsProvider(program_workspace()).write_file(path, text)


def write_bytes(path: str, data: bytes) -> str:
    """``write_text`` for bytes: ``data`` as the new content of the workspace file
    ``path``; what it wrote. Raises as ``write_text`` does."""
    return write_workspace_bytes(program_workspace(), path, data)


def read_text(path: str) -> str:
    """The text of the workspace file ``path`` as the running program sees it: what it
    wrote (staged, not yet committed), else the workspace's. Raises as ``read_file``."""
    return FileToolsProvider(program_workspace()).read_file(path)


def program_workspace() -> Workspace:
    """The workspace of the program running in this process (its tool sources' code
    refused to writes), or, outside a program, the current folder."""
    stage = current()
    if stage is None:
        return Workspace(os.getcwd())
    return Workspace(stage.root, stage.protected)
