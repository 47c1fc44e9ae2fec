"""Every exception lackpy raises on purpose, in one tree.

* LackpyError: the root; adapters catch it (and nothing broader) for expected failures.
    * UsageError (ValueError): a magic, command or argument that cannot be read.
    * ConfigError (ValueError): ``.lackpy/config.toml`` cannot be used (file, line, key).
    * KitError (LookupError): a kit or tool that cannot be resolved or used.
        * UnknownToolError (KeyError): no tool of that name.
        * UnknownKitError (FileNotFoundError): no kit of that name.
        * ToolSourceError: a configured tool source (a Python module, an MCP server) cannot be loaded.
    * ToolError: a tool refused its call inside a program.
        * WorkspaceError (PermissionError): a path outside the workspace, or not allowed there.
            * WorkspacePathTypeError (TypeError): a path that is not a ``str``.
        * WriteBudgetError (OSError): a program wrote more than its budget.
        * ToolCallBudgetError: a program called its tools more often than its budget.
        * TooManyMatchesError (ValueError): a pattern matched more files than allowed.
        * ToolCallError: a tool from a tool source failed to answer (its server died, it answered
          what is not plain data).
            * ToolCallTimeoutError (TimeoutError): it took longer than its ``timeout``.
    * TemplateError (ValueError): a template file or pattern that cannot be used.
    * GenerationError (RuntimeError): no inference provider could write a valid program.
    * ProviderError (RuntimeError): one inference provider failed (HTTP, timeout, stall).
        * ProviderTimeoutError (TimeoutError): a request or the attempts ran past their deadline.
        * StreamStallError: a streamed answer went quiet for too long.
    * ProgramError: a program did not succeed; ``result`` is its ``ExecutionResult``.
        * LackpyValidationError (ValueError): not valid lackpy; ``issues`` say where.
        * LackpyRuntimeError (RuntimeError): the program did not finish.
            * LimitError: the sandbox stopped the program.
                * ProgramTimeoutError (TimeoutError): past the wall-clock limit.
                * ProgramMemoryError (MemoryError): past the memory limit.
                * ResultTooLargeError: its result or variables are over the reply limit.
            * ProgramInterrupted: stopped by the user (the stop button, Ctrl-C).
            * SandboxError: the sandbox worker itself failed.
            * ChangeRefusedError (PermissionError): its file changes were not approved
              (declined, or no one could be asked; ``[sandbox] approve``).
    * PlanCompileError (ValueError): a plan that cannot run as declared; raised at construction.
        * PlanRegistryError (KeyError): a saved plan names a callable its registry lacks.
    * PlanRuntimeError (RuntimeError): a plan went wrong in a way that is a bug in the plan
      (a route predicate raised, a from_step whose step never ran).
        * PlanResumeError: ``resume=True`` refused: the checkpoint does not fit this plan.
    * ConcurrentPlanRunError (RuntimeError): another live run holds the plan's checkpoint key.
    * PlanStepError (RuntimeError): a plan run ended with a step's error
      (``Envelope.raise_for_error()``).
    * MissingExtraError (ImportError): an optional extra is not installed; the message names it.
    * TelemetryError (RuntimeError): the usage record cannot be read, or ``[telemetry]`` cannot
      export (the message says what to do).
    * TemporalError (RuntimeError): a plan on Temporal went wrong outside its steps (no worker
      answered, a run that is not there or not paused, a workflow that was terminated).
        * TemporalUnreachableError (ConnectionError): the Temporal server cannot be reached.
    * ToolTimeoutError (TimeoutError): an agent's tool call ran past ``tool_timeout``; the
      model gets it as an error result and the run goes on.
    * ToolApprovalError (PermissionError): an agent's tool call over its approval ceiling
      (``auto_run``); the model gets it as an error result.
    * MaxTurnsExceeded (RuntimeError): an agent used ``max_turns`` model turns without a
      final answer.
    * AgentOutputError (ValueError): an agent's final answer did not fit its ``output`` type,
      after one retry.

One exception stands outside the tree: ``PlanPaused`` derives from ``BaseException``
(as ``KeyboardInterrupt`` does), so a step's ``except Exception`` cannot swallow a pause.
The engines re-export the plan errors from ``lackpy_kernel.engines``.

This module imports nothing of ours, so every layer can raise from it.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "AgentOutputError",
    "ChangeRefusedError",
    "ConcurrentPlanRunError",
    "ConfigError",
    "GenerationError",
    "KitError",
    "LackpyError",
    "LackpyRuntimeError",
    "LackpyValidationError",
    "LimitError",
    "MaxTurnsExceeded",
    "MissingExtraError",
    "PlanCompileError",
    "PlanPaused",
    "PlanRegistryError",
    "PlanResumeError",
    "PlanRuntimeError",
    "PlanStepError",
    "ProgramError",
    "ProgramInterrupted",
    "ProgramMemoryError",
    "ProgramTimeoutError",
    "ProviderError",
    "ProviderTimeoutError",
    "ResultTooLargeError",
    "SandboxError",
    "StreamStallError",
    "TemplateError",
    "TemporalError",
    "TemporalUnreachableError",
    "ToolApprovalError",
    "ToolCallBudgetError",
    "ToolCallError",
    "ToolCallTimeoutError",
    "ToolError",
    "ToolSourceError",
    "ToolTimeoutError",
    "TooManyMatchesError",
    "UnknownKitError",
    "UnknownToolError",
    "UsageError",
    "WorkspaceError",
    "WorkspacePathTypeError",
    "WriteBudgetError",
    "error_text",
]


class LackpyError(Exception):
    """The root of lackpy's errors. Its message says what was wrong and what to do."""

    def _render_traceback_(self) -> list[str]:
        # IPython's hook: an expected failure shows as "Name: message", without our frames.
        return f"{type(self).__name__}: {error_text(self)}".splitlines()


