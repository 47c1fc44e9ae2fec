"""The kit layer's exceptions; they live in :mod:`lackpy_kernel.errors` with all the others."""

from lackpy_kernel.errors import (
    KitError,
    TooManyMatchesError,
    UnknownKitError,
    UnknownToolError,
    WorkspaceError,
    WorkspacePathTypeError,
    WriteBudgetError,
)

__all__ = [
    "KitError",
    "TooManyMatchesError",
    "UnknownKitError",
    "UnknownToolError",
    "WorkspaceError",
    "WorkspacePathTypeError",
    "WriteBudgetError",
]
