"""Tools across the sandbox: which run in a program's process, which in the kernel's, and
the calls forwarded from one to the other.

A kit's tools run where their specs say (``ToolSpec.where``):

- the built-in file tools run in the program's process (the child), which builds them
  from their names;
- a tool of a ``plugin = "python"`` source runs there too, unless its source says
  ``where = "kernel"``: the worker imports the module once, outside the walls, and every
  child it forks has it; a call a wall stops fails saying how to move it to the kernel;
- every other tool (an MCP server's, ``where = "kernel"``, one registered from Python)
  runs in the process that holds the toolbox: the child sends each call up its pipe, the
  worker checks it and passes it on, this side runs it on a thread of its own and the
  answer goes back the same way, both ways frames of plain data that the restricted
  unpickler reads. The call's time counts against the program's deadline.

Here are the three sides: the kernel's (``plan_kit``: what a request says about a kit;
``ToolHost``: runs the forwarded calls), the worker's (``PythonTools``: the modules it
imported; ``checked_call``) and the child's (``ChildChannel``, ``child_tools``).
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import inspect
import os
import queue
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lackpy_kernel import errors
from lackpy_kernel.errors import ToolCallError, ToolCallTimeoutError, ToolSourceError
from lackpy_kernel.kit import ResolvedKit
from lackpy_kernel.kit.plain import not_plain_message
from lackpy_kernel.kit.spec import BUILTIN_PROVIDER, CHILD, KERNEL, KEYWORD_ONLY_MARK, ToolSpec

from . import wire
from .plain import find_non_plain

if TYPE_CHECKING:
    from lackpy_kernel.kit.sources import PythonToolSource

READ_CHUNK = 1 << 16
MAX_ERROR_CHARS = 2_000
DEADLINE_GRACE = 1.0
MAX_WRAPPED = 8
CALL_KEYS = frozenset({"kind", "id", "tool", "args", "kwargs"})
_Job = Callable[[], None]
_LoadKey = tuple[str, str | None, str | None, str]  # provider, path, module, workspace


# --- the kernel's side ------------------------------------------------------------------


@dataclass
class KitPlan:
    """A kit as a sandbox request carries it: ``builtins`` (alias -> built-in tool name),
    ``tools`` (alias -> a plain-data description of each other tool), ``import_path`` (this
    process's, for a worker that imports Python tools, which finds what they import where
    this process does), and what runs here: ``kernel`` (alias -> callable) and the
    ``timeouts`` this side enforces."""

    builtins: dict[str, str] = field(default_factory=dict)
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    import_path: list[str] = field(default_factory=list)
    kernel: dict[str, Callable[..., Any]] = field(default_factory=dict)
    timeouts: dict[str, float] = field(default_factory=dict)


def plan_kit(resolved: ResolvedKit) -> KitPlan:
    """Where each of the kit's tools runs, and what a program's process needs to know."""
    plan = KitPlan()
    for alias, spec in resolved.tools.items():
        if spec.provider == BUILTIN_PROVIDER:
            plan.builtins[alias] = spec.name
            continue
        python = spec.provider_config.get("plugin") == "python"
        timeout = spec.provider_config.get("timeout") if python else None
        described: dict[str, Any] = {"tool": spec.name, "source": spec.source,
                                     "where": spec.where, "params": _positional(spec),
                                     "timeout": timeout}
        if spec.where == CHILD:
            described["load"] = _load_info(spec)
            plan.import_path = [os.path.abspath(entry) for entry in sys.path]
        else:
            plan.kernel[alias] = resolved.callables[alias]
            if timeout:
                plan.timeouts[alias] = float(timeout)
        plan.tools[alias] = described
    return plan


def _positional(spec: ToolSpec) -> list[str]:
    """The names of the arguments a call may pass by position (for the trace)."""
    names = [arg.name for arg in spec.args]
    if KEYWORD_ONLY_MARK in names:
        names = names[:names.index(KEYWORD_ONLY_MARK)]
    return [name for name in names if name.isidentifier()]


def _load_info(spec: ToolSpec) -> dict[str, Any]:
    config = spec.provider_config
    return {"provider": spec.provider, "path": config.get("path"), "module": config.get("module"),
            "function": config.get("function", spec.name)}


class ToolHost:
    """Runs the calls programs forward to this process, each on a daemon thread of its own
    (threads are kept for later calls; one a tool never returns from is lost, not the
    caller). ``start`` opens a run's calls; ``HostedRun.close`` ends them."""

    def __init__(self) -> None:
        self._idle: list[queue.SimpleQueue[_Job]] = []
        self._lock = threading.Lock()

    def start(self, plan: KitPlan, *, deadline: float, send: Callable[[bytes], None],
              max_bytes: int) -> HostedRun:
        """The calls of one program whose tools are ``plan``'s, which must end by
        ``deadline`` (``time.monotonic()``); ``send`` writes an answer's frame."""
        return HostedRun(plan, deadline, send, max_bytes, self._submit)

    def _submit(self, job: _Job) -> None:
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        if inbox is None:
            inbox = queue.SimpleQueue()
            threading.Thread(target=self._serve, args=(inbox,), name="lackpy-tool-call",
                             daemon=True).start()
        inbox.put(job)

    def _serve(self, inbox: queue.SimpleQueue[_Job]) -> None:
        while True:
            inbox.get()()  # a job never raises (HostedRun._run catches everything)
            with self._lock:
                self._idle.append(inbox)


