"""Committing a program's staged files to the workspace: every path checked first, then all
of them at once, crash-safe.

A commit of more than one file first writes a journal (``.lackpy/journal/<id>.journal``:
the paths and their new contents, checksummed, fsynced), then replaces each file atomically
without waiting for the disk and marks the journal applied, and, once the reply is out,
fsyncs the files and removes the journal (``Landed.finish``). ``recover`` (run when a worker
starts on a workspace) finishes a commit whose journal is whole and drops one that is torn
or applied, so a kill at any point leaves all of a commit's files or none of them, and
never writes them again over a change made since. A commit of one file needs no journal:
its atomic replace is all or nothing already, and its fsync too waits for ``finish``.
"""

from __future__ import annotations

import os
import stat
import zlib
from collections.abc import Iterable
from contextlib import suppress

from lackpy_kernel.config import CONFIG_DIR

from .atomic import atomic_write_bytes_at
from .errors import WorkspaceError
from .staging import remove_tree
from .undo import config_folder, keep_undo, pre_images
from .workspace import STAGING, Workspace

JOURNAL = "journal"  # the folder of the journals, in <workspace>/.lackpy/
JOURNAL_SUFFIX, APPLIED_SUFFIX = ".journal", ".applied"  # a commit's, before and after
MAX_STAGED_BYTES = 16 * 1024 * 1024  # a file tool writes at most this much to a file
_MAGIC = b"lackpy-journal 1\n"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
Change = tuple[str, bytes]  # workspace-relative path, new content


class Landed:
    """A commit's files, in place: ``finish`` makes them durable and removes the journal
    (after the reply, off the critical path; until then the journal holds them)."""

    def __init__(self, workspace: Workspace, paths: list[str],
                 journal: tuple[int, str, int] | None = None) -> None:
        self.workspace, self.paths, self.journal = workspace, paths, journal

    def finish(self) -> None:
        """Fsync each file, then remove the journal (if the commit kept one); once."""
        paths, journal, self.paths, self.journal = self.paths, self.journal, [], None
        try:
            for relative in paths:
                with suppress(OSError):  # gone or changed since: the journal covers it no more
                    _sync(self.workspace, relative)
            if journal is not None:
                os.unlink(journal[1], dir_fd=journal[0])
        finally:
            if journal is not None:
                os.close(journal[2])
                os.close(journal[0])


def commit_stage(workspace: Workspace, folder: str, paths: Iterable[str]) -> Landed:
    """Write the staged copies in ``folder`` of ``paths`` (workspace-relative) to the
    workspace, all or none (``staged_changes``, then ``commit_changes``); what landed."""
    return _commit(workspace, staged_changes(workspace, folder, paths))


def staged_changes(workspace: Workspace, folder: str, paths: Iterable[str]) -> list[Change]:
    """Each of ``paths`` (workspace-relative, once) with its staged copy's content in
    ``folder``. Raises WorkspaceError (or OSError) when a path may not be written: outside
    the workspace, in ``.lackpy/``, a protected file, reached through a link made during
    the run, a folder, a file with other names (hard links), or a staged copy that is not
    a plain file."""
    unique = list(dict.fromkeys(paths))
    for relative in unique:  # first: a path read from the stage is a plain relative one
        _check_target(workspace, relative)
    return [(relative, _staged_bytes(folder, relative)) for relative in unique]


def commit_changes(workspace: Workspace, changes: list[Change]) -> Landed:
    """Write ``changes`` (from ``staged_changes``) to the workspace, all or none, each path
    checked again; what landed, for ``Landed.finish``. Raises as ``staged_changes``. Once
    landed, the files' pre-images are kept for ``undo.undo_last``."""
    for relative, _ in changes:  # the workspace may have changed while a person looked
        _check_target(workspace, relative)
    return _commit(workspace, changes)


