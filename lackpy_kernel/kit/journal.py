"""Committing a program's staged files to the workspace: every path checked first, then all
of them at once, crash-safe.

A commit of more than one file first writes a journal (``.lackpy/journal/<id>.journal``:
the paths, what each file was before (its inode, size and times, or "none"), and their new
contents, checksummed, fsynced), then replaces each file atomically without waiting for the
disk and marks the journal applied, and, once the reply is out, fsyncs the files and removes
the journal (``Landed.finish``). ``recover`` (run when a worker starts on a workspace)
finishes a commit whose journal is whole and drops one that is torn or applied, so a kill at
any point leaves all of a commit's files or none of them. It never writes over a change made
since: a file that is neither what the commit found nor what it wrote (a person edited,
made or deleted it after the kill) is left as it is, the program's version is written beside
it (``NAME.lackpy-recovered``), and ``Recovery.notes`` says so, naming both. A commit of one
file needs no journal: its atomic replace is all or nothing already, and its fsync too waits
for ``finish``.
"""

from __future__ import annotations

import os
import stat
import zlib
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass, field

from lackpy_kernel.config import CONFIG_DIR

from .atomic import atomic_write_bytes_at
from .errors import WorkspaceError
from .staging import remove_tree
from .undo import TooBig, config_folder, keep_undo, pre_images, read_bytes
from .undo_record import digest
from .workspace import STAGING, Workspace

JOURNAL = "journal"  # the folder of the journals, in <workspace>/.lackpy/
JOURNAL_SUFFIX, APPLIED_SUFFIX = ".journal", ".applied"  # a commit's, before and after
MAX_STAGED_BYTES = 16 * 1024 * 1024  # a file tool writes at most this much to a file
RECOVERED_SUFFIX = ".lackpy-recovered"  # beside a file changed since a killed commit
MAX_BESIDE = 100  # NAME.lackpy-recovered, NAME.lackpy-recovered-2, ... tried
_MAGIC, _MAGIC_V1 = b"lackpy-journal 2\n", b"lackpy-journal 1\n"
_ABSENT, _UNKNOWN = "-", "?"  # a file's stamp: it did not exist; unknown (a version 1 journal)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
Change = tuple[str, bytes]  # workspace-relative path, new content
Entry = tuple[str, str, bytes]  # a journal's: path, the file's stamp before, new content


