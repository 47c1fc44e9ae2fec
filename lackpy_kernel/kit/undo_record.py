"""An undo record's bytes, signed so that only lackpy, run by this user on this machine, could
have written it for this workspace.

A record is ``lackpy-undo 2``, the header's size, the header (JSON: one ``[path, size, after,
lost]`` per file: its workspace-relative path, the size of its old content or null when it
did not exist, the digest of what the commit wrote, and why its old content was not kept or
null), the old contents one after another, and last an HMAC-SHA256 of all of it, of the
workspace's real path and of the record's name.

Why a signature: a record tells ``undo`` what to write where, and a workspace can come from
anywhere (a clone, an archive) with a ``.lackpy/undo/`` in it. The key is 32 random bytes kept
outside every workspace, readable by its owner alone, and made on first use:
``$LACKPY_STATE_DIR/undo.key``, else ``$XDG_STATE_HOME/lackpy/undo.key`` (by default
``~/.local/state/lackpy/undo.key``; ``%LOCALAPPDATA%\\lackpy\\undo.key`` on Windows). Without
it no one writes a record that ``undo`` accepts, and a record copied from another workspace
or renamed does not verify either.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

KEY_ENV = "LACKPY_STATE_DIR"  # the folder of the undo key, when set
KEY_FILE = "undo.key"
KEY_BYTES = 32
_MAGIC = b"lackpy-undo 2\n"
_MAC_LINE = 2 * 32 + 1  # the hex HMAC-SHA256 and a newline
_DIGEST = re.compile(r"[0-9a-f]{64}")


class RecordError(ValueError):
    """A record ``undo`` may not use: why, in words that finish "the record ..."."""


@dataclass(frozen=True)
class PreImage:
    """A file before a commit: its path, its old content (None: it did not exist, or it was
    not kept), the digest of the content the commit wrote, and why the old content was not
    kept (None: it was)."""

    path: str
    before: bytes | None
    after: str
    lost: str | None = None


def digest(data: bytes) -> str:
    """The SHA-256 of ``data``, in hex: what a record says a commit wrote."""
    import hashlib  # noqa: PLC0415 - here: a worker imports it only once a program writes

    return hashlib.sha256(data).hexdigest()


def encode(images: list[PreImage], root: str, name: str, key: bytes) -> bytes:
    """The signed record of ``images`` named ``name`` in the workspace at ``root`` (real)."""
    header = json.dumps([[i.path, None if i.before is None else len(i.before), i.after, i.lost]
                         for i in images]).encode()
    body = b"".join([_MAGIC, b"%d\n" % len(header), header,
                     *(i.before for i in images if i.before is not None)])
    return body + _mac(key, root, name, body).encode() + b"\n"


def decode(record: bytes, root: str, name: str, key: bytes) -> list[PreImage]:
    """The pre-images of the signed ``record``. Raises RecordError when it was not written by
    lackpy with ``key`` for the workspace at ``root`` under ``name``, or is malformed."""
    body, mac = record[:-_MAC_LINE], record[-_MAC_LINE:-1]
    if not record.startswith(_MAGIC) or not record.endswith(b"\n") or \
            not _same(mac, _mac(key, root, name, body).encode()):
        raise RecordError("was not written by lackpy for this user and this workspace (it "
                          "came with a copied or cloned workspace, from an older lackpy, or "
                          "was changed)")
    try:
        return _parsed(body[len(_MAGIC):])
    except (ValueError, TypeError, RecursionError, MemoryError) as error:
        raise RecordError(f"is malformed ({type(error).__name__})") from None


def _parsed(rest: bytes) -> list[PreImage]:
    """The pre-images of a record after its magic line; raises ValueError or TypeError."""
    size_line, _, rest = rest.partition(b"\n")
    if not size_line.isdigit() or int(size_line) > len(rest):
        raise ValueError("the header's size")
    header, contents = rest[:int(size_line)], rest[int(size_line):]
    entries = json.loads(header)
    if type(entries) is not list:
        raise TypeError("the header is not a list")
    images, at = [], 0
    for entry in entries:
        image = _image(entry, contents, at)
        at += 0 if image.before is None else len(image.before)
        images.append(image)
    if at != len(contents):
        raise ValueError("the contents' size")
    return images


def _image(entry: Any, contents: bytes, at: int) -> PreImage:
    """One header entry as a PreImage (its old content from ``contents`` at ``at``)."""
    if type(entry) is not list or len(entry) != 4:
        raise TypeError("an entry is not [path, size, after, lost]")
    path, size, after, lost = entry
    if not _plain_path(path) or type(after) is not str or not _DIGEST.fullmatch(after):
        raise TypeError("an entry's path or digest")
    if not (size is None or (type(size) is int and 0 <= size <= len(contents) - at)):
        raise TypeError("an entry's size")
    if not (lost is None or (type(lost) is str and size is None)):
        raise TypeError("an entry's reason")
    return PreImage(path, None if size is None else contents[at:at + size], after, lost)


def _plain_path(path: Any) -> bool:
    """Whether ``path`` is a plain relative path: no root, no ``..``, no NUL, no empty part."""
    if type(path) is not str or not path or "\0" in path:
        return False
    return all(part not in ("", ".", "..") for part in path.split("/"))


def _mac(key: bytes, root: str, name: str, body: bytes) -> str:
    bound = b"\0".join([os.fsencode(root), name.encode("utf-8", "surrogateescape"), b""])
    import hashlib  # noqa: PLC0415 - here: only undo records need it
    import hmac  # noqa: PLC0415

    return hmac.new(key, bound + body, hashlib.sha256).hexdigest()


def key_path() -> str:
    """Where this user's undo key lives (see the module's docstring)."""
    folder = os.environ.get(KEY_ENV)
    if not folder:
        if sys.platform == "win32":
            base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~")
        else:
            base = os.environ.get("XDG_STATE_HOME") or os.path.expanduser("~/.local/state")
        folder = os.path.join(base, "lackpy")
    return os.path.join(folder, KEY_FILE)


def undo_key(*, make: bool) -> bytes:
    """This user's undo key, made first when missing and ``make``. Raises OSError when it
    cannot be read or made, or is not a file of this user's that only they can read."""
    path = key_path()
    try:
        return _read_key(path)
    except FileNotFoundError:
        if not make:
            raise
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    temp = f"{path}.{os.getpid()}-{os.urandom(4).hex()}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                 0o600)
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(os.urandom(KEY_BYTES))
            stream.flush()
            os.fsync(stream.fileno())
        with suppress(FileExistsError):  # another process made it first: theirs is the key
            os.link(temp, path)
    finally:
        os.unlink(temp)
    return _read_key(path)


def _read_key(path: str) -> bytes:
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as stream:
        info = os.fstat(fd)
        private = not hasattr(os, "getuid") or (
            info.st_uid == os.getuid() and not info.st_mode & (stat.S_IRWXG | stat.S_IRWXO))
        key = stream.read(KEY_BYTES + 1)
    if not stat.S_ISREG(info.st_mode) or not private or len(key) != KEY_BYTES:
        raise PermissionError(f"{path} is not a {KEY_BYTES}-byte file that only its owner, "
                              "this user, can read; remove it and lackpy makes a new one "
                              "(the undo records it signed can then no longer be undone)")
    return key


def _same(one: bytes, other: bytes) -> bool:
    import hmac  # noqa: PLC0415 - here: only undo records need it

    return hmac.compare_digest(one, other)
