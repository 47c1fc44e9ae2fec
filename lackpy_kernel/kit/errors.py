"""Exceptions raised by the kit layer."""

from __future__ import annotations


class WorkspaceError(PermissionError):
    """A path was refused because it leaves the workspace or is not allowed there."""


class WorkspacePathTypeError(WorkspaceError, TypeError):
    """A path argument was not a ``str`` (an int would be a file descriptor)."""


class WriteBudgetError(OSError):
    """A program tried to write more than its budget (bytes in all, or files)."""


class UnknownToolError(KeyError):
    """A tool name is not registered in the toolbox."""

    def __str__(self) -> str:
        # KeyError quotes its message with repr(); show it as written instead.
        return str(self.args[0]) if self.args else ""
