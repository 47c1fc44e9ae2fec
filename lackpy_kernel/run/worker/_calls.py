"""The worker's side of forwarding: a running child's calls of tools that run in the kernel,
each checked and passed up to the kernel (``checked_call``, ``CallRelay``), and its answer
passed down to the child (what the kernel protected meanwhile kept for the commit)."""

from __future__ import annotations

import os
import selectors
import time
from typing import Any

from .. import wire
from ..protocol import Answer, Asked, Asking, RunRequest, ToolCall, read_request

STDOUT = 1


def checked_call(call: ToolCall, request: RunRequest, made: int) -> ToolCall:
    """``call`` from a program's process, when the worker may pass it on: the ``made``+1-th
    call, of a tool of the request's kit that runs in the kernel. Raises WireError for any
    other."""
    described = request.tools.get(call.tool)
    if described is None or described.in_child:
        raise wire.WireError(f"a call of {call.tool[:40]!r}, which is not a tool of its kit "
                             "that runs in the kernel")
    limit = request.max_tool_calls
    if limit is not None and made >= int(limit):
        raise wire.WireError(f"more tool calls than [sandbox] max_tool_calls ({limit}) allows")
    if call.call_id != made + 1:
        raise wire.WireError("a tool call out of turn")
    return call


def protect(request: RunRequest, added: dict[str, str]) -> None:
    """Refuse to ``request``'s commit, as well, the files the kernel protected during one of
    its calls (``protections_added``: what a tool that runs there imported from the
    workspace), which the request's copy of them, made before, lacks."""
    if isinstance(request.protected, dict):
        request.protected.update(added)
    else:
        request.protected.extend(path for path in added if path not in request.protected)


class CallRelay:
    """The tool calls of a running child: each goes up to the parent, one at a time, and
    its answer goes down the child's second pipe, written without blocking (a child that
    does not read cannot stall the worker past the deadline)."""

    def __init__(self, to_child: int, request: RunRequest) -> None:
        self.to_child = to_child  # the child's second pipe
        self.request = request
        self.waiting: int | None = None  # the id of the call the parent has not answered
        self.stood = 0.0  # seconds the program's clock stood while the kernel asked a person
        self.asking_since: float | None = None
        self.out = bytearray()
        self.watching = False
        os.set_blocking(to_child, False)

    def pass_up(self, calls: list[ToolCall]) -> None:
        """Send the parent the calls the child made (taking them from ``calls``); WireError
        for a second call at once."""
        while calls:
            call = calls.pop(0)
            if self.waiting is not None:
                raise wire.WireError("a tool call before the last one was answered")
            self.waiting = call.call_id
            wire.write_frame(STDOUT, call.to_frame())

    def pass_down(self, frame: Any) -> bool:
        """Send an answer to the child if it answers the call it waits on (a late one is
        dropped), and note when the kernel asks a person about that call (``Asking``, then
        ``Asked`` or the answer: the clock stands meanwhile); False for any other frame."""
        try:
            message = read_request(frame)
        except wire.WireError:
            return False
        if not isinstance(message, (Answer, Asking, Asked)):
            return False
        if message.call_id != self.waiting or self.waiting is None:
            return True  # late, for a call already answered
        if isinstance(message, Asking):
            self.asking_since = time.monotonic()
            return True
        self._clock_runs()
        if isinstance(message, Answer):
            self.waiting = None
            protect(self.request, message.protect)
            self.out += wire.dumps(message.to_frame())
            self.flush()
        return True

    def _clock_runs(self) -> None:
        if self.asking_since is not None:
            self.stood += time.monotonic() - self.asking_since
            self.asking_since = None

    def flush(self) -> None:
        """Write what the pipe takes now; the rest when it has room."""
        try:
            while self.out:
                del self.out[:os.write(self.to_child, self.out)]
        except BlockingIOError:
            pass
        except OSError:  # the child died: its end of the run comes from the other pipe
            self.out.clear()

    def watch_writes(self, selector: selectors.BaseSelector) -> None:
        """Have ``selector`` wake when the child's pipe has room, while answers wait."""
        if bool(self.out) != self.watching:
            if self.out:
                selector.register(self.to_child, selectors.EVENT_WRITE, "down")
            else:
                selector.unregister(self.to_child)
            self.watching = bool(self.out)

