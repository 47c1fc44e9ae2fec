"""Taking back a program's file changes: each commit keeps the pre-images of the files it
writes under ``.lackpy/undo/``, and ``undo_last`` puts the newest record's back.

A record is a convenience, not the commit's durability: it is written once the commit
landed, replaced atomically but not fsynced, and a commit whose record cannot be kept
drops the older ones (an undo then never skips a commit). Records are bounded: the newest
``MAX_UNDO_RECORDS`` and ``MAX_UNDO_BYTES`` in all are kept, the oldest dropped first; a
commit whose record alone is over the size bound keeps none.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass

from lackpy_kernel.config import CONFIG_DIR

from .atomic import atomic_write_bytes_at
from .errors import WorkspaceError
from .workspace import Workspace

UNDO = "undo"  # the folder of the records, in <workspace>/.lackpy/
MAX_UNDO_RECORDS = 20  # the commits that can be taken back, newest first
MAX_UNDO_BYTES = 64 * 1024 * 1024  # the records' size in all
RECORD_SUFFIX = ".undo"
NOTHING_TO_UNDO = "nothing to undo: no program's file changes are kept"
_MAGIC = b"lackpy-undo 1\n"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


@dataclass(frozen=True)
class PreImage:
    """A file before a commit: its path, its old content (None: it did not exist) and the
    digest of the content the commit wrote."""

    path: str
    before: bytes | None
    after: str


def pre_images(workspace: Workspace, changes: Iterable[tuple[str, bytes]]
               ) -> list[PreImage] | None:
    """What each of ``changes`` (path, new content) will replace, read before the commit;
    None when one cannot be read or is over ``MAX_UNDO_BYTES`` (the commit keeps no record)."""
    try:
        return [PreImage(relative, read_bytes(workspace, relative, MAX_UNDO_BYTES), _digest(data))
                for relative, data in changes]
    except (OSError, TooBig):
        return None


def keep_undo(workspace: Workspace, images: list[PreImage] | None) -> None:
    """Keep ``images`` as the newest record, dropping the oldest past the bounds; never
    raises (without a record, None or too big, the older ones are dropped)."""
    try:
        folder = config_folder(str(workspace.root), UNDO)
    except OSError:
        return
    try:
        record = b"" if images is None else _encode(images)
        if not record or len(record) > MAX_UNDO_BYTES:
            _drop(folder, _records(folder))
            return
        name = f"{time.time_ns():020d}-{os.getpid()}{RECORD_SUFFIX}"
        atomic_write_bytes_at(folder, name, record, durable=False)
        _prune(folder)
    except OSError:
        with suppress(OSError):
            _drop(folder, _records(folder))
    finally:
        os.close(folder)


def undo_last(workspace: Workspace) -> list[str]:
    """Put back the files of the newest commit that has a record, and drop the record; one
    line per file saying what was done, or none when there is nothing to undo. Raises
    WorkspaceError, changing nothing, when a file changed since that commit."""
    try:
        folder = os.open(os.path.join(workspace.root, CONFIG_DIR, UNDO), _DIR_FLAGS)
    except FileNotFoundError:
        return []
    try:
        records = _records(folder)
        if not records:
            return []
        name = records[-1][0]
        images = _decode(_read_at(folder, name), name)
        for image in images:
            _check_path(workspace, image.path)
            now = read_bytes(workspace, image.path)
            if now is None or _digest(now) != image.after:
                how = "is gone" if now is None else "was edited"
                raise WorkspaceError(f"{image.path!r} changed since the last commit of a "
                                     f"program (it {how}); nothing was undone")
        done = [_restore(workspace, image) for image in images]
        os.unlink(name, dir_fd=folder)
    finally:
        os.close(folder)
    return done


def _check_path(workspace: Workspace, relative: str) -> None:
    """Refuse a path that now leads elsewhere (a link made on its way since the commit)."""
    real = workspace.resolve(relative, write=True)
    if workspace.relative(real) != relative:
        raise WorkspaceError(f"{relative!r} now leads to {workspace.relative(real)!r} (a link "
                             "made since the last commit of a program); nothing was undone")


def _restore(workspace: Workspace, image: PreImage) -> str:
    parent, _, name = image.path.rpartition("/")
    fd = workspace.open_folder_for_write(workspace.root / parent, image.path)
    try:
        if image.before is None:
            os.unlink(name, dir_fd=fd)
            return f"removed {image.path} (the program created it)"
        atomic_write_bytes_at(fd, name, image.before)
        return f"restored {image.path}"
    finally:
        os.close(fd)


def _digest(data: bytes) -> str:
    import hashlib  # here: the sandbox worker needs it only once a program writes

    return hashlib.sha256(data).hexdigest()


class TooBig(Exception):
    """A file over the bound of what an undo record keeps."""


def read_bytes(workspace: Workspace, relative: str, limit: int | None = None) -> bytes | None:
    """The file's content, or None when it does not exist (its own name is never followed
    as a link). Raises TooBig past ``limit`` bytes."""
    parent, _, name = relative.rpartition("/")
    try:
        fd = os.open(workspace.root / parent, _DIR_FLAGS)
    except FileNotFoundError:
        return None
    try:
        return _read_at(fd, name, limit)
    except FileNotFoundError:
        return None
    finally:
        os.close(fd)


def _read_at(folder: int, name: str, limit: int | None = None) -> bytes:
    with os.fdopen(os.open(name, _READ_FLAGS, dir_fd=folder), "rb") as stream:
        if limit is not None and os.fstat(stream.fileno()).st_size > limit:
            raise TooBig(name)
        return stream.read()


def _encode(images: list[PreImage]) -> bytes:
    header = json.dumps([[i.path, None if i.before is None else len(i.before), i.after]
                         for i in images]).encode()
    return b"".join([_MAGIC, b"%d\n" % len(header), header,
                     *(i.before for i in images if i.before is not None)])


def _decode(record: bytes, name: str) -> list[PreImage]:
    try:
        if not record.startswith(_MAGIC):
            raise ValueError(name)
        size_line, _, rest = record[len(_MAGIC):].partition(b"\n")
        header, contents = rest[:int(size_line)], rest[int(size_line):]
        images, at = [], 0
        for path, size, after in json.loads(header):
            before = None if size is None else contents[at:at + size]
            at += size or 0
            images.append(PreImage(str(path), before, str(after)))
    except (ValueError, TypeError) as error:
        raise WorkspaceError(f"the undo record {CONFIG_DIR}/{UNDO}/{name} cannot be read; "
                             "nothing was undone") from error
    return images


def config_folder(root: str, name: str) -> int:
    """An fd of ``<root>/.lackpy/<name>``, made if missing; neither may be a link. Raises
    OSError."""
    fd = os.open(root, _DIR_FLAGS)
    for part in (CONFIG_DIR, name):
        parent = fd
        try:
            with suppress(FileExistsError):
                os.mkdir(part, 0o700, dir_fd=parent)
            fd = os.open(part, _DIR_FLAGS, dir_fd=parent)
        finally:
            os.close(parent)
    return fd


def _records(folder: int) -> list[tuple[str, int]]:
    """The records in the open folder, oldest first, with their sizes."""
    names = sorted(name for name in os.listdir(folder) if name.endswith(RECORD_SUFFIX))
    sized = []
    for name in names:
        with suppress(FileNotFoundError):
            sized.append((name, os.stat(name, dir_fd=folder, follow_symlinks=False).st_size))
    return sized


def _prune(folder: int) -> None:
    """Drop the oldest records past ``MAX_UNDO_RECORDS`` or ``MAX_UNDO_BYTES`` in all."""
    records, total = _records(folder), 0
    for newest, (_, size) in enumerate(reversed(records)):
        total += size
        if newest >= MAX_UNDO_RECORDS or total > MAX_UNDO_BYTES:
            _drop(folder, records[:len(records) - newest])
            return


def _drop(folder: int, records: list[tuple[str, int]]) -> None:
    for name, _ in records:
        with suppress(FileNotFoundError):
            os.unlink(name, dir_fd=folder)
