"""Running lackpy programs: the restricted runner, traces, and the sandbox worker.

The folders say which process a line runs in; the modules at this level are shared.

A program's trip, kernel -> worker -> child -> back:

1. ``kernel_side`` (the caller's process): ``Sandbox.run`` resolves the kit, splits its tools
   by where they run (``plan_kit``) and sends a ``protocol.RunRequest`` down the worker's stdin
   (``wire`` frames); ``spawn`` started the worker (``python -S -m lackpy_kernel.run.worker``).
2. ``child`` (forked by the worker, before the request came): the waiting child has warmed
   up and put up its ``walls``; it reads the request from stdin itself, checks that it
   ``fits``, tells the worker it ``started``, and runs the program with the ``runner`` under
   its limits, its file writes staged (``kit.staging``), sending up the files it modifies
   and each call of a tool that runs in the kernel (``ChildChannel``).
3. ``worker``: watches the child (``_watch``): passes each tool call up to the kernel and its
   answer down (``_calls``; the kernel runs it on a ``ToolHost`` thread), stops the child at
   its deadline or on a ``cancel``, and reads its ``protocol.Reply``.
4. back: the worker commits the files the program staged when it ended well, else drops
   them (``kit.journal``), keeps the reply's ``protocol.Commit`` (the variables the program
   changed, ``commit``) in its session, sends the reply up to the kernel, and starts the next child
   (a held twin, or a fork); the kernel keeps a copy of the commit, to restore a worker that
   died, and returns the ``ExecutionResult``.

Shared: ``protocol`` (the frames as dataclasses, the limits' defaults), ``wire`` (frames of
plain data), ``commit``, ``runner``, ``trace``, ``plain``, ``context``, ``walls``,
``failures`` (how a failed program replies), ``spawn``.

The names below load on first use, so that ``spawn`` (starting a worker first thing
in a kernel) costs no other import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers see; at run time __getattr__ loads them
    from .context import describe_variables as describe_variables
    from .kernel_side import Sandbox as Sandbox
    from .kernel_side import sandbox_supported as sandbox_supported
    from .plain import find_non_plain as find_non_plain
    from .protocol import SandboxLimits as SandboxLimits
    from .runner import ExecutionResult as ExecutionResult
    from .runner import RestrictedRunner as RestrictedRunner
    from .runner import no_rebinding as no_rebinding
    from .runner import validation_failure as validation_failure
    from .trace import Trace as Trace
    from .trace import TraceEntry as TraceEntry
    from .trace import make_traced as make_traced
    from .trace import summarize as summarize

_EXPORTS = {
    "ExecutionResult": "runner",
    "RestrictedRunner": "runner",
    "Sandbox": "kernel_side",
    "SandboxLimits": "protocol",
    "Trace": "trace",
    "TraceEntry": "trace",
    "describe_variables": "context",
    "find_non_plain": "plain",
    "make_traced": "trace",
    "no_rebinding": "runner",
    "sandbox_supported": "kernel_side",
    "summarize": "trace",
    "validation_failure": "runner",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
