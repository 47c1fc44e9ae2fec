"""Atomic file writes: readers see the old content or the new, never a mix."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from contextlib import suppress

_NEW_FILE_MODE = 0o666  # the process umask still applies, as for open()
_TEMP_FLAGS = (
    os.O_WRONLY
    | os.O_CREAT
    | os.O_EXCL
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
# Whether files can be made, renamed and removed relative to an open folder (not on
# Windows). os.replace shares os.rename's implementation, so it is not listed separately.
SUPPORTS_DIR_FD = {os.open, os.stat, os.mkdir, os.rename, os.unlink} <= os.supports_dir_fd


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` as UTF-8 to ``path`` through a temporary file in the same directory.

    Line endings are written as given. An existing file keeps its permission bits. On any
    failure the temporary file is removed and the old content is left untouched.
    """
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` as ``atomic_write_text`` writes its text."""
    directory, name = os.path.split(os.fspath(path))
    if not SUPPORTS_DIR_FD:
        _atomic_write_by_path(directory, name, data)
        return
    dir_fd = os.open(directory or ".", _DIR_FLAGS)
    try:
        atomic_write_bytes_at(dir_fd, name, data)
    finally:
        os.close(dir_fd)


def atomic_write_bytes_at(dir_fd: int, name: str, data: bytes, *, durable: bool = True) -> None:
    """Write ``data`` to the file ``name`` in the open folder ``dir_fd``, atomically.

    Every step names the file relative to ``dir_fd``, so the file lands in that folder even
    if the folder's path changes meanwhile. An existing file keeps its permission bits. On
    any failure the temporary file is removed and the old content is left untouched. Without
    ``durable`` the data is not fsynced first (a journal holds it until it is).
    """
    fd, temp = _create_temp(lambda temp: os.open(temp, _TEMP_FLAGS, _NEW_FILE_MODE, dir_fd=dir_fd))
    try:
        _write_all(fd, data, lambda: os.stat(name, dir_fd=dir_fd, follow_symlinks=False),
                   durable)
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException as error:
        with suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=dir_fd)
        if isinstance(error, OSError) and error.errno is not None and error.filename == temp:
            # Name the user's file, not the temporary one (which is gone now).
            raise OSError(error.errno, error.strerror, name) from None
        raise


def _atomic_write_by_path(directory: str, name: str, data: bytes) -> None:
    target = os.path.join(directory, name)
    fd, temp = _create_temp(
        lambda temp: os.open(os.path.join(directory, temp), _TEMP_FLAGS, _NEW_FILE_MODE)
    )
    temp = os.path.join(directory, temp)
    try:
        _write_all(fd, data, lambda: os.stat(target))
        os.replace(temp, target)
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temp)
        raise


def _create_temp(create: Callable[[str], int]) -> tuple[int, str]:
    # A short name of its own: ".{name}.tmp" could pass the longest name a folder allows.
    while True:
        temp = f".lackpy-tmp-{os.urandom(6).hex()}"  # not secrets: it loads OpenSSL
        try:
            return create(temp), temp
        except FileExistsError:
            continue


def _write_all(fd: int, data: bytes, stat_target: Callable[[], os.stat_result],
               durable: bool = True) -> None:
    """Write, flush and (when ``durable``) fsync ``data``, with the permission bits of the
    file it replaces."""
    with os.fdopen(fd, "wb") as stream:
        with suppress(OSError):
            info = stat_target()
            if stat.S_ISREG(info.st_mode) and hasattr(os, "fchmod"):
                os.fchmod(fd, stat.S_IMODE(info.st_mode))
        stream.write(data)
        stream.flush()
        if durable:
            os.fsync(fd)
