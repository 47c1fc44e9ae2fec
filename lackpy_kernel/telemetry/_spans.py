"""OpenTelemetry spans, on only when ``[telemetry] exporter`` names one (``console`` or
``otlp``) or a caller hands over a tracer provider (:func:`use_tracer_provider`).

Off, :func:`span` yields a handle that does nothing, and OpenTelemetry is never imported.
On, the spans nest as the work does: a kernel cell or a magic (or a ``lackpy`` command) >
``lackpy.validate``, ``lackpy.run`` > one span per tool call (where the service runs a
program itself, for ``lackpy run``, MCP or a delegate, ``lackpy.validate`` is inside
``lackpy.run``); ``lackpy.generate`` > one
``lackpy.tier`` per tier tried > one span per model call, with the ``gen_ai.*`` attributes
of OpenTelemetry's semantic conventions for generative AI; a plan's step is ``lackpy.step
NAME`` (on Temporal under the activity's span, the client's and the workflow's made by
temporalio's interceptor, :func:`temporal_interceptors`).

The sandbox's child opens no socket: a run's tool calls come back in its trace (tool,
arguments, ms, ok), and :meth:`RunSpan.finish` makes their spans here, laid end to end
in call order so that the last ends as the result comes back (the trace keeps durations,
not start times).

Values stay out of spans unless ``[telemetry] include_values = true``: a tool call's
arguments are shown by their type and size (a path or pattern as given only when it is one
of the program's own string literals, never a value a tool returned), its result is left
out, and a failure (a tool's, a run's, a step's, or an exception leaving a span) is told by
its type alone, never by its message, which may quote what a program read. With values on,
arguments and results are shown (bounded), failures with their messages, and an exception
is recorded as OpenTelemetry records it.

``otlp`` sends OTLP over HTTP (the ``otel`` extra: ``opentelemetry-sdk`` and
``opentelemetry-exporter-otlp-proto-http``) to the endpoint and with the headers of the
standard variables (``OTEL_EXPORTER_OTLP_ENDPOINT``, ``OTEL_EXPORTER_OTLP_HEADERS``, ...);
``console`` writes each span to stderr. ``OTEL_SERVICE_NAME`` names the service (default
``lackpy-kernel``).
"""

from __future__ import annotations

import atexit
import functools
import os
import sys
import time
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, ParamSpec, Protocol, TypeVar

from lackpy_kernel.errors import MissingExtraError, TelemetryError

EXPORTERS = ("none", "console", "otlp")
SERVICE_NAME = "lackpy-kernel"
TEXT_CHARS = 200  # the most of any text an attribute carries
MAX_ARGUMENTS = 16  # of one tool call
MAX_TOOL_SPANS = 500  # of one run; the rest are counted, not sent
PATH_ARGUMENTS = frozenset({"path", "pattern", "paths"})
VALUES_OFF = "its message is left out: [telemetry] include_values = false"
Attributes = Mapping[str, str | bool | int | float | None]
T = TypeVar("T")
P = ParamSpec("P")


class _State:
    tracer: Any = None
    include_values = False
    configured: tuple[str, bool] | None = None


_state = _State()


def configure(exporter: str, *, include_values: bool = False) -> None:
    """Send spans to ``exporter`` (``console``, ``otlp``; ``none`` leaves them as they are),
    once per process. Raises MissingExtraError when the ``otel`` extra is not installed,
    TelemetryError for an unknown exporter."""
    if exporter == "none" or _state.configured == (exporter, include_values):
        return
    if exporter not in EXPORTERS:
        raise TelemetryError(f"[telemetry] exporter must be one of {', '.join(EXPORTERS)}, "
                             f"not {exporter!r}")
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
        if exporter == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError as exc:
        raise MissingExtraError(f"[telemetry] exporter = {exporter!r} needs the otel extra: "
                                f"pip install 'lackpy-kernel[otel]' ({exc})") from None
    name = os.environ.get("OTEL_SERVICE_NAME") or SERVICE_NAME
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    sink = OTLPSpanExporter() if exporter == "otlp" else ConsoleSpanExporter(out=sys.__stderr__ or sys.stderr)
    provider.add_span_processor(BatchSpanProcessor(sink))
    atexit.register(provider.shutdown)  # what is still queued is sent at exit
    use_tracer_provider(provider, include_values=include_values)
    _state.configured = (exporter, include_values)


def use_tracer_provider(provider: Any, *, include_values: bool = False) -> None:
    """Make spans with ``provider`` (an OpenTelemetry ``TracerProvider``; None turns them
    off); ``include_values`` puts tool calls' argument values and results in them."""
    _state.tracer = None if provider is None else provider.get_tracer("lackpy_kernel")
    _state.include_values = include_values
    _state.configured = None


def tracing() -> bool:
    """Whether spans are being made."""
    return _state.tracer is not None


def values_included() -> bool:
    """Whether spans may carry values (``[telemetry] include_values``): a caller that puts
    text derived from a program's data in a span asks this first."""
    return _state.include_values