class HostedRun:
    """The forwarded calls of one program: each runs on a thread, and its answer is sent
    unless the program ended first (then it is dropped: the program's process is gone)."""

    def __init__(self, plan: KitPlan, deadline: float, send: Callable[[bytes], None],
                 max_bytes: int, submit: Callable[[_Job], None]) -> None:
        self.plan, self.deadline, self.max_bytes = plan, deadline, max_bytes
        self._send, self._submit = send, submit
        self._lock = threading.Lock()
        self._open = True
        self._answered: set[int] = set()

    def call(self, call: dict[str, Any]) -> None:
        """Start the call the worker passed on (``id``, ``tool``, ``args``, ``kwargs``)."""
        call_id, alias = call.get("id"), call.get("tool")
        fn = self.plan.kernel.get(alias) if isinstance(alias, str) else None
        if not isinstance(call_id, int) or not isinstance(alias, str) or fn is None:
            # the worker checks this first
            self._answer(call_id, _error_answer(call_id, ToolCallError(
                f"{str(alias)[:40]!r} is not a tool of this kit that runs in the kernel")))
            return
        timer = None
        timeout = self.plan.timeouts.get(alias)
        if timeout:
            described = self.plan.tools[alias]
            late = _error_answer(call_id, ToolCallTimeoutError(
                _timeout_message(described["tool"], described["source"], timeout)))
            timer = threading.Timer(timeout, self._answer, (call_id, late))
            timer.daemon = True
            timer.start()
        self._submit(functools.partial(self._run, call_id, alias, fn, call.get("args") or [],
                                       call.get("kwargs") or {}, timer))

    def close(self) -> None:
        """The program ended: answers of calls still running are dropped."""
        with self._lock:
            self._open = False

    def _run(self, call_id: int, alias: str, fn: Callable[..., Any], args: list[Any],
             kwargs: dict[str, Any], timer: threading.Timer | None) -> None:
        from lackpy_kernel.kit.sources import call_deadline  # noqa: PLC0415 - the kit's sources load late

        try:
            # A second past the program's deadline: the sandbox's own limit, and its message,
            # come first; then the call ends rather than run on for nobody.
            with call_deadline(self.deadline + DEADLINE_GRACE):
                value = fn(*args, **kwargs)
            bad = find_non_plain(value)
            if bad is not None:
                described = self.plan.tools[alias]
                raise ToolCallError(not_plain_message(described["tool"], described["source"],
                                                      bad))
            answer = {"op": "answer", "id": call_id, "ok": True, "value": value}
        except BaseException as exc:  # whatever the tool raised goes back to the program
            answer = _error_answer(call_id, exc)
        if timer is not None:
            timer.cancel()
        self._answer(call_id, answer)

    def _answer(self, call_id: Any, answer: dict[str, Any]) -> None:
        data = self._encode(answer)
        with self._lock:  # so that no answer is sent once close() has returned
            if not self._open or call_id in self._answered:
                return
            self._answered.add(call_id)
            with contextlib.suppress(OSError, EOFError):  # the worker went: the run fails anyway
                self._send(data)

    def _encode(self, answer: dict[str, Any]) -> bytes:
        try:
            data = wire.dumps(answer)
        except RecursionError:
            return wire.dumps(_error_answer(answer["id"], ToolCallError(
                "the tool's result is nested too deeply to send to the program")))
        if len(data) > self.max_bytes:
            return wire.dumps(_error_answer(answer["id"], ToolCallError(
                f"the tool's result is {len(data):,} bytes, over the {self.max_bytes:,} a "
                "program may take in (set by [sandbox] max_result_mb); ask for less")))
        return data


