"""Tools and kits: tool specs, the toolbox, kit resolution, the workspace and the file tools.

A Python tool's own code writes the workspace through ``write_text`` and ``write_bytes``
(``tool_files``): staged with the program, like the file tools' writes.

The configured tool sources (Python modules, MCP servers) are ``lackpy_kernel.kit.sources``.
"""

from .builtin_tools import FileToolsProvider, builtin_toolbox
from .effects import FileEffects, record_read, record_write, recording
from .errors import TooManyMatchesError, UnknownToolError, WorkspaceError, WorkspacePathTypeError
from .registry import (
    Kit,
    KitFile,
    ResolvedKit,
    available_kits,
    check_kit_name,
    find_kit_file,
    parse_kit_file,
    resolve_kit,
    workspace_kits_dir,
    write_kit_file,
)
from .spec import ArgSpec, ToolSpec
from .tool_files import read_text, write_bytes, write_text
from .toolbox import Toolbox, ToolProvider
from .undo import NOTHING_TO_UNDO, cannot_undo, drop_last, undo_last
from .workspace import Workspace

__all__ = [
    "NOTHING_TO_UNDO",
    "ArgSpec",
    "FileEffects",
    "FileToolsProvider",
    "Kit",
    "KitFile",
    "ResolvedKit",
    "TooManyMatchesError",
    "ToolProvider",
    "ToolSpec",
    "Toolbox",
    "UnknownToolError",
    "Workspace",
    "WorkspaceError",
    "WorkspacePathTypeError",
    "available_kits",
    "builtin_toolbox",
    "check_kit_name",
    "find_kit_file",
    "parse_kit_file",
    "read_text",
    "record_read",
    "record_write",
    "recording",
    "resolve_kit",
    "cannot_undo",
    "drop_last",
    "undo_last",
    "workspace_kits_dir",
    "write_bytes",
    "write_kit_file",
    "write_text",
]