def failure_text(kind: str, message: str | None) -> str:
    """How a span tells a failure of type ``kind``: its ``message`` (bounded) with values
    on, else the type alone, saying the message was left out."""
    if _state.include_values and message:
        return _bounded(message)
    return f"{kind or 'error'} ({VALUES_OFF})"


class SpanHandle:
    """A span in progress (or nothing, when telemetry is off): ``set`` adds attributes."""

    def __init__(self, span: Any = None) -> None:
        self.span = span

    def set(self, attributes: Attributes) -> None:
        """Add ``attributes`` (None values are left out)."""
        if self.span is not None:
            self.span.set_attributes(_clean(attributes))

    def fail(self, kind: str, message: str | None = None) -> None:
        """Mark the span failed with a ``kind`` of error, saying why (``failure_text``: the
        ``message`` only with values on)."""
        if self.span is not None:
            from opentelemetry.trace import Status, StatusCode

            self.span.set_status(Status(StatusCode.ERROR, failure_text(kind, message)))


_OFF = SpanHandle()


@contextmanager
def span(name: str, attributes: Attributes | None = None) -> Iterator[SpanHandle]:
    """A span around the block, a child of the one in progress; an exception that leaves
    the block marks it failed (``error.type``, and with values on its message and an
    exception event) and goes on."""
    tracer = _state.tracer
    if tracer is None:
        yield _OFF
        return
    values = _state.include_values
    with tracer.start_as_current_span(name, attributes=_clean(attributes or {}),
                                      record_exception=values,
                                      set_status_on_exception=values) as current:
        try:
            yield SpanHandle(current)
        except BaseException as exc:
            current.set_attribute("error.type", type(exc).__name__)
            if not values:  # the message may quote what a program read: the type alone
                SpanHandle(current).fail(type(exc).__name__)
            raise


def traced(name: str) -> Callable[[Callable[P, Coroutine[Any, Any, T]]],
                                  Callable[P, Coroutine[Any, Any, T]]]:
    """A decorator: each call of the coroutine function is a span called ``name``."""

    def decorate(work: Callable[P, Coroutine[Any, Any, T]]) -> Callable[P, Coroutine[Any, Any, T]]:
        @functools.wraps(work)
        async def spanned(*args: P.args, **kwargs: P.kwargs) -> T:
            with span(name):
                return await work(*args, **kwargs)

        return spanned

    return decorate


class TraceEntryLike(Protocol):
    tool: str
    args: dict[str, Any]
    result: Any
    duration_ms: float
    success: bool
    error: str | None
    source: str


class TraceLike(Protocol):
    @property
    def entries(self) -> Sequence[TraceEntryLike]: ...


class RunResultLike(Protocol):
    success: bool
    error: str | None
    error_type: str | None

    @property
    def trace(self) -> TraceLike: ...


class RunSpan:
    """The span of one program run; :meth:`finish` records its outcome and its tool calls.
    ``program`` (its source, when known) lets a path argument that is one of its string
    literals be shown as given with values off."""

    def __init__(self, handle: SpanHandle, program: str | None = None) -> None:
        self.handle = handle
        self.program = program

    def finish(self, result: RunResultLike) -> None:
        """The run's outcome, and a child span per tool call of ``result.trace``."""
        parent = self.handle.span
        if parent is None:
            return
        entries = result.trace.entries
        kind = result.error_type or "error"
        self.handle.set({"lackpy.ok": result.success, "lackpy.tool_calls": len(entries),
                         "error.type": None if result.success else kind})
        if not result.success:
            self.handle.fail(kind, result.error or "the program failed")
        if len(entries) > MAX_TOOL_SPANS:
            self.handle.set({"lackpy.tool_spans_dropped": len(entries) - MAX_TOOL_SPANS})
        _tool_spans(parent, entries[:MAX_TOOL_SPANS], _literals(self.program))


R = TypeVar("R", bound=RunResultLike)


def traced_run(run: Callable[P, Coroutine[Any, Any, R]]) -> Callable[P, Coroutine[Any, Any, R]]:
    """A decorator: each call of ``run`` (a coroutine function that runs a program and
    returns its result) is a ``lackpy.run`` span with the outcome and a span per tool call.
    The program's source is the ``program`` attribute of the first argument that has one
    (the run's spec), for :class:`RunSpan`."""

    @functools.wraps(run)
    async def spanned(*args: P.args, **kwargs: P.kwargs) -> R:
        with span("lackpy.run") as handle:
            result = await run(*args, **kwargs)
            RunSpan(handle, _program_of([*args, *kwargs.values()])).finish(result)
        return result

    return spanned


class ErrorLike(Protocol):
    @property
    def type(self) -> str: ...

    @property
    def message(self) -> str: ...


class StepLike(Protocol):
    @property
    def name(self) -> str: ...


class StepResultLike(Protocol):
    @property
    def ms(self) -> float: ...

    @property
    def error(self) -> ErrorLike | None: ...