def _error_answer(call_id: Any, exc: BaseException) -> dict[str, Any]:
    """The answer that raises ``exc`` again in the program (its type, if the program's side
    knows it, with its message)."""
    args = list(exc.args)
    if find_non_plain(args) is not None or len(repr(args)) > MAX_ERROR_CHARS:
        args = [_message(exc)]
    return {"op": "answer", "id": call_id, "ok": False, "error_type": type(exc).__name__,
            "error_args": args}


def _message(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # a hostile __str__
        text = type(exc).__name__
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS] + "..."


def _timeout_message(tool: str, source: str, seconds: float) -> str:
    return (f"tool {tool!r} from {source} took longer than its {seconds:g} s timeout; raise "
            "timeout in the source's settings (or overrides.TOOL.timeout)")


# --- the worker's side -------------------------------------------------------------------


class PythonTools:
    """The Python tool modules a worker imported for its children: each once, outside the
    walls (as the kernel does), so that every child forked afterwards has its functions."""

    def __init__(self) -> None:
        self._sources: dict[_LoadKey, PythonToolSource | str] = {}  # a source, or why it failed

    def load(self, request: dict[str, Any]) -> None:
        """Import the modules of the request's Python tools not imported yet."""
        for described in _child_tools(request):
            key = _load_key(described["load"], request["workspace"])
            if key not in self._sources:
                _extend_import_path(request.get("import_path") or [])
                self._sources[key] = _import_source(described["load"], request["workspace"])

    def has_tried(self, request: dict[str, Any]) -> bool:
        """Whether every module the request's Python tools need was imported (or failed)."""
        return all(_load_key(described["load"], request["workspace"]) in self._sources
                   for described in _child_tools(request))

    def function(self, info: dict[str, Any], workspace: str) -> Callable[..., Any]:
        """The tool ``info`` describes. Raises ToolSourceError saying why it is not there."""
        source = self._sources.get(_load_key(info, workspace))
        if source is None or isinstance(source, str):
            why = source or "the sandbox's worker has not imported its module"
            raise ToolSourceError(
                f"{why}; the sandbox's worker could not load it for programs. A module that "
                "needs the kernel's process (its state, threads or connections made as it "
                "loads) should say where = \"kernel\" in its [tools.providers."
                f"{info['provider']}] table")
        return source.tool(info["function"])


def _child_tools(request: dict[str, Any]) -> list[dict[str, Any]]:
    tools = request.get("tools") or {}
    return [described for described in tools.values() if described.get("where") == CHILD]


def _load_key(info: dict[str, Any], workspace: str) -> _LoadKey:
    return (info["provider"], info.get("path"), info.get("module"), workspace)


def _extend_import_path(entries: list[str]) -> None:
    """Add the kernel's import path after the worker's (which lacks site-packages: -S)."""
    sys.path.extend(entry for entry in dict.fromkeys(entries) if entry not in sys.path)


def _import_source(info: dict[str, Any], workspace: str) -> PythonToolSource | str:
    from lackpy_kernel.kit.sources import PythonToolSource  # noqa: PLC0415 - only when a kit has one

    where = {"path": info["path"]} if info.get("path") else {"module": info.get("module")}
    source = PythonToolSource(info["provider"], {"plugin": "python", **where}, workspace)
    try:
        source.module()
    except ToolSourceError as exc:
        return str(exc)
    return source


def checked_call(frame: dict[str, Any], request: dict[str, Any], made: int) -> dict[str, Any]:
    """A call frame from a program's process, as the worker passes it on: the ``made``+1-th
    call, of a tool of the request's kit that runs in the kernel, with plain arguments.
    Raises WireError for any other."""
    if (frame.keys() != CALL_KEYS or type(frame["id"]) is not int
            or type(frame["args"]) is not list or type(frame["kwargs"]) is not dict
            or not all(type(key) is str for key in frame["kwargs"])):
        raise wire.WireError("a malformed tool call")
    tool = frame["tool"]
    described = (request.get("tools") or {}).get(tool) if type(tool) is str else None
    if described is None or described.get("where") != KERNEL:
        raise wire.WireError(f"a call of {str(tool)[:40]!r}, which is not a tool of its kit "
                             "that runs in the kernel")
    limit = request.get("max_tool_calls")
    if limit is not None and made >= int(limit):
        raise wire.WireError(f"more tool calls than [sandbox] max_tool_calls ({limit}) allows")
    if frame["id"] != made + 1:
        raise wire.WireError("a tool call out of turn")
    return {"id": frame["id"], "tool": tool, "args": frame["args"], "kwargs": frame["kwargs"]}


