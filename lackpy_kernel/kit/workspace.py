"""The workspace: the one directory tree the file tools may touch."""

from __future__ import annotations

import errno
import importlib.machinery
import os
import stat
from collections.abc import Collection, Mapping
from contextlib import suppress
from pathlib import Path

from lackpy_kernel.config import CONFIG_DIR

from .effects import check_folder_budget, record_folder
from .errors import WorkspaceError, WorkspacePathTypeError

_PROC_FD = "/proc/self/fd"  # Linux: each entry links to the real path of an open fd
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
IMPORTABLE_SUFFIXES = frozenset({*importlib.machinery.all_suffixes(), ".pth"})
GIT_DIR = ".git"  # git's folder (or the file naming it): programs may not write it
# Kibitzer's folder: its config decides what programs may write, its state in which mode
KIBITZER_DIR = ".kibitzer"
STAGING = "staging"  # the folder of the running programs' stages, in <root>/.lackpy/ (kit.staging)


class Workspace:
    """A directory that confines every path a tool is given.

    Paths are resolved with symlinks followed and ``..`` collapsed, and must end up inside
    the root. Reads and writes are refused inside ``<root>/.lackpy/staging/``, where the
    programs running now (side by side, maybe) keep the file changes they have not
    committed. Writes are also refused inside ``<root>/.lackpy/``, so a program cannot change
    its own config, kits or templates, inside ``.git`` and ``<root>/.kibitzer/`` (what git
    runs; what Kibitzer lets programs write), and to the files in ``protected`` (real absolute
    paths, a folder's ending in a separator: the code of the configured tool sources, which
    runs outside the sandbox; a mapping names the source of each). The collection is kept,
    not copied, so its owner may add to it later.
    """

    def __init__(self, root: str | os.PathLike[str], protected: Collection[str] = ()) -> None:
        real = os.path.realpath(os.fspath(root))
        if not os.path.isdir(real):
            raise NotADirectoryError(f"workspace root {root!s} is not an existing directory")
        self.root = Path(real)
        self._root = real
        self._prefix = _prefix_inside(real)
        self._stages = os.path.join(real, CONFIG_DIR, STAGING).casefold()
        self.protected = protected

    def __repr__(self) -> str:
        return f"Workspace({self._root!r})"

    def resolve(self, path: object, *, write: bool = False) -> Path:
        """The real absolute path of ``path`` (relative to the root), refused unless inside.

        With ``write=True`` paths inside ``<root>/.lackpy/``, ``<root>/.git`` (git runs
        code from it: hooks, ``core.fsmonitor``) or ``<root>/.kibitzer/`` (Kibitzer's config
        and state) and protected files are refused as well.
        Raises ``WorkspaceError`` (a ``PermissionError``) with the reason.
        """
        text = self._check_path_text(path)
        real = self._realpath(text)
        if not self.contains(real):
            raise self._outside_error(text)
        self._check_no_symlink_loop(text, real)
        self._check_not_staged(text, real)
        if write:
            self._check_not_config(text, real)
            self._check_not_git(text, real)
            self._check_not_kibitzer(text, real)
            self._check_not_protected(text, real)
        return Path(real)

    def relative(self, path: str | os.PathLike[str]) -> str:
        """The workspace-relative posix form of a resolved path (``.`` for the root)."""
        text = os.fspath(path)
        if text == self._root:
            return "."
        if text.startswith(self._prefix):
            return text[len(self._prefix):].replace(os.sep, "/")
        return Path(os.path.relpath(text, self._root)).as_posix()

    def contains(self, real_path: str | os.PathLike[str]) -> bool:
        """Whether an already-resolved absolute path lies inside the root."""
        text = os.fspath(real_path)
        return text == self._root or text.startswith(self._prefix)

    def check_opened(self, fd: int, text: str, *, write: bool = False) -> None:
        """Refuse an open file or folder that is not inside the root, or is inside
        ``<root>/.lackpy/staging/`` (with ``write``, anywhere inside ``<root>/.lackpy/``).

        ``resolve()`` checks a name; between that check and the open another process may swap
        a folder on the way for a link. This checks what was actually opened. Where the OS
        cannot say (no ``/proc/self/fd``), the name check is all there is.
        """
        if not os.path.isdir(_PROC_FD):
            return
        try:
            real = os.readlink(f"{_PROC_FD}/{fd}")
        except OSError as error:  # e.g. a path longer than PATH_MAX
            raise WorkspaceError(
                f"cannot tell where {text!r} is ({error.strerror}); use a shorter path"
            ) from None
        if not self.contains(real):
            raise self._outside_error(text)
        self._check_not_staged(text, real)
        if write:
            self._check_not_config(text, real)

    def open_folder_for_write(self, folder: str | os.PathLike[str], text: str) -> int:
        """A read-only fd of the resolved folder ``folder``, made if missing, checked as a
        place to write (``text`` is the path the user gave, for messages).

        The walk starts at the root and opens (or makes) one component at a time without
        following links, so no folder on the way can be swapped for a link that leads out.
        The caller closes the fd.
        """
        relative = os.path.relpath(os.fspath(folder), self._root)
        parts = [] if relative == "." else Path(relative).parts
        if ".." in parts:
            raise self._outside_error(text)
        if not os.path.isdir(folder):  # refused before any folder is made, not half-way
            check_folder_budget(text, len(parts))
        fd = os.open(self._root, _DIR_FLAGS)
        try:
            for depth, part in enumerate(parts, 1):
                parent, fd = fd, -1
                try:
                    fd = _open_child_folder(parent, part, text, depth)
                finally:
                    os.close(parent)
            self.check_opened(fd, text, write=True)
        except BaseException:
            if fd >= 0:
                os.close(fd)
            raise
        return fd

    def warm_up(self) -> None:
        """Check the root as a file tool checks a path it is given (resolve it, open it,
        check what was opened), to no effect. A forked process that does this while it waits
        for a program pays the first use of that code (pages copied from its parent) then."""
        real = self.resolve(".")
        fd = os.open(real, _DIR_FLAGS)
        try:
            self.check_opened(fd, ".")
            os.fstat(fd)
        finally:
            os.close(fd)
        self.relative(real)

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
        relative = self.relative(real)
        if relative == ".":
            return
        current = self._root
        for part in relative.split("/"):
            current = os.path.join(current, part)
            try:
                mode = os.lstat(current).st_mode
            except (OSError, ValueError):
                return  # not there: nothing below it is either
            if stat.S_ISLNK(mode):
                raise WorkspaceError(
                    f"{text!r} goes through a symlink loop at "
                    f"{self.relative(current)!r}; remove or fix that link"
                )

    def stage_roots(self) -> list[str]:
        """The folder of the running programs' stages, casefolded: ``<root>/.lackpy/staging``
        and, where ``.lackpy`` is a link, the real folder it leads to (the stages are there)."""
        config = os.path.join(self._root, CONFIG_DIR)
        if not os.path.islink(config):
            return [self._stages]
        try:
            linked = os.path.join(os.path.realpath(config), STAGING).casefold()
        except (OSError, RecursionError, ValueError):
            return [self._stages]
        return [self._stages, linked]

    def _check_not_staged(self, text: str, real: str) -> None:
        # casefold: on case-insensitive file systems ".LACKPY/Staging" is the same folder.
        folded = real.casefold()
        if any(self._is_inside(folded, stages) for stages in self.stage_roots()):
            raise WorkspaceError(
                f"{text!r} is inside the workspace's {CONFIG_DIR}/{STAGING}/ folder, where "
                f"running programs keep the file changes they have not committed; no program "
                f"may read or write another's: read the file at its place in the workspace"
            )

    def _check_not_config(self, text: str, real: str) -> None:
        if self._is_in_folder(real, CONFIG_DIR):
            raise WorkspaceError(
                f"{text!r} is inside the workspace's {CONFIG_DIR}/ folder, which programs may "
                f"not change (it holds the config, kits and templates); write elsewhere in the "
                f"workspace {self._root}"
            )

    def _check_not_git(self, text: str, real: str) -> None:
        relative = Path(os.path.relpath(real, self._root))
        if any(part.casefold() == GIT_DIR for part in relative.parts):  # a nested repo's too
            raise WorkspaceError(
                f"{text!r} is in the workspace's {GIT_DIR} (a file git reads, and may run code "
                f"from: hooks, core.fsmonitor), which programs may not change; run git "
                f"yourself, or write elsewhere in the workspace {self._root}"
            )

    def _check_not_kibitzer(self, text: str, real: str) -> None:
        if self._is_in_folder(real, KIBITZER_DIR):
            raise WorkspaceError(
                f"{text!r} is in the workspace's {KIBITZER_DIR}/ folder (Kibitzer's config and "
                f"state: what programs may write), which programs may not change; use "
                f"Kibitzer's own commands, or write elsewhere in the workspace {self._root}"
            )

    def _check_not_protected(self, text: str, real: str) -> None:
        source = self._protecting(real)
        if source is not None:
            raise WorkspaceError(
                f"{text!r} is the code of a tool source configured in {CONFIG_DIR}/config.toml, "
                f"which programs may not change ({source}; lackpy runs its code outside the "
                f"sandbox); edit it yourself, or write elsewhere in the workspace {self._root}"
            )

    def _protecting(self, real: str) -> str | None:
        """The tool source whose code ``real`` is (or may become), or None.

        A file of ``protected``, or any file under one of its folders (an entry ending in a
        separator); under the workspace's root itself, only what Python could import from
        it: its modules, a package's ``__init__``, ``__pycache__``. Compared casefolded: on
        case-insensitive file systems "Tools/Words.py" is the same file.
        """
        folded = real.casefold()
        for entry in self.protected:
            key = entry.casefold()
            if key == folded or (key.endswith(os.sep) and folded.startswith(key) and (
                    key != self._prefix.casefold() or _importable_at_root(folded[len(key):]))):
                return self.protected[entry] if isinstance(self.protected, Mapping) else \
                    "a tool source"
        return None

    def _is_in_folder(self, real: str, name: str) -> bool:
        """Whether ``real`` is inside the root's folder ``name`` (``.lackpy``, ``.kibitzer``),
        by its name or, where that folder is a link, by the real folder it leads to."""
        relative = Path(os.path.relpath(real, self._root))
        # casefold: on case-insensitive file systems ".LACKPY" is the same folder.
        if relative.parts and relative.parts[0].casefold() == name:
            return True
        folder_real = os.path.realpath(os.path.join(self._root, name))
        return os.path.isdir(folder_real) and self._is_inside(real, folder_real)

    def _outside_error(self, text: str) -> WorkspaceError:
        return WorkspaceError(
            f"{text!r} is outside the workspace: paths must stay inside the workspace "
            f"{self._root}; use a path relative to it, without '..' or links that lead out"
        )

    @staticmethod
    def _is_inside(path: str, root: str) -> bool:
        # Both are absolute and normal: from realpath, or the system's name of an open file.
        return path == root or path.startswith(_prefix_inside(root))