StepT = TypeVar("StepT", bound=StepLike)
S = TypeVar("S", bound=StepResultLike)
Execute = Callable[[Any, StepT, Any, Any], Coroutine[Any, Any, S]]


def traced_step(execute: Execute[StepT, S]) -> Execute[StepT, S]:
    """A decorator for a plan executor's ``execute(step, task, context)``: each step is a
    ``lackpy.step NAME`` span with its outcome and ms (on Temporal, inside the activity's
    span, so that a plan's trace crosses its workers)."""

    @functools.wraps(execute)
    async def spanned(executor: Any, step: StepT, task: Any, context: Any) -> S:
        with span(f"lackpy.step {step.name}", {"lackpy.step": step.name}) as handle:
            result = await execute(executor, step, task, context)
            error = result.error
            handle.set({"lackpy.ok": error is None, "lackpy.ms": result.ms,
                        "error.type": None if error is None else error.type})
            if error is not None:
                handle.fail(error.type, error.message)
        return result

    return spanned


def temporal_interceptors() -> list[Any]:
    """Temporal's OpenTelemetry interceptor (``temporalio.contrib.opentelemetry``) over this
    process's spans, for a client and the workers made from it: the client's span, the
    workflow's and each activity's link the plan's steps across workers. None while spans
    are off."""
    if _state.tracer is None:
        return []
    from temporalio.contrib.opentelemetry import TracingInterceptor  # noqa: PLC0415 - extra

    return [TracingInterceptor(_state.tracer)]


def _program_of(args: Sequence[Any]) -> str | None:
    """The ``program`` attribute (a str) of the first of ``args`` that has one, or None."""
    for arg in args:
        program = getattr(arg, "program", None)
        if isinstance(program, str):
            return program
    return None


def _literals(program: str | None) -> frozenset[str]:
    """The string literals of ``program`` (none when there is none, or it does not parse):
    text the program's author wrote, not a value a tool returned."""
    if not program or _state.include_values:
        return frozenset()
    import ast  # here: only while spans are made with values off

    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return frozenset()
    return frozenset(node.value for node in ast.walk(tree)
                     if isinstance(node, ast.Constant) and isinstance(node.value, str))


def _tool_spans(parent: Any, entries: Sequence[TraceEntryLike], literals: frozenset[str]) -> None:
    from opentelemetry.trace import Status, StatusCode, set_span_in_context

    context = set_span_in_context(parent)
    now = time.time_ns()
    start = max(getattr(parent, "start_time", None) or now,
                now - sum(int(entry.duration_ms * 1_000_000) for entry in entries))
    for entry in entries:
        end = start + int(entry.duration_ms * 1_000_000)
        tool = _state.tracer.start_span(
            f"execute_tool {entry.tool}", context=context, start_time=start,
            attributes=_clean({"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": entry.tool,
                               "lackpy.tool.source": entry.source or None,
                               "lackpy.tool.ms": entry.duration_ms, "lackpy.ok": entry.success,
                               **_arguments(entry.args, literals),
                               "lackpy.tool.result": _bounded(entry.result)
                               if _state.include_values and entry.success else None}))
        if not entry.success:
            tool.set_attribute("error.type", "ToolError")
            tool.set_status(Status(StatusCode.ERROR, failure_text(
                _error_kind(entry.error), entry.error or "failed")))
        tool.end(end_time=end)
        start = end


def _arguments(args: Mapping[str, Any], literals: frozenset[str]) -> dict[str, str]:
    """A tool call's arguments as attributes: values with values on; else a path or pattern
    that is one of the program's ``literals`` as given, any other value by type and size."""
    shown = {}
    for name, value in list(args.items())[:MAX_ARGUMENTS]:
        key = f"lackpy.tool.arg.{str(name)[:40]}"
        written = name in PATH_ARGUMENTS and isinstance(value, str) and value in literals
        shown[key] = _bounded(value) if _state.include_values or written else _shape(value)
    return shown


def _error_kind(error: str | None) -> str:
    """The exception type a trace entry's ``error`` (``Type: message``) names, or
    ``ToolError`` when it names none."""
    kind = (error or "").partition(":")[0]
    return kind if kind.isidentifier() else "ToolError"


def _shape(value: Any) -> str:
    """What a value is without what it holds: ``str, 1234 chars``, ``list, 3 items``."""
    kind = type(value).__name__
    if isinstance(value, str | bytes):
        return f"{kind}, {len(value)} chars"
    if isinstance(value, Sequence | Mapping):
        return f"{kind}, {len(value)} items"
    return kind


def _bounded(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= TEXT_CHARS else text[:TEXT_CHARS - 1] + "\u2026"


def _clean(attributes: Attributes) -> dict[str, str | bool | int | float]:
    """The attributes without None values, every text bounded."""
    return {key: _bounded(value) if isinstance(value, str) else value
            for key, value in attributes.items() if value is not None}
