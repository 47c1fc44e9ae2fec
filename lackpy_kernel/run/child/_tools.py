"""The child's side of forwarding: the callables a program gets for the tools its request
describes, run here inside the walls (a Python tool the worker imported) or forwarded to the
kernel's process (``ChildChannel``: each call goes up the child's pipe, the worker passes it
on, and the answer comes down the second pipe)."""

from __future__ import annotations

import builtins
import contextlib
import functools
import inspect
import os
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

from lackpy_kernel import errors
from lackpy_kernel.errors import ToolCallError, ToolCallTimeoutError
from lackpy_kernel.kit.tool_files import API_NAMES

from .. import wire
from ..failures import tool_timeout_message
from ..protocol import Answer, PythonLoad, ToolCall, ToolDescription, sealed
from ._prepared import PythonTools

MAX_WRAPPED = 8


class ChildChannel:
    """A program's end of the forwarded calls: the pipe up to the worker, and the one its
    answers come down. Not connected (in a child's warm-up), a call fails."""

    def __init__(self) -> None:
        self.up = self.down = -1
        self.max_bytes = self.nonce = 0
        self.made = 0
        self._answers = wire.FrameReader(trusted=True)  # from the worker

    def connect(self, up: int, down: int, max_bytes: int, nonce: int) -> None:
        """Use these pipes for the program that starts, whose frames carry ``nonce``; a call
        may send at most ``max_bytes``."""
        self.up, self.down, self.max_bytes, self.nonce = up, down, max_bytes, nonce
        self.made = 0  # the worker counts each program's calls from one

    def next_frame(self) -> Any:
        """The next frame the worker sends down (None once it closes the pipe). Raises
        WireError for one that cannot be read."""
        reader = self._answers
        while (frame := reader.next_frame()) is None:
            data = os.read(self.down, reader.wanted())
            if not data:
                return None
            reader.feed(data)
        return frame

    def call(self, alias: str, tool: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Have the kernel's process call ``alias``; its result, or what it raised."""
        if self.up < 0:
            raise ToolCallError(f"{tool}() cannot be called before the program starts")
        self.made += 1
        try:
            data = wire.dumps(sealed(ToolCall(self.made, alias, list(args), kwargs).to_frame(),
                                     self.nonce))
        except RecursionError:
            raise ToolCallError(f"the arguments of {tool}() are nested too deeply to send") \
                from None
        if len(data) > self.max_bytes:
            raise ToolCallError(
                f"the arguments of {tool}() are {len(data):,} bytes, over the {self.max_bytes:,} "
                "a call may send (set by [sandbox] max_result_mb); send less (a path, not a text)")
        wire.write_all(self.up, data)
        answer = self._next_answer(tool)
        if answer.ok:
            return answer.value
        raise rebuilt_error(answer.error_type, answer.error_args)

    def _next_answer(self, tool: str) -> Answer:
        """The answer of the call just made. Raises ToolCallError for any other frame."""
        frame = self.next_frame()
        if frame is None:
            raise ToolCallError(f"{tool}(): the sandbox's worker went away during the call")
        try:
            answer = Answer.from_frame(frame)
        except wire.WireError as exc:
            raise ToolCallError(f"{tool}(): {exc}") from None
        if answer.call_id != self.made:
            raise ToolCallError(f"{tool}(): the answer was not for this call")
        return answer


def rebuilt_error(error_type: str, args: list[Any]) -> Exception:
    """The exception a forwarded call raised, as the program sees it: lackpy's or a builtin
    one of that name, else a ToolCallError naming it."""
    kind = getattr(errors, error_type, None)
    if not (isinstance(kind, type) and issubclass(kind, errors.LackpyError)):
        kind = getattr(builtins, error_type, None)
        if not (isinstance(kind, type) and issubclass(kind, Exception)):
            kind = None
    if kind is not None:
        with contextlib.suppress(Exception):  # a class that wants other arguments
            return kind(*args)
    return ToolCallError(f"{error_type}: {' '.join(map(str, args))}")


def child_tools(tools: dict[str, ToolDescription], workspace: str, python_tools: PythonTools,
                channel: ChildChannel, walls_up: Callable[[], bool]
                ) -> tuple[dict[str, Callable[..., Any]], dict[str, str]]:
    """The callables of the tools a request describes (all but the built-in ones), and
    each one's source; ``walls_up`` says, when a call runs, whether the walls are up.
    Raises ToolSourceError for a Python tool the worker could not load."""
    callables: dict[str, Callable[..., Any]] = {}
    for alias, described in tools.items():
        if described.load is not None:
            fn = python_tools.function(described.load, workspace)
            callables[alias] = _in_child(fn, described, described.load, workspace, walls_up)
        else:
            callables[alias] = _forwarded(alias, described, channel)
    return callables, {alias: described.source for alias, described in tools.items()}


def _forwarded(alias: str, described: ToolDescription, channel: ChildChannel
               ) -> Callable[..., Any]:
    tool = described.tool

    def forwarded(*args: Any, **kwargs: Any) -> Any:
        return channel.call(alias, tool, args, kwargs)

    forwarded.__name__ = tool
    forwarded.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
        inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        for name in described.params])
    return forwarded


