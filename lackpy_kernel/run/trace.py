"""Traces: one record per tool call, with arguments and summarised results."""

from __future__ import annotations

import inspect
import reprlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lackpy_kernel.kibitzer import watching
from lackpy_kernel.timing import ms_since as _ms_since

SUMMARY_CHARS = 200

_summary_repr = reprlib.Repr()
_summary_repr.maxlevel = 4
_summary_repr.maxstring = SUMMARY_CHARS
_summary_repr.maxother = 80
_summary_repr.maxlist = _summary_repr.maxtuple = _summary_repr.maxdict = 10
_summary_repr.maxset = _summary_repr.maxfrozenset = 10
_summary_repr.maxlong = 60


@dataclass
class TraceEntry:
    """One tool call: its zero-based step, arguments by parameter name, and outcome; ``source``
    says where the tool comes from (``ToolSpec.source``: ``builtin``, ``mine (python:
    tools/mine.py)``), empty when the caller did not say."""

    step: int
    tool: str
    args: dict[str, Any]
    result: Any
    duration_ms: float
    success: bool
    error: str | None
    source: str = ""


@dataclass
class Trace:
    """The tool calls of one program run, and the files its tools read and changed."""

    entries: list[TraceEntry] = field(default_factory=list)
    files_read: list[str] = field(default_factory=list)
    files_modified: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form, for JSON and for crossing process boundaries (the entries' args
        are shared, not copied: ``asdict`` would deep-copy every value, at about 10 us an
        entry, and a program may make 10,000 calls)."""
        return {"entries": [dict(vars(entry)) for entry in self.entries],
                "files_read": list(self.files_read), "files_modified": list(self.files_modified)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Trace:
        """Rebuild a trace from ``to_dict``'s output."""
        return cls(
            entries=[TraceEntry(**entry) for entry in data.get("entries", [])],
            files_read=list(data.get("files_read", [])),
            files_modified=list(data.get("files_modified", [])),
        )


def summarize(value: Any) -> Any:
    """A small stand-in for ``value``: scalars and short strings as they are, else a bounded repr.

    Copes with huge, deeply nested and self-referencing values.
    """
    if value is None or isinstance(value, (bool, int, float)):
        if not isinstance(value, int) or abs(value) < 10**50:
            return value
        digits = int(value.bit_length() * 0.30103) + 1
        return f"<int with about {digits:,} digits>"
    if isinstance(value, str) and len(value) <= SUMMARY_CHARS:
        return value
    try:
        return _summary_repr.repr(value)
    except Exception as exc:  # a hostile __repr__ must not break the trace
        return f"<{type(value).__name__}: repr failed: {type(exc).__name__}>"


def make_traced(name: str, fn: Callable[..., Any], trace: Trace, source: str = "",
                kibitzer_session: Any = None) -> Callable[..., Any]:
    """Wrap ``fn`` so each call appends a TraceEntry (from ``source``) to ``trace``; errors are
    recorded and re-raised. With a ``kibitzer_session`` (a KibitzerSession, or a
    ``lackpy_kernel.kibitzer.Watch``) each call first goes through its ``before_call`` (a
    refusal fails the call with a ToolCallError) and then its ``after_call``."""
    parameters = _parameter_names(fn)
    watch = None if kibitzer_session is None else watching(kibitzer_session)

    def traced(*args: Any, **kwargs: Any) -> Any:
        named = _name_arguments(parameters, args, kwargs)
        step = len(trace.entries)
        started = time.perf_counter()
        try:
            if watch is not None:
                watch.before_call(name, named)
            result = fn(*args, **kwargs)
        except Exception as exc:
            entry = TraceEntry(step, name, named, None, _ms_since(started), False, _describe(exc),
                               source)
            trace.entries.append(entry)
            if watch is not None:
                watch.after_call(name, named, False, entry.error)
            raise
        trace.entries.append(TraceEntry(step, name, named, summarize(result), _ms_since(started),
                                        True, None, source))
        if watch is not None:
            watch.after_call(name, named, True)
        return result

    traced.__name__ = name
    traced.__doc__ = fn.__doc__
    return traced


def _parameter_names(fn: Callable[..., Any]) -> list[str]:
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return []
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in parameters if p.kind in positional]


def _name_arguments(parameters: list[str], args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> dict[str, Any]:
    named = {}
    for index, value in enumerate(args):
        key = parameters[index] if index < len(parameters) else f"arg{index}"
        named[key] = summarize(value)
    named.update((key, summarize(value)) for key, value in kwargs.items())
    return named


def _describe(exc: BaseException) -> str:
    try:
        return f"{type(exc).__name__}: {exc}"
    except Exception:
        return f"{type(exc).__name__}: {summarize(exc.args)}"
