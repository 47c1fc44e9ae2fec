"""Run a call that must not hang, and fail the test (instead of hanging it) when it does.

For attacks whose symptom is a caller that never answers (a regular expression that
backtracks for hours, a FIFO that blocks ``open``): the bound is generous, far above
what the call needs on a loaded machine, and far below what the attack would cost.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest


def finishes_within(seconds: float, call: Callable[..., Any], *args: Any) -> Any:
    """``call(*args)``'s result (awaited when it is a coroutine), run in a daemon thread;
    the test fails when it has not finished after ``seconds``."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            result = call(*args)
            if asyncio.iscoroutine(result):
                result = asyncio.run(result)
            outcome["result"] = result
        except BaseException as exc:  # handed to the test's thread below
            outcome["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        pytest.fail(f"{getattr(call, '__name__', call)} did not finish within {seconds} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]
