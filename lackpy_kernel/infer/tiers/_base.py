"""The one base of the deterministic tiers: a name, availability, and no answer on a retry."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar


class DeterministicProvider:
    """A tier that answers from fixed text (templates, rules, recordings).

    A subclass sets ``kind`` (a ``KIND_*`` value) and implements ``answer``; it overrides
    ``unavailable_reason`` when it needs a file or folder that may be missing.
    """

    kind: ClassVar[str]

    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def name(self) -> str:
        """The tier's configured name."""
        return self._name

    def available(self) -> bool:
        """Whether the tier can answer now; makes no request."""
        return self.unavailable_reason() is None

    def unavailable_reason(self) -> str | None:
        """Why the tier cannot answer now, or None."""
        return None

    async def generate(
        self,
        intent: str,
        namespace_desc: str,
        config: dict[str, Any] | None = None,
        error_feedback: list[str] | None = None,
    ) -> str | None:
        """``answer``'s program; None on a retry (``error_feedback``): fixed text cannot do better."""
        if error_feedback:
            return None
        return self.answer(intent, namespace_desc, config or {})

    def answer(self, intent: str, namespace_desc: str, config: Mapping[str, Any]) -> str | None:
        """The program for ``intent``, or None when the tier has none."""
        raise NotImplementedError