def _commit(workspace: Workspace, changes: list[Change]) -> Landed:
    unique = [relative for relative, _ in changes]
    images = pre_images(workspace, changes)
    if len(changes) == 1:  # one atomic replace is all or nothing already
        _apply(workspace, changes, durable=False)
        keep_undo(workspace, images)
        return Landed(workspace, unique)
    folder_fd, name, fd = _write_journal(workspace, changes)
    try:
        _apply(workspace, changes, durable=False)
        # Applied: a recover after a kill now drops it rather than write its files again
        # over a change made since.
        applied = name.removesuffix(JOURNAL_SUFFIX) + APPLIED_SUFFIX
        os.rename(name, applied, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
    except BaseException:
        Landed(workspace, [], (folder_fd, name, fd)).finish()  # what was replaced stays so
        raise
    keep_undo(workspace, images)
    return Landed(workspace, unique, (folder_fd, applied, fd))


def recover(root: str | os.PathLike[str]) -> list[str]:
    """Finish the commits a kill interrupted in the workspace at ``root`` (drop a torn
    journal, and one marked applied), and drop the staging folders of processes that are
    gone; the paths the finished commits wrote."""
    config = os.path.join(os.fspath(root), CONFIG_DIR)
    written = []
    workspace: Workspace | None = None
    for name, fd, folder in _journals(config):
        try:
            changes = _read_journal(fd) if name.endswith(JOURNAL_SUFFIX) else []
            workspace = workspace or Workspace(root)
            with suppress(OSError):  # one it may not write now (or planted) is dropped
                for relative, _ in changes:
                    _check_target(workspace, relative)
                _apply(workspace, changes)
                written += [relative for relative, _ in changes]
            with suppress(FileNotFoundError):
                os.unlink(name, dir_fd=folder)
        finally:
            os.close(fd)
    _drop_stale_stages(os.path.join(config, STAGING))
    return written


def _staged_bytes(folder: str, relative: str) -> bytes:
    """The staged copy's content, opened one folder at a time without following links."""
    *parts, name = relative.split("/")
    try:
        fd = os.open(folder, _DIR_FLAGS)
        for part in parts:
            parent, fd = fd, -1
            try:
                fd = os.open(part, _DIR_FLAGS, dir_fd=parent)
            finally:
                os.close(parent)
        try:
            file = os.open(name, _READ_FLAGS, dir_fd=fd)
        finally:
            os.close(fd)
    except OSError as error:
        raise WorkspaceError(f"the staged copy of {relative!r} cannot be read "
                             f"({error.strerror}); nothing was written") from None
    with os.fdopen(file, "rb") as stream:
        info = os.fstat(file)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
            raise WorkspaceError(f"the staged copy of {relative!r} is not a plain file of "
                                 "its own; nothing was written")
        data = stream.read(MAX_STAGED_BYTES + 1)
    if len(data) > MAX_STAGED_BYTES:
        raise WorkspaceError(f"the staged copy of {relative!r} is over {MAX_STAGED_BYTES} "
                             "bytes; nothing was written")
    return data


def _check_target(workspace: Workspace, relative: str) -> None:
    """Refuse a path the program may not write now (``Workspace.resolve`` with ``write``),
    one that is not the plain relative form of where it leads (``..``, a link on its way
    made during the run), a folder, a special file, or a file with more than one name."""
    real = workspace.resolve(relative, write=True)
    if workspace.relative(real) != relative:
        raise WorkspaceError(f"{relative!r} now leads to {workspace.relative(real)!r}: a link "
                             "on its way was made during the run; nothing was written")
    try:
        info = os.lstat(real)
    except FileNotFoundError:
        return
    if not stat.S_ISREG(info.st_mode):
        raise WorkspaceError(f"{relative!r} is no longer a regular file in the workspace; "
                             "nothing was written")
    if info.st_nlink > 1:
        raise WorkspaceError(f"{relative!r} has {info.st_nlink} hard links (another name, "
                             "which may lie outside the workspace); nothing was written")


def _apply(workspace: Workspace, changes: list[Change], *, durable: bool = True) -> None:
    """Replace each file atomically, its folders made (one at a time, following no link)."""
    for relative, data in changes:
        folder, _, name = relative.rpartition("/")
        fd = workspace.open_folder_for_write(workspace.root / folder, relative)
        try:
            atomic_write_bytes_at(fd, name, data, durable=durable)
        finally:
            os.close(fd)


def _sync(workspace: Workspace, relative: str) -> None:
    folder, _, name = relative.rpartition("/")
    fd = workspace.open_folder_for_write(workspace.root / folder, relative)
    try:
        file = os.open(name, _READ_FLAGS, dir_fd=fd)
    finally:
        os.close(fd)
    try:
        os.fsync(file)
    finally:
        os.close(file)


def _write_journal(workspace: Workspace, changes: list[Change]) -> tuple[int, str, int]:
    """The journal folder's fd, the journal's name and its fd (locked while the commit
    runs, so ``recover`` in another process leaves it alone), written and fsynced."""
    journal = _journal_folder(str(workspace.root))
    try:
        name = f"{os.getpid()}-{os.urandom(6).hex()}{JOURNAL_SUFFIX}"
        fd = os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600, dir_fd=journal)
    except BaseException:
        os.close(journal)
        raise
    try:
        _lock(fd, wait=True)
        header = "\0".join(f"{len(data)} {relative}" for relative, data in changes).encode()
        body = b"".join([_MAGIC, b"%d\n" % len(header), header,
                         *(data for _, data in changes)])
        with os.fdopen(os.dup(fd), "wb") as stream:
            stream.write(body + b"%08x\n" % zlib.crc32(body))
            stream.flush()
            os.fsync(stream.fileno())
    except BaseException:
        os.close(fd)
        with suppress(OSError):
            os.unlink(name, dir_fd=journal)
        os.close(journal)
        raise
    return journal, name, fd