def _in_child(fn: Callable[..., Any], described: ToolDescription, info: PythonLoad,
              workspace: str, walls_up: Callable[[], bool]) -> Callable[..., Any]:
    tool, source, timeout = described.tool, described.source, described.timeout

    @functools.wraps(fn)
    def in_child(*args: Any, **kwargs: Any) -> Any:
        try:
            if not timeout:
                return fn(*args, **kwargs)
            with _alarm(timeout, tool, source):
                return fn(*args, **kwargs)
        except Exception as exc:
            wall = _wall_in(exc) if walls_up() else None
            if wall is None:
                raise
            written = _workspace_path(wall, workspace)
            if written is not None:
                raise ToolCallError(_direct_write_message(tool, source, written, wall)) \
                    from None
            raise ToolCallError(
                f"tool {tool!r} from {source} was stopped by the sandbox's walls "
                f"({getattr(wall, 'strerror', None) or wall}): tools run in the program's "
                "process, which may not use the network, start programs or touch files outside "
                "the workspace. One that needs to should run in the kernel: set where = "
                f"\"kernel\" in [tools.providers.{info.provider}] (or "
                f"overrides.{info.function}.where) in .lackpy/config.toml") from None

    return in_child


def _workspace_path(wall: BaseException, workspace: str) -> str | None:
    """The workspace-relative path the OS refused in ``wall``, when it lies in the
    workspace (which the walls let a tool read, not write), else None."""
    filename = getattr(wall, "filename", None)
    if not isinstance(filename, (str, bytes, os.PathLike)):
        return None
    root = os.path.realpath(workspace)
    real = os.path.realpath(os.path.join(root, os.fsdecode(filename)))
    if os.path.commonpath([root, real]) != root:
        return None
    return os.path.relpath(real, root)


def _direct_write_message(tool: str, source: str, path: str, wall: BaseException) -> str:
    return (f"tool {tool!r} from {source} tried to change the workspace's {path!r} itself "
            f"({getattr(wall, 'strerror', None) or wall}): a tool's code writes files through "
            f"lackpy's workspace API, {' or '.join(API_NAMES)}, which stages the change with "
            "the program's other writes (committed when the program ends well, dropped when "
            "it fails); see \"Your own tools\" in the README")


def _wall_in(exc: BaseException) -> BaseException | None:
    """The error a wall raised, in ``exc`` or what it wraps (``urlopen`` wraps the refused
    socket in a URLError, a client library in its own error), else None. The workspace's
    own refusals (a WorkspaceError) are not walls."""
    for _ in range(MAX_WRAPPED):
        if isinstance(exc, PermissionError) and not isinstance(exc, errors.LackpyError):
            return exc
        if type(exc).__name__ == "gaierror":  # no name resolution: /etc and UDP are walled
            return exc
        reason = getattr(exc, "reason", None)
        inner = reason if isinstance(reason, BaseException) else exc.__cause__ or exc.__context__
        if inner is None:
            return None
        exc = inner
    return None


@contextlib.contextmanager
def _alarm(seconds: float, tool: str, source: str) -> Iterator[None]:
    """Raise ToolCallTimeoutError in this (main) thread after ``seconds``."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(signum: int, frame: Any) -> None:
        raise ToolCallTimeoutError(tool_timeout_message(tool, source, seconds))

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