# --- the child's side --------------------------------------------------------------------


class ChildChannel:
    """A program's end of the forwarded calls: the pipe up to the worker, and the one its
    answers come down. Not connected (in a child's warm-up), a call fails."""

    def __init__(self) -> None:
        self.up = self.down = -1
        self.max_bytes = 0
        self.made = 0
        self._answers = wire.FrameReader()

    def connect(self, up: int, down: int, max_bytes: int) -> None:
        """Use these pipes; a call may send at most ``max_bytes``."""
        self.up, self.down, self.max_bytes = up, down, max_bytes

    def call(self, alias: str, tool: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Have the kernel's process call ``alias``; its result, or what it raised."""
        if self.up < 0:
            raise ToolCallError(f"{tool}() cannot be called before the program starts")
        self.made += 1
        try:
            data = wire.dumps({"kind": "call", "id": self.made, "tool": alias,
                               "args": list(args), "kwargs": kwargs})
        except RecursionError:
            raise ToolCallError(f"the arguments of {tool}() are nested too deeply to send") \
                from None
        if len(data) > self.max_bytes:
            raise ToolCallError(
                f"the arguments of {tool}() are {len(data):,} bytes, over the {self.max_bytes:,} "
                "a call may send (set by [sandbox] max_result_mb); send less (a path, not a text)")
        wire.write_all(self.up, data)
        answer = self._next_answer(tool)
        if answer.get("ok"):
            return answer.get("value")
        raise rebuilt_error(str(answer.get("error_type")), answer.get("error_args") or [])

    def _next_answer(self, tool: str) -> dict[str, Any]:
        reader = self._answers
        while (frame := reader.next_frame()) is None:
            data = os.read(self.down, max(READ_CHUNK, min(reader.missing(), 1 << 24)))
            if not data:
                raise ToolCallError(f"{tool}(): the sandbox's worker went away during the call")
            reader.feed(data)
        if type(frame) is not dict or frame.get("id") != self.made:
            raise ToolCallError(f"{tool}(): the answer was not for this call")
        return frame


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


def child_tools(tools: dict[str, dict[str, Any]], workspace: str, python_tools: PythonTools,
                channel: ChildChannel, walls_up: Callable[[], bool]
                ) -> tuple[dict[str, Callable[..., Any]], dict[str, str]]:
    """The callables of the tools a request describes (all but the built-in ones), and
    each one's source; ``walls_up`` says, when a call runs, whether the walls are up.
    Raises ToolSourceError for a Python tool the worker could not load."""
    callables: dict[str, Callable[..., Any]] = {}
    for alias, described in tools.items():
        if described.get("where") == CHILD:
            fn = python_tools.function(described["load"], workspace)
            callables[alias] = _in_child(fn, described, walls_up)
        else:
            callables[alias] = _forwarded(alias, described, channel)
    return callables, {alias: str(described["source"]) for alias, described in tools.items()}


def _forwarded(alias: str, described: dict[str, Any], channel: ChildChannel
               ) -> Callable[..., Any]:
    tool = str(described["tool"])

    def forwarded(*args: Any, **kwargs: Any) -> Any:
        return channel.call(alias, tool, args, kwargs)

    forwarded.__name__ = tool
    forwarded.__signature__ = inspect.Signature([  # type: ignore[attr-defined]
        inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        for name in described.get("params") or []])
    return forwarded


def _in_child(fn: Callable[..., Any], described: dict[str, Any], walls_up: Callable[[], bool]
              ) -> Callable[..., Any]:
    tool, source, timeout = str(described["tool"]), str(described["source"]), \
        described.get("timeout")
    info = described["load"]

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
            raise ToolCallError(
                f"tool {tool!r} from {source} was stopped by the sandbox's walls "
                f"({getattr(wall, 'strerror', None) or wall}): tools run in the program's "
                "process, which may not use the network, start programs or touch files outside "
                "the workspace. One that needs to should run in the kernel: set where = "
                f"\"kernel\" in [tools.providers.{info['provider']}] (or "
                f"overrides.{info['function']}.where) in .lackpy/config.toml") from None

    return in_child


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
        raise ToolCallTimeoutError(_timeout_message(tool, source, seconds))

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
