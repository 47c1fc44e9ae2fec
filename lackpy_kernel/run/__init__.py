"""Running lackpy programs: the restricted runner, traces, and the sandbox worker.

The names below load on first use, so that ``spawn`` (starting a worker first thing
in a kernel) costs no other import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers see; at run time __getattr__ loads them
    from .context import describe_variables as describe_variables
    from .plain import find_non_plain as find_non_plain
    from .runner import ExecutionResult as ExecutionResult
    from .runner import RestrictedRunner as RestrictedRunner
    from .runner import no_rebinding as no_rebinding
    from .runner import validation_failure as validation_failure
    from .sandbox import Sandbox as Sandbox
    from .sandbox import SandboxLimits as SandboxLimits
    from .sandbox import sandbox_supported as sandbox_supported
    from .trace import Trace as Trace
    from .trace import TraceEntry as TraceEntry
    from .trace import make_traced as make_traced
    from .trace import summarize as summarize

_EXPORTS = {
    "ExecutionResult": "runner",
    "RestrictedRunner": "runner",
    "Sandbox": "sandbox",
    "SandboxLimits": "sandbox",
    "Trace": "trace",
    "TraceEntry": "trace",
    "describe_variables": "context",
    "find_non_plain": "plain",
    "make_traced": "trace",
    "no_rebinding": "runner",
    "sandbox_supported": "sandbox",
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
