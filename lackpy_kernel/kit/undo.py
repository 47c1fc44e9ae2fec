"""Taking back a program's file changes: each commit keeps the pre-images of the files it
writes under ``.lackpy/undo/``, and ``undo_last`` puts the newest record's back.

A record is a convenience, not the commit's durability: it is written once the commit
landed, replaced atomically but not fsynced. Records are bounded: the newest
``MAX_UNDO_RECORDS`` and ``MAX_UNDO_BYTES`` in all are kept, the oldest dropped first. A file
whose old content does not fit in a record (over ``MAX_UNDO_BYTES``, or unreadable) is kept
in it as "not kept" with the reason: ``cannot_undo`` names it before the commit, and
``undo_last`` refuses that commit, naming it, rather than skip it. A commit whose record
cannot be written at all drops the older ones (an undo never skips a commit) and says so.

Only records lackpy signed for this user and this workspace are used (``undo_record``); a
record that came with a cloned workspace, or is malformed, is refused by name and nothing is
written. A file is never restored where a program may not write: ``.lackpy/``, a link made
on its way, or the code of a tool source of the workspace's config.

When a file of the newest commit changed since (or cannot be restored), ``undo_last``
refuses, naming it, and names the two ways past: ``undo_last(..., skip_changed=True)``
restores the rest of that commit and leaves those files as they are; ``drop_last`` forgets
the record, so that the next undo takes back the commit before it.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress

from lackpy_kernel.config import CONFIG_DIR

from .atomic import atomic_write_bytes_at
from .errors import WorkspaceError
from .undo_record import PreImage, RecordError, decode, digest, encode, key_path, undo_key
from .workspace import Workspace

__all__ = ["MAX_UNDO_BYTES", "MAX_UNDO_RECORDS", "NOTHING_TO_UNDO", "PreImage", "TooBig",
           "cannot_undo", "config_folder", "drop_last", "keep_undo", "pre_images",
           "read_bytes", "undo_last"]

UNDO = "undo"  # the folder of the records, in <workspace>/.lackpy/
MAX_UNDO_RECORDS = 20  # the commits that can be taken back, newest first
MAX_UNDO_BYTES = 64 * 1024 * 1024  # the records' size in all
MAX_RECORD_BYTES = 2 * MAX_UNDO_BYTES  # no record lackpy writes is larger (its header too)
MAX_WRITTEN_BYTES = 16 * 1024 * 1024  # no commit writes a larger file (MAX_STAGED_BYTES)
RECORD_SUFFIX = ".undo"
NOTHING_TO_UNDO = "nothing to undo: no program's file changes are kept"
SKIP_HINT = ("%undo --skip-changed (lackpy undo --skip-changed) takes back the rest of that "
             "commit and leaves these files as they are; %undo --drop (lackpy undo --drop) "
             "forgets that commit's record, so that the next undo takes back the one before")
FUTURE_NS = 24 * 3600 * 10**9  # a record named this far past now was not written by lackpy
_RECORD_NAME = re.compile(r"(\d{20})-\d{1,10}" + re.escape(RECORD_SUFFIX))
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_MB = 1024 * 1024


class TooBig(Exception):
    """A file over the bound of what an undo record keeps (``size``: its bytes)."""

    def __init__(self, name: str, size: int) -> None:
        super().__init__(name, size)
        self.size = size


# -- before and at a commit ------------------------------------------------------------------

def cannot_undo(workspace: Workspace, paths: Iterable[str]) -> dict[str, str]:
    """Each of ``paths`` (a change's, before it lands) whose old content its undo record will
    not keep, with why ("it is 70.0 MB, over the 64 MB an undo record keeps"): for the
    question, which names it as a change that cannot be undone. Reads sizes only."""
    left, refused = MAX_UNDO_BYTES, {}
    for relative in paths:
        try:
            size = os.lstat(workspace.root / relative).st_size
        except FileNotFoundError:
            continue
        except OSError as error:
            refused[relative] = f"it cannot be read ({error.strerror})"
            continue
        if size > left:
            refused[relative] = _too_big(size, left)
        else:
            left -= size
    return refused


def pre_images(workspace: Workspace, changes: Iterable[tuple[str, bytes]]) -> list[PreImage]:
    """What each of ``changes`` (path, new content) will replace, read before the commit; a
    file whose old content is over what is left of ``MAX_UNDO_BYTES``, or unreadable, is
    "not kept" with the reason (``PreImage.lost``)."""
    left, images = MAX_UNDO_BYTES, []
    for relative, data in changes:
        try:
            before = read_bytes(workspace, relative, left)
        except TooBig as big:
            images.append(PreImage(relative, None, digest(data), _too_big(big.size, left)))
            continue
        except OSError as error:
            images.append(PreImage(relative, None, digest(data),
                                   f"it could not be read ({error.strerror})"))
            continue
        left -= 0 if before is None else len(before)
        images.append(PreImage(relative, before, digest(data)))
    return images


def keep_undo(workspace: Workspace, images: list[PreImage]) -> list[str]:
    """Keep ``images`` as the newest record, dropping the oldest past the bounds; never
    raises. Notes for the person: each file of ``images`` that cannot be undone, and, when
    the record could not be written, that the older ones were dropped."""
    notes = [f"{image.path} cannot be undone: {image.lost}" for image in images if image.lost]
    try:
        folder = config_folder(str(workspace.root), UNDO)
    except OSError as error:
        return [*notes, _unkept(error)]
    try:
        _write_record(workspace, folder, images)
    except OSError as error:
        with suppress(OSError):
            _drop(folder, _records(folder))
        notes.append(_unkept(error) + "; the older records were dropped (an undo never "
                     "skips a commit)")
    finally:
        os.close(folder)
    return notes


def _write_record(workspace: Workspace, folder: int, images: list[PreImage]) -> None:
    """Write the signed record of ``images`` after every record there is, then prune."""
    key = undo_key(make=True)
    records = _records(folder)
    now = time.time_ns()
    foreign = [record for record in records if _stamp(record) > now + FUTURE_NS]
    _drop(folder, foreign)  # named past now: not lackpy's, and it would hide every new one
    mine = [record for record in records if record not in foreign]
    stamp = max([now, *(_stamp(record) + 1 for record in mine)])
    name = f"{stamp:020d}-{os.getpid()}{RECORD_SUFFIX}"
    atomic_write_bytes_at(folder, name, encode(images, str(workspace.root), name, key),
                          durable=False)
    _prune(folder)


# -- taking a commit back ----------------------------------------------------------------

def undo_last(workspace: Workspace, *, skip_changed: bool = False) -> list[str]:
    """Put back the files of the newest commit that has a record, and drop the record; one
    line per file saying what was done, or none when there is nothing to undo. Raises
    WorkspaceError, changing nothing, when the record was not written by lackpy (or is
    malformed), or, unless ``skip_changed``, when a file of that commit changed since, is
    not kept, or may not be written; with ``skip_changed`` those files are left as they are
    (and said so) and the rest is put back."""
    with _open_records(workspace) as (folder, records):
        if not records:
            return []
        name = records[-1][0]
        images = _read_record(workspace, folder, name)
        writable = _writable(workspace)
        problems = {image.path: why for image in images
                    if (why := _problem(writable, image)) is not None}
        if problems and not skip_changed:
            listed = "; ".join(f"{path!r} {why}" for path, why in problems.items())
            raise WorkspaceError(f"the last commit of a program cannot be taken back as a "
                                 f"whole: {listed}; nothing was undone. {SKIP_HINT}")
        done = [f"left {image.path} as it is: it {problems[image.path]}"
                if image.path in problems else _restore(workspace, image) for image in images]
        os.unlink(name, dir_fd=folder)
    return done


def drop_last(workspace: Workspace) -> list[str]:
    """Forget the newest undo record (whatever it holds, a foreign or malformed one too), so
    that the next ``undo_last`` takes back the commit before it; no file is changed. One
    line saying what was dropped, or none when there is no record."""
    with _open_records(workspace) as (folder, records):
        if not records:
            return []
        name = records[-1][0]
        try:
            paths = ", ".join(image.path for image in _read_record(workspace, folder, name))
            what = f"the undo record of the last commit ({paths}); its changes stay"
        except WorkspaceError:
            what = f"the undo record {CONFIG_DIR}/{UNDO}/{name}, which could not be used"
        os.unlink(name, dir_fd=folder)
    return [f"dropped {what}; the next undo takes back the commit before it"]


@contextmanager
def _open_records(workspace: Workspace) -> Iterator[tuple[int, list[tuple[str, int]]]]:
    """The records folder's fd and its records, oldest first (none when it is missing)."""
    try:
        folder = os.open(os.path.join(workspace.root, CONFIG_DIR, UNDO), _DIR_FLAGS)
    except FileNotFoundError:
        yield -1, []
        return
    try:
        yield folder, _records(folder)
    finally:
        os.close(folder)


def _read_record(workspace: Workspace, folder: int, name: str) -> list[PreImage]:
    """The pre-images of the record ``name``. Raises WorkspaceError, naming it and saying
    what to do, when it is too large, unreadable, not lackpy's or malformed."""
    try:
        return decode(_read_at(folder, name, MAX_RECORD_BYTES), str(workspace.root), name,
                      _key())
    except TooBig:
        why = "is larger than any record lackpy writes"
    except RecordError as error:
        why = str(error)
    except OSError as error:
        why = f"cannot be read ({error.strerror or error})"
    raise WorkspaceError(f"the undo record {CONFIG_DIR}/{UNDO}/{name} {why}; nothing was "
                         "undone. Drop it with %undo --drop (lackpy undo --drop) or delete "
                         "the file; the next undo then takes back the commit before it")


def _key() -> bytes:
    """This user's undo key. Raises RecordError when there is none (then lackpy wrote no
    record here for this user), OSError when it cannot be read."""
    try:
        return undo_key(make=False)
    except FileNotFoundError:
        raise RecordError("was not written by lackpy for this user: there is no undo key "
                          f"at {key_path()}") from None


def _problem(workspace: Workspace, image: PreImage) -> str | None:
    """Why ``image`` cannot be put back now into ``workspace`` (from ``_writable``; None: it
    can): its old content was not kept, its path may not be written, or the file changed
    since the commit."""
    if image.lost is not None:
        return f"cannot be undone: {image.lost}"
    try:
        real = workspace.resolve(image.path, write=True)
    except WorkspaceError as refused:
        return f"may not be restored ({refused})"
    if workspace.relative(real) != image.path:
        return (f"now leads to {workspace.relative(real)!r} (a link made since the last "
                "commit of a program)")
    try:
        now = read_bytes(workspace, image.path, MAX_WRITTEN_BYTES)
    except TooBig:
        return "changed since the last commit of a program (it was edited)"
    except OSError as error:
        return f"cannot be read ({error.strerror})"
    if now is None:
        return "changed since the last commit of a program (it is gone)"
    if digest(now) != image.after:
        return "changed since the last commit of a program (it was edited)"
    return None


def _writable(workspace: Workspace) -> Workspace:
    """``workspace`` refusing, besides its own protected files, the code of the tool sources
    its config names now (a tool source added since the commit included). Raises
    WorkspaceError when the config cannot be read: which files are code is then unknown."""
    from lackpy_kernel.config import load_config  # noqa: PLC0415 - only when undoing
    from lackpy_kernel.errors import ConfigError  # noqa: PLC0415

    from .sources import ToolSources  # noqa: PLC0415

    try:
        settings = load_config(workspace.root).tool_providers
    except ConfigError as error:
        raise WorkspaceError(f"the workspace's config cannot be read ({error}), so lackpy "
                             "cannot tell which files are a tool source's code; fix "
                             f"{CONFIG_DIR}/config.toml and undo again") from None
    with ToolSources(settings, workspace.root) as sources:  # made, never loaded or started
        protected = dict(sources.protected)
    own = workspace.protected
    protected.update(own if isinstance(own, Mapping) else dict.fromkeys(own, "a tool source"))
    return Workspace(workspace.root, protected)


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


# -- files and folders -------------------------------------------------------------------

def read_bytes(workspace: Workspace, relative: str, limit: int | None = None) -> bytes | None:
    """The file's content, or None when it does not exist (its own name is never followed
    as a link). Raises TooBig past ``limit`` bytes, OSError when it cannot be read."""
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
        size = os.fstat(stream.fileno()).st_size
        if limit is not None and size > limit:
            raise TooBig(name, size)
        return stream.read()


def _too_big(size: int, left: int) -> str:
    whole = MAX_UNDO_BYTES % _MB == 0
    bound = f"the {MAX_UNDO_BYTES // _MB} MB" if whole else f"the {MAX_UNDO_BYTES:,} bytes"
    others = " (with the commit's other files)" if size <= MAX_UNDO_BYTES else ""
    return f"it is {size:,} bytes, over{others} {bound} an undo record keeps"


def _unkept(error: OSError) -> str:
    return (f"the undo record of this commit could not be kept ({error.strerror or error}): "
            "%undo cannot take it back")


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
    """The records in the open folder (named as lackpy names them), oldest first, with
    their sizes."""
    names = sorted(name for name in os.listdir(folder) if _RECORD_NAME.fullmatch(name))
    sized = []
    for name in names:
        with suppress(FileNotFoundError):
            sized.append((name, os.stat(name, dir_fd=folder, follow_symlinks=False).st_size))
    return sized


def _stamp(record: tuple[str, int]) -> int:
    """The time (ns) a record's name gives."""
    return int(record[0][:20])


def _prune(folder: int) -> None:
    """Drop the oldest records past ``MAX_UNDO_RECORDS`` or ``MAX_UNDO_BYTES`` in all (never
    the newest)."""
    records, total = _records(folder), 0
    for newest, (_, size) in enumerate(reversed(records)):
        total += size
        if newest and (newest >= MAX_UNDO_RECORDS or total > MAX_UNDO_BYTES):
            _drop(folder, records[:len(records) - newest])
            return


def _drop(folder: int, records: list[tuple[str, int]]) -> None:
    for name, _ in records:
        with suppress(FileNotFoundError):
            os.unlink(name, dir_fd=folder)
