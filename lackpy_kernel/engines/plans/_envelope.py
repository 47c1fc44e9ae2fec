"""What a plan run returns: an Envelope of its payload, error, tool calls and step results."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from lackpy_kernel.errors import (
    LackpyError,
    PlanStepError,
    ProgramInterrupted,
    ProviderError,
    SandboxError,
    error_text,
)
from lackpy_kernel.run import TraceEntry

__all__ = ["Envelope", "ErrorInfo", "StepResult", "error_info"]

# Failures that may pass if the same step runs again.
_RETRYABLE: tuple[type[BaseException], ...] = (
    ProviderError, SandboxError, ProgramInterrupted, TimeoutError, ConnectionError,
)


@dataclass(frozen=True)
class ErrorInfo:
    """Why a run did not finish: the error's type name, its message, and whether running
    again may succeed (a pause, a timeout, a provider that was down)."""

    type: str
    message: str
    retryable: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ErrorInfo:
        """Rebuild from ``to_dict``'s output."""
        return cls(str(data["type"]), str(data["message"]), bool(data.get("retryable", False)))


def error_info(exc: BaseException) -> ErrorInfo:
    """The ErrorInfo for an exception a step raised."""
    retryable = isinstance(exc, _RETRYABLE)
    message = error_text(exc) if isinstance(exc, (LackpyError, KeyError)) else str(exc)
    return ErrorInfo(type(exc).__name__, message or type(exc).__name__, retryable)


@dataclass
class StepResult:
    """One step's run: its name, output, the lackpy program it ran (None for a Python
    callable), how long it took, its tool calls, and its error when it failed."""

    name: str
    output: Any = None
    program: str | None = None
    ms: float = 0.0
    trace: list[TraceEntry] = field(default_factory=list)
    error: ErrorInfo | None = None

    @property
    def ok(self) -> bool:
        """Whether the step succeeded."""
        return self.error is None

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form (the output as it is)."""
        return {"name": self.name, "output": self.output, "program": self.program,
                "ms": self.ms, "trace": [asdict(entry) for entry in self.trace],
                "error": self.error.to_dict() if self.error else None}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> StepResult:
        """Rebuild from ``to_dict``'s output."""
        error = data.get("error")
        return cls(
            name=str(data["name"]), output=data.get("output"), program=data.get("program"),
            ms=float(data.get("ms", 0.0)),
            trace=[TraceEntry(**entry) for entry in data.get("trace", [])],
            error=ErrorInfo.from_dict(error) if error else None,
        )


@dataclass
class Envelope:
    """A run's result: ``payload`` (the last step's output), ``error`` (an ErrorInfo, or None
    when it finished), ``trace`` (every tool call of the run, in order), ``history`` (each
    completed step's StepResult, in the order they ran; an agent's model turns, a replan's
    rounds) and ``metadata`` (an agent's model, provider, turns, tokens and time)."""

    payload: Any = None
    error: ErrorInfo | None = None
    trace: list[TraceEntry] = field(default_factory=list)
    history: list[StepResult] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """Whether the run finished without an error."""
        return self.error is None

    def raise_for_error(self) -> Envelope:
        """This envelope when the run finished; otherwise raise PlanStepError, carrying the
        ErrorInfo as ``error`` and this envelope as ``envelope``."""
        if self.error is None:
            return self
        raise PlanStepError(f"{self.error.type}: {self.error.message}", error=self.error,
                            envelope=self)

    @classmethod
    def from_steps(cls, history: list[StepResult], error: ErrorInfo | None = None,
                   failed: list[StepResult] | None = None) -> Envelope:
        """The envelope of a run whose completed steps are ``history``; ``failed`` are the
        results of the steps that failed last (their tool calls join the trace)."""
        payload = history[-1].output if history else None
        calls = [entry for result in [*history, *(failed or [])] for entry in result.trace]
        trace = [replace(entry, step=index) for index, entry in enumerate(calls)]
        return cls(payload, error, trace, list(history))

    def to_dict(self) -> dict[str, Any]:
        """Plain-data form: the wire format for the CLI's ``--json`` and remote runners."""
        return {"payload": self.payload,
                "error": self.error.to_dict() if self.error else None,
                "trace": [asdict(entry) for entry in self.trace],
                "history": [result.to_dict() for result in self.history],
                "metadata": dict(self.metadata)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Envelope:
        """Rebuild from ``to_dict``'s output."""
        error = data.get("error")
        return cls(
            payload=data.get("payload"),
            error=ErrorInfo.from_dict(error) if error else None,
            trace=[TraceEntry(**entry) for entry in data.get("trace", [])],
            history=[StepResult.from_dict(item) for item in data.get("history", [])],
            metadata=dict(data.get("metadata") or {}),
        )
