"""Length-prefixed frames of plain data between the kernel, the worker and its children.

Frames are pickles read back with an unpickler that can build no class but
``complex``: every message is plain data, and a compromised child cannot turn
a frame into code in the process that reads it.
"""

from __future__ import annotations

import io
import os
import pickle
import select
import struct
from typing import Any

_HEADER = struct.Struct("!Q")
HEADER_SIZE = _HEADER.size  # bytes before each frame's body
PROTOCOL = 5
READ_CHUNK = 1 << 16  # bytes read from a pipe at a time, unless a big frame wants more
MAX_READ = 1 << 24  # the most read at once for a big frame
Frame = dict[str, Any]  # a message on a pipe: a request, an event, a reply (plain data)


class WireError(RuntimeError):
    """A frame that is malformed or asks for something other than plain data."""


class FrameTooLarge(WireError):
    """A frame whose announced size is over the reader's limit."""


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("builtins", "complex"):
            return complex
        raise WireError(f"refusing to load {module}.{name}: frames carry plain data only")


def dumps(message: Any) -> bytes:
    """Pickle ``message`` and prefix its length."""
    body = pickle.dumps(message, protocol=PROTOCOL)
    return _HEADER.pack(len(body)) + body


# The opcodes a pickle of plain data uses (protocol 5, as ``dumps`` writes it), by their
# argument: a fixed number of bytes, or a length of so many bytes followed by that much.
# PUT, BINPUT and LONG_BINPUT are not among them: a huge memo index makes the unpickler
# allocate a memo table that large (a 9-byte frame, gigabytes); our pickles use MEMOIZE.
_FIXED_ARGUMENT = {
    **dict.fromkeys(b"(.012N]ae)t}dsu\x85\x86\x87\x88\x89\x8f\x90\x91\x93\x94R", 0),
    **{ord("K"): 1, ord("h"): 1, ord("M"): 2, ord("J"): 4, ord("j"): 4, ord("G"): 8,
       0x80: 1, 0x95: 8},  # BININT1 BINGET BININT2 BININT LONG_BINGET BINFLOAT PROTO FRAME
}
_SIZED_ARGUMENT = {0x8C: 1, ord("X"): 4, 0x8D: 8, ord("C"): 1, ord("B"): 4, 0x8E: 8, 0x8A: 1,
                   0x8B: 4}  # SHORT_BINUNICODE BINUNICODE BINUNICODE8, the same for bytes, LONG1/4
_STOP = ord(".")
# Each byte's step as an opcode: its fixed argument's width (0 or more), minus the width of
# the length before its data, or None (refused; STOP ends the pickle): one look-up an opcode.
_STEP: tuple[int | None, ...] = tuple(
    None if code == _STOP else _FIXED_ARGUMENT.get(code, -_SIZED_ARGUMENT.get(code, 0) or None)
    for code in range(256))


def check_opcodes(body: bytes) -> None:
    """Raise WireError unless ``body`` is a pickle made of the opcodes plain data needs.

    One step per opcode, the data of strings and bytes skipped: linear in the pickle, and
    what the unpickler then allocates is bounded by the pickle's size.
    """
    step = _STEP
    position, end = 0, len(body)
    while position < end:
        opcode = body[position]
        width = step[opcode]
        position += 1
        if width is None:
            if opcode == _STOP:
                return
            raise WireError(f"refusing pickle opcode {bytes([opcode])!r} at byte {position - 1}: "
                            "frames carry plain data only")
        if width >= 0:
            position += width
        else:  # a length of -width bytes, then that much data
            position += int.from_bytes(body[position:position - width], "little") - width
    raise WireError("malformed frame: the pickle ends before its STOP")


def loads_body(body: bytes) -> Any:
    """Read back one frame's body (without its header): plain data only, checked opcode by
    opcode first (``check_opcodes``). Raises WireError."""
    check_opcodes(body)
    try:
        return _PlainUnpickler(io.BytesIO(body)).load()
    except WireError:
        raise
    except Exception as exc:
        raise WireError(f"malformed frame: {type(exc).__name__}: {exc}") from exc


def loads_trusted(body: bytes) -> Any:
    """Read back one frame's body from the kernel's side of a pipe (the kernel to the worker
    or a child, the worker to a child), which no program's process can write: unpickled
    without ``check_opcodes``. Raises WireError."""
    try:
        return pickle.loads(body)
    except Exception as exc:
        raise WireError(f"malformed frame: {type(exc).__name__}: {exc}") from exc


def readable_within(fd: int, seconds: float) -> bool:
    """Whether ``fd`` has something to read (or was closed) within ``seconds``."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(seconds * 1000))


def write_frame(fd: int, message: Any) -> None:
    """Write one whole frame to a file descriptor."""
    write_all(fd, dumps(message))


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd``."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class FrameReader:
    """Collects bytes read from a pipe and hands back whole frames."""

    def __init__(self, max_body: int | None = None, *, trusted: bool = False) -> None:
        self.buffer = bytearray()
        self.max_body = max_body
        # frames from the kernel's side (``loads_trusted``); else checked (``loads_body``)
        self._loads = loads_trusted if trusted else loads_body

    def feed(self, data: bytes) -> None:
        self.buffer += data

    def pending_body_size(self) -> int | None:
        """The announced size of the frame being read, once its header has arrived."""
        if len(self.buffer) < _HEADER.size:
            return None
        size: int = _HEADER.unpack_from(self.buffer)[0]
        return size

    def wanted(self) -> int:
        """How much to read next: the rest of a big frame at once, else a chunk."""
        return max(READ_CHUNK, min(self.missing(), MAX_READ))

    def missing(self) -> int:
        """How many more bytes the frame being read needs (0 before its header arrives)."""
        size = self.pending_body_size()
        return 0 if size is None else max(0, _HEADER.size + size - len(self.buffer))

    def next_frame(self) -> Any | None:
        """The next complete message, or None if more bytes are needed."""
        size = self.pending_body_size()
        if size is None:
            return None
        if self.max_body is not None and size > self.max_body:
            raise FrameTooLarge(f"frame of {size:,} bytes exceeds the limit of {self.max_body:,}")
        end = _HEADER.size + size
        if len(self.buffer) < end:
            return None
        body = bytes(self.buffer[_HEADER.size:end])
        del self.buffer[:end]
        return self._loads(body)
