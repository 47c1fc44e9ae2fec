"""Progress events of one generation, in the order they happen.

Pass ``on_event`` to :meth:`InferenceDispatcher.generate` to receive them:

- :class:`ProviderTried`: a provider is asked (``kind``: ``template``, ``rules``,
  ``replay`` or ``model``);
- :class:`ProviderUnavailable`: a provider was skipped, and why;
- :class:`ProgramStreaming`: a model tier's answer so far, after each streamed piece
  (``step`` says which call: ``generate``, ``retry`` or ``fixer``);
- :class:`CorrectionStep`: a step of the correction chain finished (``did`` says
  what it did, ``valid`` whether it produced a valid program);
- :class:`ProviderFailed`: a provider gave no valid program, and why.

The callback runs in the dispatcher's task; it should be quick. An error it
raises ends the generation and is raised from ``generate`` (a bug in a display
is a bug, not a provider failure).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class GenerationEvent:
    """One step of a generation; ``provider`` is the tier's configured name."""

    event: ClassVar[str] = "event"
    provider: str

    def to_dict(self) -> dict[str, Any]:
        """The event as a JSON-able dict with its ``event`` name."""
        return {"event": self.event, **asdict(self)}


@dataclass(frozen=True)
class ProviderTried(GenerationEvent):
    """The dispatcher asks ``provider`` for a program."""

    event: ClassVar[str] = "provider_tried"
    kind: str


@dataclass(frozen=True)
class ProviderUnavailable(GenerationEvent):
    """``provider`` was skipped: it is not available, for ``reason``."""

    event: ClassVar[str] = "provider_unavailable"
    reason: str


@dataclass(frozen=True)
class ProviderFailed(GenerationEvent):
    """``provider`` gave no valid program, for ``reason``; the next one is tried."""

    event: ClassVar[str] = "provider_failed"
    reason: str


@dataclass(frozen=True)
class CorrectionStep(GenerationEvent):
    """A correction step (``cleanup``, ``retry`` or ``fixer``) finished: what it ``did``."""

    event: ClassVar[str] = "correction_step"
    step: str
    did: str
    valid: bool


@dataclass(frozen=True)
class ProgramStreaming(GenerationEvent):
    """A model's answer so far (``text``) during the ``step`` call."""

    event: ClassVar[str] = "program_streaming"
    step: str
    text: str
