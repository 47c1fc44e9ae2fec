"""A program's failures as the worker and a child reply them, and the messages of the limits
that cause them (shared by the kernel's side, the worker and the child)."""

from __future__ import annotations

from typing import Any

from .protocol import Reply, RunRequest
from .runner import ExecutionResult


def failure(error_type: str, message: str) -> Reply:
    """The reply of a program that failed with ``error_type`` and ``message``."""
    return Reply(ExecutionResult(False, error=message, error_type=error_type).to_dict())


def failed_after(trace: dict[str, Any], error_type: str, message: str) -> Reply:
    """The reply of a program that ran but cannot be kept: it still lists its files."""
    reply = failure(error_type, message)
    reply.result["trace"].update(files_read=trace["files_read"],
                                 files_modified=trace["files_modified"])
    return reply


def too_big_message(request: RunRequest) -> str:
    """Why a reply over ``request``'s limit is refused, and what to do."""
    limit = request.max_result_bytes / 1_000_000
    return (f"the program's result and variables are over the {limit:g} MB limit; "
            "return a smaller value (a slice, a count) or set big variables to None")


def tool_timeout_message(tool: str, source: str, seconds: float) -> str:
    """Why a call of ``tool`` was stopped at its own timeout, and what to do."""
    return (f"tool {tool!r} from {source} took longer than its {seconds:g} s timeout; raise "
            "timeout in the source's settings (or overrides.TOOL.timeout)")
