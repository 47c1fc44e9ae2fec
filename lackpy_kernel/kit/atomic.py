"""Atomic file writes: readers see the old content or the new, never a mix."""

from __future__ import annotations

import os
import secrets
import stat
from contextlib import suppress

_NEW_FILE_MODE = 0o666  # the process umask still applies, as for open()


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` as UTF-8 to ``path`` through a temporary file in the same directory.

    Line endings are written as given. An existing file keeps its permission bits. On any
    failure the temporary file is removed and the old content is left untouched.
    """
    target = os.fspath(path)
    fd, temp = _create_temp_beside(target)
    try:
        _copy_mode(target, fd)
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temp, target)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temp)
        raise


def _create_temp_beside(target: str) -> tuple[int, str]:
    directory, name = os.path.split(target)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    while True:
        temp = os.path.join(directory, f".{name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(temp, flags, _NEW_FILE_MODE), temp
        except FileExistsError:
            continue


def _copy_mode(target: str, fd: int) -> None:
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except FileNotFoundError:
        return
    with suppress(AttributeError, OSError):
        os.fchmod(fd, mode)