class UsageError(LackpyError, ValueError):
    """A magic line, command line or argument that cannot be read; the message shows the usage."""


class ConfigError(LackpyError, ValueError):
    """A config file that cannot be used; the message names the file, line and key."""


class KitError(LackpyError, LookupError):
    """A kit or tool that cannot be resolved: a missing kit, an unknown tool, a malformed kit."""

    def __str__(self) -> str:
        # KeyError (a subclass's base) quotes its message with repr(); show it as written.
        return str(self.args[0]) if self.args else ""


class UnknownToolError(KitError, KeyError):
    """A tool name that no tool source registers."""


class UnknownKitError(KitError, FileNotFoundError):
    """A kit name with no ``.kit`` file in the workspace or the package (a FileNotFoundError,
    as the seed documents, and a LookupError, as every KitError)."""


class ToolSourceError(KitError):
    """A tool source from ``[tools.providers.NAME]`` cannot be loaded: its module does not import,
    a function cannot be described, its MCP server does not start or does not speak MCP. The
    message names the source and what to do; the other sources keep working."""


class ToolError(LackpyError):
    """A tool refused a call made by a program; the program sees it as a runtime error."""


class WorkspaceError(ToolError, PermissionError):
    """A path was refused because it leaves the workspace or is not allowed there."""


class WorkspacePathTypeError(WorkspaceError, TypeError):
    """A path argument was not a ``str`` (an int would be a file descriptor)."""


class WriteBudgetError(ToolError, OSError):
    """A program tried to write more than its budget (bytes in all, or files)."""


class ToolCallBudgetError(ToolError):
    """A program called its tools more often than its budget (``[sandbox] max_tool_calls``)."""


class TooManyMatchesError(ToolError, ValueError):
    """A file pattern matched more files than a tool returns."""


class ToolCallError(ToolError):
    """A call of a tool from a tool source failed: its MCP server died or answered what cannot
    be read, or the tool returned something that is not plain data. The message names the
    source; the server, if it died, is restarted on the next call."""


class ToolCallTimeoutError(ToolCallError, TimeoutError):
    """A tool from a tool source took longer than its ``timeout`` (a setting of the source)."""


