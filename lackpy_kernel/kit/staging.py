"""Staged writes: while a program runs, the file tools write to its staging folder, never
the workspace, and its own reads and ``find_files`` see what it staged there.

The sandbox's child opens a ``staging()`` around a program; the worker then commits the
staged files to the workspace when the program ended well (``journal.commit_stage``), or
drops them (``discard_stage``). Without a stage (the tools used directly, or a program run
in the caller's process) the file tools write the workspace itself.

A stage mirrors the workspace's tree under ``<workspace>/.lackpy/staging/<pid>/``: the same
file system, so the worker's commit never copies across devices. The worker makes the
folder of the stages (``make_stages``) before it forks; each child makes its own stage
(``make_stage``) before its walls go up, and the walls let it write there and nowhere
else (``run.walls``).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Collection, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from pathlib import Path

from lackpy_kernel.config import CONFIG_DIR

from .effects import check_folder_budget, record_folder
from .workspace import STAGING, Workspace

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW
_FILE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC

_current: ContextVar[Stage | None] = ContextVar("lackpy_stage", default=None)


def stage_folder(root: str | os.PathLike[str], owner: int) -> str:
    """The staging folder of the process ``owner`` for the workspace at ``root`` (real)."""
    return os.path.join(os.fspath(root), CONFIG_DIR, STAGING, str(owner))


def make_stages(root: str | os.PathLike[str]) -> str | None:
    """The folder of the stages in the workspace at ``root`` (real), made if missing; None
    when it cannot be made (a workspace this process may not write)."""
    folder = os.path.dirname(stage_folder(root, 0))
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return None
    return folder


def make_stage(folder: str) -> None:
    """Make the staging folder ``folder`` (``stage_folder``) fresh: one left by a process
    that had the same pid is removed first. Raises OSError."""
    try:
        os.mkdir(folder, 0o700)
    except FileNotFoundError:  # the first stage in this workspace
        os.makedirs(os.path.dirname(folder), exist_ok=True)
        os.mkdir(folder, 0o700)
    except FileExistsError:
        remove_tree(folder)
        os.mkdir(folder, 0o700)


class Stage:
    """A program's staged files: workspace-relative path -> its copy in ``folder`` (made on
    the first write, unless ``made`` says it was made fresh already). ``protected``: the
    files the program's write tools refuse (``Workspace``), for the workspace API."""

    def __init__(self, root: str, folder: str, *, made: bool = False,
                 protected: Collection[str] = ()) -> None:
        self.root = root  # the workspace's real path (a tool's workspace.root)
        self.folder = folder
        self.protected = protected
        self.files: set[str] = set()
        self._made_already = made
        self._tree: Workspace | None = None  # the folder, once used, confining its own paths

    def staged(self, relative: str) -> tuple[Workspace, Path] | None:
        """The stage's tree and the staged copy of ``relative``, or None when not staged."""
        if relative not in self.files or self._tree is None:
            return None
        return self._tree, self._tree.root / relative

    @property
    def tree(self) -> Workspace | None:
        """The staging folder as a tree of its own, or None before the first write."""
        return self._tree

    def write(self, relative: str, data: bytes, shown: str) -> None:
        """Stage ``data`` as the new content of ``relative`` (``shown``: the path as given).
        Folders missing from the workspace count against the program's folder budget."""
        *folders, name = relative.split("/")
        fd = self._open_folder(folders, shown)
        try:
            _write_at(fd, name, data)
        finally:
            os.close(fd)
        self.files.add(relative)

    def _open_folder(self, parts: list[str], shown: str) -> int:
        fd = os.open(self._made().root, _DIR_FLAGS)
        workspace_path = self.root
        try:
            for depth, part in enumerate(parts, 1):
                workspace_path = os.path.join(workspace_path, part)
                parent, fd = fd, -1
                try:
                    fd = self._open_child(parent, part, workspace_path, shown, depth)
                finally:
                    os.close(parent)
        except BaseException:
            if fd >= 0:
                os.close(fd)
            raise
        return fd

    def _open_child(self, parent: int, part: str, workspace_path: str, shown: str,
                    depth: int) -> int:
        try:
            return os.open(part, _DIR_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            pass
        except OSError as error:
            if error.errno in (errno.ENOTDIR, errno.ELOOP):
                raise _in_the_way(shown) from None
            raise
        new = not os.path.isdir(workspace_path)
        if new and os.path.lexists(workspace_path):
            raise _in_the_way(shown)
        if new:
            check_folder_budget(shown, depth)
        os.mkdir(part, dir_fd=parent)
        if new:
            record_folder()
        return os.open(part, _DIR_FLAGS, dir_fd=parent)

    def _made(self) -> Workspace:
        """The staging folder, made fresh on first use unless it was before."""
        if self._tree is None:
            if not self._made_already:
                make_stage(self.folder)
            self._tree = Workspace(self.folder)
        return self._tree


@contextmanager
def staging(stage: Stage) -> Iterator[Stage]:
    """Send the file tools' writes to the workspace at ``stage.root`` to ``stage`` inside
    the block."""
    token = _current.set(stage)
    try:
        yield stage
    finally:
        _current.reset(token)


def current() -> Stage | None:
    """The stage open in this context (a program running), or None."""
    return _current.get()


def current_stage(workspace: Workspace) -> Stage | None:
    """The stage open for ``workspace``, or None (its tools then write the workspace)."""
    stage = _current.get()
    if stage is None or stage.root != str(workspace.root):
        return None
    return stage


def discard_stage(folder: str) -> None:
    """Remove a staging folder and what it holds (nothing if it was never made)."""
    remove_tree(folder)


def remove_tree(path: str) -> None:
    """Remove the folder ``path`` and everything below it, following no link; nothing if it
    is not there."""
    if empty_folder(path):
        with suppress(FileNotFoundError):
            os.rmdir(path)


def empty_folder(path: str) -> bool:
    """Remove everything below the folder ``path``, following no link, and keep the folder
    (a walled process that runs more programs may write its own stage only: that folder);
    whether it was there."""
    try:
        fd = os.open(path, _DIR_FLAGS)
    except (FileNotFoundError, NotADirectoryError):
        return False
    try:
        _empty(fd)
    finally:
        os.close(fd)
    return True


def _empty(fd: int) -> None:
    # A stack of open folders, not recursion: a stage can be nested deeper than Python recurses.
    stack = [(fd, "", False)]
    while stack:
        folder, name, opened = stack[-1]
        child = _next_folder(folder)
        if child is not None:
            stack.append((os.open(child, _DIR_FLAGS, dir_fd=folder), child, True))
            continue
        stack.pop()
        if opened:
            parent = stack[-1][0]
            os.close(folder)
            with suppress(FileNotFoundError):
                os.rmdir(name, dir_fd=parent)


def _next_folder(fd: int) -> str | None:
    """Remove the files in the open folder ``fd``; the name of a folder in it, if any."""
    with os.scandir(fd) as entries:
        names = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
    for name, is_dir in names:
        if is_dir:
            return name
        with suppress(FileNotFoundError):
            os.unlink(name, dir_fd=fd)
    return None


def _write_at(fd: int, name: str, data: bytes) -> None:
    """Write ``data`` to ``name`` in the open folder ``fd`` (no fsync: the commit makes the
    workspace's copy durable)."""
    try:
        out = os.open(name, _FILE_FLAGS, 0o600, dir_fd=fd)
    except IsADirectoryError:
        raise IsADirectoryError(f"{name!r} is a folder; write_file needs a file path") from None
    with os.fdopen(out, "wb") as stream:
        if not stat.S_ISREG(os.fstat(out).st_mode):
            raise ValueError(f"{name!r} is not a regular file")
        stream.write(data)


def _in_the_way(shown: str) -> NotADirectoryError:
    return NotADirectoryError(f"cannot create the folders for {shown!r}: a file is in the way")
