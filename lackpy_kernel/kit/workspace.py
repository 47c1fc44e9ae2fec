"""The workspace: the one directory tree the file tools may touch."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import WorkspaceError, WorkspacePathTypeError

CONFIG_DIR = ".lackpy"


class Workspace:
    """A directory that confines every path a tool is given.

    Paths are resolved with symlinks followed and ``..`` collapsed, and must end up inside
    the root. Writes are also refused inside ``<root>/.lackpy/``, so a program cannot change
    its own config, kits or templates.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        real = os.path.realpath(os.fspath(root))
        if not os.path.isdir(real):
            raise NotADirectoryError(f"workspace root {root!s} is not an existing directory")
        self.root = Path(real)
        self._root = real

    def __repr__(self) -> str:
        return f"Workspace({self._root!r})"

    def resolve(self, path: object, *, write: bool = False) -> Path:
        """The real absolute path of ``path`` (relative to the root), refused unless inside.

        With ``write=True`` paths inside ``<root>/.lackpy/`` are refused as well.
        Raises ``WorkspaceError`` (a ``PermissionError``) with the reason.
        """
        text = self._check_path_text(path)
        real = self._realpath(text)
        if not self._is_inside(real, self._root):
            raise self._outside_error(text)
        self._check_no_symlink_loop(text, real)
        if write and self._is_config_path(real):
            raise WorkspaceError(
                f"{text!r} is inside the workspace's {CONFIG_DIR}/ folder, which programs may "
                f"not change (it holds the config, kits and templates); write elsewhere in the "
                f"workspace {self._root}"
            )
        return Path(real)

    def relative(self, path: str | os.PathLike[str]) -> str:
        """The workspace-relative posix form of a resolved path (``.`` for the root)."""
        return Path(os.path.relpath(os.fspath(path), self._root)).as_posix()

    def contains(self, real_path: str | os.PathLike[str]) -> bool:
        """Whether an already-resolved absolute path lies inside the root."""
        return self._is_inside(os.fspath(real_path), self._root)

    def _check_path_text(self, path: object) -> str:
        if not isinstance(path, str):
            hint = " (an int would be an open file descriptor)" if isinstance(path, int) else ""
            raise WorkspacePathTypeError(
                f"a path must be a str, not {type(path).__name__}{hint}; "
                f"give a path relative to the workspace {self._root}"
            )
        if not path:
            raise WorkspaceError(
                f"the path is empty; give a file path relative to the workspace {self._root}"
            )
        if "\0" in path:
            raise WorkspaceError(f"{path!r} contains a NUL character, which no path may contain")
        return path

    def _realpath(self, text: str) -> str:
        # "~" is deliberately not expanded: "~/x" names a folder called "~" in the workspace.
        try:
            return os.path.realpath(os.path.join(self._root, text))
        except (OSError, RecursionError, ValueError) as error:
            raise WorkspaceError(f"{text!r} cannot be resolved ({error})") from None

    def _check_no_symlink_loop(self, text: str, real: str) -> None:
        # realpath resolves every link it can; a link left in its result is part of a loop.
        current = self._root
        for part in Path(os.path.relpath(real, self._root)).parts:
            current = os.path.join(current, part)
            if os.path.islink(current):
                raise WorkspaceError(
                    f"{text!r} goes through a symlink loop at "
                    f"{self.relative(current)!r}; remove or fix that link"
                )
            if not os.path.lexists(current):
                return

    def _is_config_path(self, real: str) -> bool:
        relative = Path(os.path.relpath(real, self._root))
        # casefold: on case-insensitive file systems ".LACKPY" is the same folder.
        if relative.parts and relative.parts[0].casefold() == CONFIG_DIR:
            return True
        config_real = os.path.realpath(os.path.join(self._root, CONFIG_DIR))
        return os.path.isdir(config_real) and self._is_inside(real, config_real)

    def _outside_error(self, text: str) -> WorkspaceError:
        return WorkspaceError(
            f"{text!r} is outside the workspace: paths must stay inside the workspace "
            f"{self._root}; use a path relative to it, without '..' or links that lead out"
        )

    @staticmethod
    def _is_inside(path: str, root: str) -> bool:
        try:
            return os.path.commonpath([root, path]) == root
        except ValueError:  # different drives on Windows, or mixed absolute/relative
            return False
