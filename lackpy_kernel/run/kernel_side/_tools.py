"""The kernel's side of forwarding: what a request says about a kit's tools (``plan_kit``),
and the calls of the tools that run here (``ToolHost``).

A kit's tools run where their specs say (``ToolSpec.where``): the built-in file tools and
a ``plugin = "python"`` source's tools in the program's process (the child); every other
tool (an MCP server's, ``where = "kernel"``, one registered from Python) in the process that
holds the toolbox. The child sends each call of one of those up its pipe, the worker checks
it and passes it on, and a thread here runs it; the answer goes back the same way, both ways
frames of plain data. The call's time counts against the program's deadline.

A call of a tool graded ``write`` here (``KitPlan.asks``) is asked for first, where the run
asks (``[sandbox] approve = "write"``): the thread tells the worker that the clock stands
(``Asking``), asks the run's approver, then lets the clock run again (``Asked``) and calls
the tool, or answers the call with the refusal. The program's deadline moves by the time
the person took (``HostedRun.stood``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import queue
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from lackpy_kernel.errors import ToolCallError, ToolCallTimeoutError
from lackpy_kernel.kit import ResolvedKit
from lackpy_kernel.kit.builtin_specs import WRITE_GRADE
from lackpy_kernel.kit.plain import not_plain_message
from lackpy_kernel.kit.spec import BUILTIN_PROVIDER, CHILD, KERNEL, KEYWORD_ONLY_MARK, ToolSpec

from .. import wire
from ..failures import tool_timeout_message
from ..plain import TOO_LARGE, Bounds, bounded_repr, display_problem, find_non_plain
from ..protocol import Answer, Asked, Asking, PythonLoad, ToolCall, ToolDescription
from ._approval import Approver, ask_call, call_change, refused_call

MAX_ERROR_CHARS = 2_000
MAX_CALL_DEPTH = 1_000  # about as deep as a frame's pickle goes
ERROR_BOUNDS = Bounds.of_text(MAX_ERROR_CHARS)
DEADLINE_GRACE = 1.0
_Job = Callable[[], None]

@dataclass
class KitPlan:
    """A kit as a sandbox request carries it: ``builtins`` (alias -> built-in tool name),
    ``tools`` (alias -> the description of each other tool), ``import_path`` (this
    process's, for a worker that imports Python tools, which finds what they import where
    this process does), and what runs here: ``kernel`` (alias -> callable) and the
    ``timeouts`` this side enforces, and which of them ``asks`` before each call (graded
    write)."""

    builtins: dict[str, str] = field(default_factory=dict)
    tools: dict[str, ToolDescription] = field(default_factory=dict)
    import_path: list[str] = field(default_factory=list)
    kernel: dict[str, Callable[..., Any]] = field(default_factory=dict)
    timeouts: dict[str, float] = field(default_factory=dict)
    asks: set[str] = field(default_factory=set)


def plan_kit(resolved: ResolvedKit) -> KitPlan:
    """Where each of the kit's tools runs, and what a program's process needs to know."""
    plan = KitPlan()
    for alias, spec in resolved.tools.items():
        if spec.provider == BUILTIN_PROVIDER:
            plan.builtins[alias] = spec.name
            continue
        python = spec.provider_config.get("plugin") == "python"
        timeout = spec.provider_config.get("timeout") if python else None
        load = _load_info(spec) if spec.where == CHILD else None
        if load is not None:
            plan.import_path = [os.path.abspath(entry) for entry in sys.path]
        else:
            plan.kernel[alias] = resolved.callables[alias]
            if asks_before_calls(spec):
                plan.asks.add(alias)
            if timeout:
                plan.timeouts[alias] = float(timeout)
        plan.tools[alias] = ToolDescription(spec.name, spec.source, _positional(spec), timeout,
                                            load)
    return plan


def asks_before_calls(spec: ToolSpec) -> bool:
    """Whether each call of the tool ``spec`` describes is asked for where writes are
    (``[sandbox] approve = "write"``): it runs in the kernel and is graded write."""
    return spec.where == KERNEL and spec.grade_w >= WRITE_GRADE["grade_w"]


def asked_first(resolved: ResolvedKit, approve: Approver | None) -> dict[str, Callable[..., Any]]:
    """The kit's callables for a program run in this process (no sandbox), each tool that
    ``asks_before_calls`` asking ``approve`` (blocking, on the program's thread) before each
    call; a refusal raises ToolCallError in the program."""
    callables = dict(resolved.callables)
    for alias, spec in resolved.tools.items():
        if asks_before_calls(spec):
            callables[alias] = _asking(spec.name, callables[alias], approve)
    return callables


def _asking(tool: str, fn: Callable[..., Any], approve: Approver | None) -> Callable[..., Any]:
    @functools.wraps(fn)
    def asked(*args: Any, **kwargs: Any) -> Any:
        why = ask_call(approve, call_change(tool, list(args), kwargs))
        if why is not None:
            raise ToolCallError(refused_call(tool, why))
        return fn(*args, **kwargs)

    return asked


def _positional(spec: ToolSpec) -> tuple[str, ...]:
    """The names of the arguments a call may pass by position (for the trace)."""
    names = [arg.name for arg in spec.args]
    if KEYWORD_ONLY_MARK in names:
        names = names[:names.index(KEYWORD_ONLY_MARK)]
    return tuple(name for name in names if name.isidentifier())


def _load_info(spec: ToolSpec) -> PythonLoad:
    config = spec.provider_config
    path, module = config.get("path"), config.get("module")
    where = path or getattr(sys.modules.get(module or ""), "__file__", None)
    return PythonLoad(spec.provider, path, module, config.get("function", spec.name),
                      content_of(where) if where else "")


_contents: dict[str, tuple[tuple[int, ...], str]] = {}  # path -> (its stat, its digest)


def content_of(path: str) -> str:
    """A digest of the file at ``path`` ("" when it cannot be read), read again only when
    its inode, size or times changed."""
    try:
        info = os.stat(path)
    except OSError:
        return ""
    stat = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    known = _contents.get(path)
    if known is None or known[0] != stat:
        try:
            with open(path, "rb") as file:
                known = stat, hashlib.blake2b(file.read(), digest_size=16).hexdigest()
        except OSError:
            return ""
        _contents[path] = known
    return known[1]


class ToolHost:
    """Runs the calls programs forward to this process, each on a daemon thread of its own
    (threads are kept for later calls; one a tool never returns from is lost, not the
    caller). ``start`` opens a run's calls; ``HostedRun.close`` ends them."""

    def __init__(self) -> None:
        self._idle: list[queue.SimpleQueue[_Job]] = []
        self._lock = threading.Lock()

    def start(self, plan: KitPlan, *, deadline: float, send: Callable[[bytes], None],
              max_bytes: int, ask: bool = False, approve: Approver | None = None
              ) -> HostedRun:
        """The calls of one program whose tools are ``plan``'s, which must end by
        ``deadline`` (``time.monotonic()``); ``send`` writes an answer's frame. With ``ask``,
        a call of a tool of ``plan.asks`` runs once ``approve`` (blocking) lets it."""
        return HostedRun(plan, deadline, send, max_bytes, self._submit,
                         ask=ask, approve=approve)

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
                 max_bytes: int, submit: Callable[[_Job], None], *, ask: bool = False,
                 approve: Approver | None = None) -> None:
        self.plan, self.deadline, self.max_bytes = plan, deadline, max_bytes
        self._send, self._submit = send, submit
        self._asks = plan.asks if ask else set()
        self._approve = approve
        self._lock = threading.Lock()
        self._open = True
        self._answered: set[int] = set()
        self._stood = 0.0  # seconds the clock stood while a person was asked
        self._asking_since: float | None = None

    def stood(self) -> float:
        """The seconds the program's clock stood so far (a person asked about a call), the
        question still open included."""
        since = self._asking_since
        return self._stood + (time.monotonic() - since if since is not None else 0.0)

    @property
    def asking(self) -> bool:
        """Whether a person is being asked about a call now."""
        return self._asking_since is not None

    def call(self, call: ToolCall) -> None:
        """Start the call the worker passed on."""
        call_id, alias = call.call_id, call.tool
        fn = self.plan.kernel.get(alias)
        if fn is None:  # the worker checks this first
            self._answer(call_id, _error_answer(call_id, ToolCallError(
                f"{alias[:40]!r} is not a tool of this kit that runs in the kernel")))
            return
        too_large = self._arguments_problem(self.plan.tools[alias].tool, [call.args, call.kwargs])
        if too_large is not None:
            self._answer(call_id, _error_answer(call_id, too_large))
            return
        self._submit(functools.partial(self._run, call_id, alias, fn, call.args, call.kwargs))

    def _arguments_problem(self, tool: str, arguments: list[Any]) -> ToolCallError | None:
        """The error for arguments that would expand past what a call may send, counted as
        the tool would write them (shared references each time they appear), else None."""
        limit = self.max_bytes
        problem = display_problem(arguments, Bounds(limit, limit, limit, MAX_CALL_DEPTH))
        if problem is None:
            return None
        if problem.startswith(TOO_LARGE):
            return ToolCallError(
                f"the arguments of {tool}() expand to over {limit:,} characters (a value shared "
                f"n times counts n times), over what a call may send (set by [sandbox] "
                "max_result_mb); send less, or raise max_result_mb")
        return ToolCallError(f"the arguments of {tool}() cannot be sent: {problem}")

    def close(self) -> None:
        """The program ended: answers of calls still running are dropped."""
        with self._lock:
            self._open = False

    def _run(self, call_id: int, alias: str, fn: Callable[..., Any], args: list[Any],
             kwargs: dict[str, Any]) -> None:
        from lackpy_kernel.kit.sources import (  # noqa: PLC0415 - the kit's sources load late
            call_deadline,
            protections_added,
        )

        if alias in self._asks and not self._allowed(call_id, alias, args, kwargs):
            return
        timer = self._timer(call_id, alias)
        try:
            # A second past the program's deadline: the sandbox's own limit, and its message,
            # come first; then the call ends rather than run on for nobody.
            with call_deadline(self.deadline + DEADLINE_GRACE), protections_added() as added:
                value = fn(*args, **kwargs)
            bad = find_non_plain(value)
            if bad is not None:
                described = self.plan.tools[alias]
                raise ToolCallError(not_plain_message(described.tool, described.source, bad))
            answer = Answer(call_id, True, value)
        except BaseException as exc:  # whatever the tool raised goes back to the program
            answer = _error_answer(call_id, exc)
        if added:  # what it imported from the workspace: the worker's commit refuses it too
            answer = replace(answer, protect=added)
        if timer is not None:
            timer.cancel()
        self._answer(call_id, answer)

    def _allowed(self, call_id: int, alias: str, args: list[Any], kwargs: dict[str, Any]
                 ) -> bool:
        """Whether the person let this call run, asked with the clock standing; a refusal
        is answered here, and a program that ended meanwhile has nothing to run."""
        tool = self.plan.tools[alias].tool
        self._asking_since = time.monotonic()
        self._tell(Asking(call_id))
        try:
            why = ask_call(self._approve, call_change(tool, args, kwargs))
        finally:
            stood = time.monotonic() - self._asking_since
            self.deadline += stood
            self._stood += stood
            self._asking_since = None
        if why is not None:
            self._answer(call_id, _error_answer(call_id, ToolCallError(refused_call(tool, why))))
            return False
        self._tell(Asked(call_id))
        return self._open

    def _timer(self, call_id: int, alias: str) -> threading.Timer | None:
        """The timer that answers the call with its timeout when the tool has one."""
        timeout = self.plan.timeouts.get(alias)
        if not timeout:
            return None
        described = self.plan.tools[alias]
        late = _error_answer(call_id, ToolCallTimeoutError(
            tool_timeout_message(described.tool, described.source, timeout)))
        timer = threading.Timer(timeout, self._answer, (call_id, late))
        timer.daemon = True
        timer.start()
        return timer

    def _tell(self, frame: Asking | Asked) -> None:
        """Send the worker ``frame`` about a call, while the program runs."""
        with self._lock:
            if self._open:
                with contextlib.suppress(OSError, EOFError):
                    self._send(wire.dumps(frame.to_frame()))

    def _answer(self, call_id: int, answer: Answer) -> None:
        data = self._encode(answer)
        with self._lock:  # so that no answer is sent once close() has returned
            if not self._open or call_id in self._answered:
                return
            self._answered.add(call_id)
            with contextlib.suppress(OSError, EOFError):  # the worker went: the run fails anyway
                self._send(data)

    def _encode(self, answer: Answer) -> bytes:
        try:
            data = wire.dumps(answer.to_frame())
        except RecursionError:
            return wire.dumps(_error_answer(answer.call_id, ToolCallError(
                "the tool's result is nested too deeply to send to the program")).to_frame())
        if len(data) > self.max_bytes:
            return wire.dumps(_error_answer(answer.call_id, ToolCallError(
                f"the tool's result is {len(data):,} bytes, over the {self.max_bytes:,} a "
                "program may take in (set by [sandbox] max_result_mb); ask for less")).to_frame())
        return data


def _error_answer(call_id: int, exc: BaseException) -> Answer:
    """The answer that raises ``exc`` again in the program (its type, if the program's side
    knows it, with its message)."""
    args = list(exc.args)
    if find_non_plain(args) is not None or display_problem(args, ERROR_BOUNDS) is not None:
        args = [_message(exc)]
    return Answer(call_id, False, error_type=type(exc).__name__, error_args=args)


def _message(exc: BaseException) -> str:
    """``str(exc)``, cut to ``MAX_ERROR_CHARS``; never expanded past them when its arguments
    are plain data (``ValueError(items)`` with ``items = [s] * 2000``)."""
    args = exc.args
    if find_non_plain(args) is None and display_problem(args, ERROR_BOUNDS) is not None:
        shown = args[0] if len(args) == 1 else args
        return shown[:MAX_ERROR_CHARS] + "..." if type(shown) is str else \
            bounded_repr(shown, MAX_ERROR_CHARS)
    try:
        text = str(exc)
    except Exception:  # a hostile __str__
        text = type(exc).__name__
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS] + "..."