class TemplateError(LackpyError, ValueError):
    """A template file, name or pattern that cannot be used; the message names the file."""


class GenerationError(LackpyError, RuntimeError):
    """No inference provider wrote a valid program; the message lists each and why, then what to do.

    The facts behind the message, for a surface to say it in its own commands
    (``lackpy_kernel.infer.failure_text``): ``intent``; ``failures``, a line per tier
    (``"rules: no program for this intent"``); ``models``, what the model tiers did (``"none"``
    configured; ``"unreachable"``: not available, or their calls failed; ``"failed"``: one
    answered, with no valid program); and, when a template,
    rule or recording has a program for the intent that calls tools outside the kit, ``kit`` (the
    tools a kit needs for it to run), ``missing`` (those outside the kit) and ``source`` (who has it:
    ``"the template summarise"``).
    """

    def __init__(self, message: str, *, intent: str = "", failures: tuple[str, ...] = (),
                 models: str = "failed", kit: tuple[str, ...] = (), missing: tuple[str, ...] = (),
                 source: str = "") -> None:
        super().__init__(message)
        self.intent, self.failures, self.models = intent, failures, models
        self.kit, self.missing, self.source = kit, missing, source


class ProviderError(LackpyError, RuntimeError):
    """A model provider failed: what failed, after how many attempts, and what to do.

    ``attempts`` is the number of requests made, ``status_code`` the HTTP status
    of the last error when it had one, ``elapsed`` the seconds spent.
    """

    def __init__(self, message: str, *, attempts: int = 0, status_code: int | None = None,
                 elapsed: float | None = None) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.status_code = status_code
        self.elapsed = elapsed


class ProviderTimeoutError(ProviderError, TimeoutError):
    """A request ran past ``request_timeout``, or the attempts ran past ``deadline``."""