@dataclass
class Recovery:
    """What ``recover`` did: the paths it wrote, each file it left as it was with where the
    program's version went instead (None: nowhere), and a note per such file for the
    person, naming it and saying what to do."""

    written: list[str] = field(default_factory=list)
    kept: dict[str, str | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


class Landed:
    """A commit's files, in place: ``finish`` makes them durable and removes the journal
    (after the reply, off the critical path; until then the journal holds them). ``notes``
    are for the person: a file whose change cannot be undone, an undo record not kept."""

    def __init__(self, workspace: Workspace, paths: list[str],
                 journal: tuple[int, str, int] | None = None,
                 notes: list[str] | None = None) -> None:
        self.workspace, self.paths, self.journal = workspace, paths, journal
        self.notes = notes or []

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
        return Landed(workspace, unique, notes=keep_undo(workspace, images))
    entries = [(relative, _stamp(workspace, relative), data) for relative, data in changes]
    folder_fd, name, fd = _write_journal(workspace, entries)
    try:
        _apply(workspace, changes, durable=False)
        # Applied: a recover after a kill now drops it rather than write its files again
        # over a change made since.
        applied = name.removesuffix(JOURNAL_SUFFIX) + APPLIED_SUFFIX
        os.rename(name, applied, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
    except BaseException:
        Landed(workspace, [], (folder_fd, name, fd)).finish()  # what was replaced stays so
        raise
    notes = keep_undo(workspace, images)
    return Landed(workspace, unique, (folder_fd, applied, fd), notes)


def recover(root: str | os.PathLike[str]) -> Recovery:
    """Finish the commits a kill interrupted in the workspace at ``root`` (drop a torn
    journal, and one marked applied), and drop the staging folders of processes that are
    gone. A file changed since the commit is never written over: the program's version goes
    beside it (see the module's docstring). What was done, for the person."""
    config = os.path.join(os.fspath(root), CONFIG_DIR)
    recovery = Recovery()
    workspace: Workspace | None = None
    for name, fd, folder in _journals(config):
        try:
            entries = _read_journal(fd) if name.endswith(JOURNAL_SUFFIX) else []
            workspace = workspace or Workspace(root)
            try:  # one it may not write now (or planted) is dropped, and said so
                for relative, _, _ in entries:
                    _check_target(workspace, relative)
                _finish(workspace, entries, recovery)
            except OSError as error:
                paths = ", ".join(relative for relative, _, _ in entries)
                recovery.notes.append(
                    f"a program's commit of {paths} was interrupted and could not be "
                    f"finished ({error.strerror or error}); what it had not written yet is "
                    "left undone: run the program again if you want its change")
            with suppress(FileNotFoundError):
                os.unlink(name, dir_fd=folder)
        finally:
            os.close(fd)
    _drop_stale_stages(os.path.join(config, STAGING))
    return recovery


def _finish(workspace: Workspace, entries: list[Entry], recovery: Recovery) -> None:
    """Write each file of a killed commit that is still as the commit found it; keep the
    program's version beside each one changed since."""
    states = [_state(workspace, entry) for entry in entries]
    # Files are replaced in order: one before the last that landed was replaced too, so
    # one of them that is "as found" (gone, as it was before) was deleted since.
    reached = max((at for at, state in enumerate(states) if state == "replaced"), default=-1)
    pending = [entry for at, (entry, state) in enumerate(zip(entries, states, strict=True))
               if state == "found" and at > reached]
    _apply(workspace, [(relative, data) for relative, _, data in pending])
    recovery.written += [relative for relative, _, _ in pending]
    for at, (entry, state) in enumerate(zip(entries, states, strict=True)):
        if state == "changed" or (state == "found" and at < reached):
            _keep_beside(workspace, entry, recovery)


def _state(workspace: Workspace, entry: Entry) -> str:
    """Where one file of a killed commit stands: ``landed`` (it holds the new content; as
    ``replaced`` when the commit's own replace put it there), ``found`` (as the commit
    found it), or ``changed`` (neither: a change made since)."""
    relative, before, data = entry
    stamp = _stamp(workspace, relative)
    try:
        now = read_bytes(workspace, relative, len(data))
    except (OSError, TooBig):  # unreadable, or larger than the new content: not it
        now = None
    if now is not None and len(now) == len(data) and digest(now) == digest(data):
        return "replaced" if stamp != before and before != _UNKNOWN else "landed"
    return "found" if stamp == before and before != _UNKNOWN else "changed"


def _keep_beside(workspace: Workspace, entry: Entry, recovery: Recovery) -> None:
    """Write the program's version of a file changed since beside it, and say so."""
    relative, _, data = entry
    gone = not os.path.lexists(workspace.root / relative)
    what = "was deleted" if gone else "was changed"
    try:
        beside = _beside_name(workspace, relative)
        _apply(workspace, [(beside, data)])
    except OSError as error:
        recovery.kept[relative] = None
        recovery.notes.append(
            f"{relative} {what} after a program's commit that wrote it was interrupted, so "
            f"lackpy left it as it is; the program's version could not be kept beside it "
            f"({error.strerror or error}): run the program again if you want its change")
        return
    recovery.kept[relative] = beside
    recovery.notes.append(
        f"{relative} {what} after a program's commit that wrote it was interrupted, so "
        f"lackpy left it as it is and wrote the program's version beside it, as {beside}: "
        f"compare the two, keep what you want, then delete {beside}")


def _beside_name(workspace: Workspace, relative: str) -> str:
    """A name beside ``relative`` that is free and may be written. Raises OSError."""
    for number in range(1, MAX_BESIDE + 1):
        beside = relative + RECOVERED_SUFFIX + ("" if number == 1 else f"-{number}")
        if not os.path.lexists(workspace.root / beside):
            _check_target(workspace, beside)
            return beside
    raise FileExistsError(f"{relative}{RECOVERED_SUFFIX} to -{MAX_BESIDE} all exist")


def _stamp(workspace: Workspace, relative: str) -> str:
    """What the file at ``relative`` is now, to tell later whether it changed: its inode,
    size and times, or ``_ABSENT``."""
    try:
        info = os.lstat(workspace.root / relative)
    except FileNotFoundError:
        return _ABSENT
    except OSError:
        return _UNKNOWN
    return f"{info.st_ino}.{info.st_size}.{info.st_mtime_ns}.{info.st_ctime_ns}"


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


def _write_journal(workspace: Workspace, entries: list[Entry]) -> tuple[int, str, int]:
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
        header = "\0".join(f"{len(data)} {before} {relative}"
                            for relative, before, data in entries).encode()
        body = b"".join([_MAGIC, b"%d\n" % len(header), header,
                         *(data for _, _, data in entries)])
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


def _read_journal(fd: int) -> list[Entry]:
    """The entries a whole journal holds; none for a torn or foreign one (its commit never
    began to replace files). A version 1 journal's files have no stamp (``_UNKNOWN``)."""
    with os.fdopen(os.dup(fd), "rb") as stream:
        data = stream.read()
    body, crc = data[:-9], data[-9:-1]
    version = 2 if body.startswith(_MAGIC) else 1 if body.startswith(_MAGIC_V1) else 0
    if not version or not data.endswith(b"\n") or crc != b"%08x" % zlib.crc32(body):
        return []
    size_line, _, rest = body[len(_MAGIC):].partition(b"\n")
    try:
        header, contents = rest[:int(size_line)], rest[int(size_line):]
        entries, at = [], 0
        for line in header.decode().split("\0"):
            size, _, relative = line.partition(" ")
            before = _UNKNOWN
            if version == 2:
                before, _, relative = relative.partition(" ")
            entries.append((relative, before, contents[at:at + int(size)]))
            at += int(size)
    except ValueError:
        return []
    return entries


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
