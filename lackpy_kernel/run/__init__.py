"""Running lackpy programs: the restricted runner, traces, and the sandbox worker."""

from .plain import find_non_plain
from .runner import ExecutionResult, RestrictedRunner, no_rebinding, validation_failure
from .sandbox import Sandbox, SandboxLimits, sandbox_supported
from .trace import Trace, TraceEntry, make_traced, summarize

__all__ = [
    "ExecutionResult",
    "RestrictedRunner",
    "Sandbox",
    "SandboxLimits",
    "Trace",
    "TraceEntry",
    "find_non_plain",
    "make_traced",
    "no_rebinding",
    "sandbox_supported",
    "summarize",
    "validation_failure",
]