def _journal_folder(root: str) -> int:
    """An fd of ``<root>/.lackpy/journal``, made if missing; neither may be a link."""
    try:
        return config_folder(root, JOURNAL)
    except OSError as error:
        raise WorkspaceError(f"cannot keep the journal of the program's file changes in "
                             f"{CONFIG_DIR}/{JOURNAL} ({error.strerror}; it must be a "
                             "folder, not a link); nothing was written") from None


def _journals(config: str) -> Iterable[tuple[str, int, int]]:
    """Each journal no live commit holds: its name, its fd (locked) and the folder's fd."""
    try:
        folder = os.open(os.path.join(config, JOURNAL), _DIR_FLAGS)
    except OSError:
        return
    try:
        for name in os.listdir(folder):
            if not name.endswith((JOURNAL_SUFFIX, APPLIED_SUFFIX)):
                continue
            try:
                fd = os.open(name, _READ_FLAGS, dir_fd=folder)
            except OSError:
                continue
            try:
                _lock(fd, wait=False)
                if not _same_file(fd, name, folder):  # recovered meanwhile by another process
                    raise FileNotFoundError(name)
            except OSError:  # a commit in progress, or done
                os.close(fd)
                continue
            yield name, fd, folder
    finally:
        os.close(folder)


def _same_file(fd: int, name: str, folder: int) -> bool:
    opened, named = os.fstat(fd), os.stat(name, dir_fd=folder, follow_symlinks=False)
    return (opened.st_dev, opened.st_ino) == (named.st_dev, named.st_ino)


def _read_journal(fd: int) -> list[Change]:
    """The changes a whole journal holds; none for a torn or foreign one (its commit never
    began to replace files)."""
    with os.fdopen(os.dup(fd), "rb") as stream:
        data = stream.read()
    body, crc = data[:-9], data[-9:-1]
    if not body.startswith(_MAGIC) or not data.endswith(b"\n") or \
            crc != b"%08x" % zlib.crc32(body):
        return []
    size_line, _, rest = body[len(_MAGIC):].partition(b"\n")
    try:
        header, contents = rest[:int(size_line)], rest[int(size_line):]
        changes, at = [], 0
        for entry in header.decode().split("\0"):
            size, _, relative = entry.partition(" ")
            changes.append((relative, contents[at:at + int(size)]))
            at += int(size)
    except ValueError:
        return []
    return changes


def _drop_stale_stages(staging: str) -> None:
    """Remove the staging folders whose process is gone (a kill before its worker
    committed or dropped it): ``<pid>``, or ``<pid>-<n>`` for a run in a caller's process."""
    with suppress(OSError):
        for name in os.listdir(staging):
            pid = name.partition("-")[0]
            if pid.isdigit() and not _alive(int(pid)):
                remove_tree(os.path.join(staging, name))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _lock(fd: int, *, wait: bool) -> None:
    """Lock the open journal ``fd`` for this process (OSError when ``wait`` is false and
    another process holds it). Without fcntl (Windows, where programs run in the caller's
    process, one commit at a time) nothing is locked."""
    try:
        import fcntl  # here, not at the top: the package must import on Windows
    except ImportError:
        return
    fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
