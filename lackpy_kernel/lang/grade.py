"""Security grades: how far a kit reaches into the world."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_GRADE_W = 3
DEFAULT_EFFECTS_CEILING = 3


@dataclass(frozen=True)
class Grade:
    """World coupling ``w`` (0 pure, 1 read, 2 scoped exec, 3 scoped write) and effects ceiling ``d``."""

    w: int
    d: int


def compute_grade(tools: Mapping[str, Mapping[str, Any]]) -> Grade:
    """The maximum ``grade_w`` and ``effects_ceiling`` over ``tools`` (3 where a tool omits one)."""
    if not tools:
        return Grade(0, 0)
    return Grade(
        w=max(spec.get("grade_w", DEFAULT_GRADE_W) for spec in tools.values()),
        d=max(spec.get("effects_ceiling", DEFAULT_EFFECTS_CEILING) for spec in tools.values()),
    )