class StreamStallError(ProviderError):
    """A streamed response went quiet for longer than ``stream_idle_timeout`` (``gap`` seconds)."""

    def __init__(self, message: str, *, gap: float | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.gap = gap


class ProgramError(LackpyError):
    """A program did not succeed. ``result`` is its ``ExecutionResult`` (trace, files, stdout)."""

    def __init__(self, message: str, *, result: Any = None) -> None:
        super().__init__(message)
        self.result = result


class LackpyValidationError(ProgramError, ValueError):
    """The program is not valid lackpy; ``issues`` hold each error with its line and column."""

    def __init__(self, message: str, *, issues: list[Any] | None = None, result: Any = None) -> None:
        super().__init__(message, result=result)
        self.issues = list(issues or [])


class LackpyRuntimeError(ProgramError, RuntimeError):
    """The program did not finish: it raised, or was stopped. ``error_type`` names what
    happened (the exception's name), ``error_line`` the program's line when known."""

    def __init__(self, message: str, *, error_type: str | None = None,
                 error_line: int | None = None, result: Any = None) -> None:
        super().__init__(message, result=result)
        self.error_type = error_type
        self.error_line = error_line


class LimitError(LackpyRuntimeError):
    """The sandbox stopped the program at one of its limits; the message names the setting."""


class ProgramTimeoutError(LimitError, TimeoutError):
    """The program ran past its wall-clock limit (``[sandbox] timeout``)."""


class ProgramMemoryError(LimitError, MemoryError):
    """The program ran past its memory limit (``[sandbox] memory_mb``)."""


class ResultTooLargeError(LimitError):
    """The program's result or variables are over the reply limit (``[sandbox] max_result_mb``)."""


class ProgramInterrupted(LackpyRuntimeError):
    """The user stopped the program; the session's variables are as they were before it."""


class SandboxError(LackpyRuntimeError):
    """The sandbox worker failed (it is restarted with the session on the next program)."""


class ChangeRefusedError(LackpyRuntimeError, PermissionError):
    """The program's file changes were not approved (declined, or no one could be asked;
    ``[sandbox] approve``): nothing was written and the variables are as they were."""


class PlanCompileError(LackpyError, ValueError):
    """A plan that cannot run as declared, raised when it is built, never later.

    The message names the step, says what is wrong (for a program: line and column) and
    what was probably meant.
    """


class PlanRegistryError(PlanCompileError, KeyError):
    """``Plan.from_dict`` met a callable or type name that its ``registry`` does not have."""

    def __str__(self) -> str:
        # KeyError quotes its message with repr(); show it as written.
        return str(self.args[0]) if self.args else ""


class PlanRuntimeError(LackpyError, RuntimeError):
    """A plan misbehaved while running in a way that is a bug in the plan, not a passing
    failure: a route predicate raised, ``routes_by`` read a field the output lacks, a step's
    output cannot be checkpointed. The message names the step and its target."""


class PlanResumeError(PlanRuntimeError):
    """``resume=True`` refused: a completed step's program or kit changed since the checkpoint,
    or the checkpoint belongs to another task or plan. Revert the change, or restart the run."""


class ConcurrentPlanRunError(LackpyError, RuntimeError):
    """Another run that is still alive holds the plan's checkpoint key (``on_concurrent="fail"``).

    Use a key per run, ``on_concurrent="fork"``, or wait; a run whose process died can be
    taken over with ``resume=True``.
    """


class PlanStepError(LackpyError, RuntimeError):
    """A plan run ended with an error: ``error`` is its ErrorInfo (the step's error type,
    message and whether it may pass on a retry), ``envelope`` the run's Envelope."""

    def __init__(self, message: str, *, error: Any = None, envelope: Any = None) -> None:
        super().__init__(message)
        self.error = error
        self.envelope = envelope


class MissingExtraError(LackpyError, ImportError):
    """An optional extra is not installed: the message names it and the ``pip install`` that
    adds it (``pip install 'lackpy-kernel[temporal]'``)."""


class TelemetryError(LackpyError, RuntimeError):
    """The usage record cannot be read, or the configured telemetry cannot export."""


class TemporalError(LackpyError, RuntimeError):
    """A plan on Temporal went wrong outside its steps: no worker answered on the task queue,
    no run under that key, a run that is not paused, a workflow terminated from outside. A
    step's own failure is not one: it is the Envelope's error, as on this machine."""


class TemporalUnreachableError(TemporalError, ConnectionError):
    """The Temporal server at the address cannot be reached; nothing was started or changed."""
class ToolTimeoutError(LackpyError, TimeoutError):
    """A tool call of an agent ran past ``LLMEngine(tool_timeout=...)`` and was stopped (a kit
    tool's sandboxed program is killed; a Python callable's thread is abandoned). The engine
    reports it to the model as an error result; the run goes on."""


class ToolApprovalError(LackpyError, PermissionError):
    """An agent's tool call needs approval: the tool's grade (a write) is over the agent's
    ``auto_run`` ceiling, so it did not run. The model is told; the user can allow it."""


class MaxTurnsExceeded(LackpyError, RuntimeError):
    """An agent used its ``max_turns`` model turns and still asked for tools; raise
    ``max_turns``, or give the agent a narrower task."""


class AgentOutputError(LackpyError, ValueError):
    """An agent's final answer could not be read as its ``output`` type, even after the model
    was told what was wrong and answered again."""


class PlanPaused(BaseException):
    """Raised by a step to halt its plan with a resumable checkpoint.

    Not a LackpyError: a ``BaseException``, as ``KeyboardInterrupt`` is, so a step's
    ``except Exception`` does not swallow it. The plan checkpoints with ``status="paused"``
    and ``next_step`` at the paused step (at a parallel band, its first step: a band's writes
    apply together), and returns an Envelope whose error is
    ``ErrorInfo(type="PlanPaused", retryable=True)``; ``resume=True`` runs that step again.
    """

    def __init__(self, message: str = "") -> None:
        super().__init__(message)
        self.message = message


def error_text(exc: BaseException) -> str:
    """An exception's message as a user should read it (a KeyError's without its quotes)."""
    if isinstance(exc, KeyError) and len(exc.args) == 1 and isinstance(exc.args[0], str):
        return exc.args[0]
    return str(exc) or type(exc).__name__