def _prefix_inside(root: str) -> str:
    """What the paths inside the folder ``root`` (absolute, normal) start with."""
    return root.rstrip(os.sep) + os.sep


def _open_child_folder(parent: int, name: str, text: str, depth: int) -> int:
    try:
        return _open_folder_at(parent, name, text)
    except FileNotFoundError:
        pass
    check_folder_budget(text, depth)
    with suppress(FileExistsError):  # made meanwhile by someone else: open what is there
        os.mkdir(name, dir_fd=parent)
        record_folder()
    return _open_folder_at(parent, name, text)


def _open_folder_at(parent: int, name: str, text: str) -> int:
    try:
        return os.open(name, _DIR_FLAGS | _NOFOLLOW, dir_fd=parent)
    except OSError as error:
        if error.errno not in (errno.ENOTDIR, errno.ELOOP):
            raise
    # O_NOFOLLOW makes a link fail (ENOTDIR or ELOOP). resolve() followed every link
    # already, so a link here was swapped in after that check.
    try:
        is_link = stat.S_ISLNK(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode)
    except OSError:
        is_link = False
    if is_link:
        raise WorkspaceError(
            f"{text!r} changed while it was being written: the folder {name!r} on the way "
            f"became a link; nothing was written"
        )
    raise NotADirectoryError(f"cannot create the folders for {text!r}: a file is in the way")


def _importable_at_root(relative: str) -> bool:
    """Whether a file at ``relative`` under a folder on ``sys.path`` could be imported:
    a module directly in it, a package's ``__init__``, or what ``__pycache__`` holds."""
    parts = relative.split(os.sep)
    stem, suffix = os.path.splitext(parts[-1])
    code = suffix in IMPORTABLE_SUFFIXES
    return parts[0] == "__pycache__" or (code and (len(parts) == 1 or
                                                   (len(parts) == 2 and stem == "__init__")))
