"""The worker watching a child run its program: the frames it sends (files modified, tool
calls, its reply), the deadline, a cancel from the kernel, and a child that dies."""

from __future__ import annotations

import os
import selectors
import signal
import time

from .. import wire
from ..failures import failure, too_big_message
from ..protocol import Modified, Reply, RunRequest, ToolCall, read_event
from ._calls import CallRelay, checked_call
from ._children import Child

STDIN, STDOUT = 0, 1
INTERRUPTED = "interrupted: the program was stopped before it finished"


def watch(child: Child, request: RunRequest, requests: wire.FrameReader) -> Reply | None:
    """The started child's reply, or a failure at the deadline, on a cancel or if it dies;
    None once stdin closes. Meanwhile its calls of tools that run in the kernel go up, and
    their answers down."""
    frames = _ChildFrames(child.frames, request, child.nonce)
    relay = CallRelay(child.to_child, request)
    timeout = float(request.timeout)
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(child.from_child, selectors.EVENT_READ, "child")
        selector.register(STDIN, selectors.EVENT_READ, "parent")
        try:
            frames.feed(b"")  # what came with "started"
            relay.pass_up(frames.calls)
        except wire.WireError as exc:
            return _stop(child, frames.bad(exc, request))
        while frames.final is None:
            while (message := requests.next_frame()) is not None:
                if not relay.pass_down(message):  # not about a call: only a cancel comes else
                    return _stop(child, frames.failed("KeyboardInterrupt", INTERRUPTED))
            remaining = deadline + relay.stood - time.monotonic()
            if remaining <= 0 and relay.asking_since is None:
                return _stop(child, frames.failed("TimeoutError", _timeout_message(timeout)))
            relay.watch_writes(selector)  # while a person is asked, the clock stands
            for key, _ in selector.select(None if relay.asking_since is not None else remaining):
                if key.data == "down":
                    relay.flush()
                    continue
                if key.data == "parent":
                    data = os.read(STDIN, wire.READ_CHUNK)
                    if not data:
                        child.kill()
                        return None
                    requests.feed(data)
                    continue
                data = os.read(child.from_child, frames.reader.wanted())
                if not data:
                    return _collect(child, frames, request)
                try:
                    frames.feed(data)
                    relay.pass_up(frames.calls)
                except wire.WireError as exc:
                    return _stop(child, frames.bad(exc, request))
    return frames.final


class _ChildFrames:
    """What the child sent: the files it modified and the tools it called as it went, then
    its result frame."""

    def __init__(self, reader: wire.FrameReader, request: RunRequest, nonce: int) -> None:
        self.reader = reader
        self.nonce = nonce  # the program's: a frame with another is not its own
        self.reader.max_body = request.max_result_bytes + wire.READ_CHUNK
        self.request = request
        self.modified: list[str] = []
        self.calls: list[ToolCall] = []
        self.calls_made = 0
        self.final: Reply | None = None

    def feed(self, data: bytes) -> None:
        """Read what the child sent. Raises WireError for a frame it may not send."""
        self.reader.feed(data)
        while self.final is None and (frame := self.reader.next_frame()) is not None:
            event = read_event(frame, self.nonce)
            if isinstance(event, Modified):
                if event.path not in self.modified:
                    self.modified.append(event.path)
            elif isinstance(event, ToolCall):
                self.calls.append(checked_call(event, self.request, self.calls_made))
                self.calls_made += 1
            else:
                self.final = event

    def failed(self, error_type: str, message: str) -> Reply:
        """A failure that still lists the files the program changed before it stopped."""
        reply = failure(error_type, message)
        reply.result.trace.files_modified = list(self.modified)
        return reply

    def bad(self, exc: wire.WireError, request: RunRequest) -> Reply:
        """The failure for a frame too large or malformed, or a call it may not make."""
        if isinstance(exc, wire.FrameTooLarge):
            return self.failed("ResultTooLarge", too_big_message(request))
        return self.failed("SandboxError", f"the program's process sent a bad reply: {exc}; "
                           "it was stopped")


def _collect(child: Child, frames: _ChildFrames, request: RunRequest) -> Reply:
    """The failure for a child that ended without its result frame."""
    status = child.reap()
    if status is not None and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGSEGV:
        return frames.failed("SandboxError", "the program's process crashed (segmentation "
                             "fault); a value is probably nested too deeply. Flatten it.")
    if status is not None and os.WIFSIGNALED(status):
        how = f"was killed by signal {os.WTERMSIG(status)}"
    elif status is not None:
        how = f"exited with status {os.WEXITSTATUS(status)}"
    else:
        how = "ended"
    return frames.failed(
        "SandboxError",
        f"the program's process {how} before it replied; it probably ran out of memory "
        f"(limit {request.memory_mb} MB). Work on smaller pieces of data.",
    )


def _stop(child: Child, outcome: Reply) -> Reply:
    child.kill()
    return outcome


def _timeout_message(timeout: float) -> str:
    return (f"the program ran longer than the {timeout:g} s limit and was stopped; "
            "work on less data or raise [sandbox] timeout in .lackpy/config.toml")


