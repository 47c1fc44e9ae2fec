"""A program's failures as the worker and a child reply them, and the messages of the limits
that cause them (shared by the kernel's side, the worker and the child)."""

from __future__ import annotations

from lackpy_kernel.kit.changes import printable

from .protocol import Reply, RunRequest
from .runner import ExecutionResult
from .trace import Trace

MAX_NAMED = 5  # files a message names
DECLINED = "they were declined"  # why a change did not land, when the person said no
ASK_INTERRUPTED = "the run was interrupted while waiting for the answer"


def failure(error_type: str, message: str) -> Reply:
    """The reply of a program that failed with ``error_type`` and ``message``."""
    return Reply(ExecutionResult(False, error=message, error_type=error_type))


def failed_after(trace: Trace, error_type: str, message: str) -> Reply:
    """The reply of a program that ran (``trace``) but cannot be kept: it still lists its
    files."""
    reply = failure(error_type, message)
    reply.result.trace.files_read = list(trace.files_read)
    reply.result.trace.files_modified = list(trace.files_modified)
    return reply


def not_kept(result: ExecutionResult, error_type: str, message: str) -> ExecutionResult:
    """``result`` (a program that ran) failed with ``message`` where it could not be kept
    (its file changes refused or not written): its output and variables dropped, its
    trace, printed output and notes kept."""
    return ExecutionResult(False, error=message, error_type=error_type, trace=result.trace,
                           stdout=result.stdout, notes=list(result.notes))


def too_big_message(request: RunRequest) -> str:
    """Why a reply over ``request``'s limit is refused, and what to do."""
    limit = request.max_result_bytes / 1_000_000
    return (f"the program's result and variables are over the {limit:g} MB limit; "
            "return a smaller value (a slice, a count) or set big variables to None")


def tool_timeout_message(tool: str, source: str, seconds: float) -> str:
    """Why a call of ``tool`` was stopped at its own timeout, and what to do."""
    return (f"tool {tool!r} from {source} took longer than its {seconds:g} s timeout; raise "
            "timeout in the source's settings (or overrides.TOOL.timeout)")


def dropped_note(paths: list[str]) -> str:
    """The note of a failed program that had changed ``paths``: none of them was written."""
    return (f"nothing was written: a program that fails leaves the files as they were "
            f"(its changes to {named_files(paths)} were dropped)")


def refused_message(paths: list[str], why: str) -> str:
    """Why a program's changes to ``paths`` did not land (``why``), and what that left."""
    return (f"the program's changes to {named_files(paths)} were not applied: {why.rstrip('. ')}. Nothing "
            "was written, and the variables are as they were before it")


def changed_meanwhile(paths: list[str]) -> str:
    """Why an approved change did not land: ``paths`` changed while it was shown."""
    return (f"{named_files(paths)} changed while the change was shown, so what was approved "
            "is not what would land; run the program again to see the change as it is now")


def named_files(paths: list[str]) -> str:
    """The first ``MAX_NAMED`` of ``paths``, printable, and how many more."""
    return ", ".join(printable(path) for path in paths[:MAX_NAMED]) + (
        f" and {len(paths) - MAX_NAMED} more" if len(paths) > MAX_NAMED else "")
