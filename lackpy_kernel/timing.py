"""Durations as every layer reports them: milliseconds since a ``time.perf_counter()`` reading."""

from __future__ import annotations

import time


def ms_since(started: float) -> float:
    """The milliseconds since ``started`` (a ``time.perf_counter()`` value), to the microsecond."""
    return round((time.perf_counter() - started) * 1000, 3)
