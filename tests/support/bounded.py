"""Run a call that must not hang, and fail the test (instead of hanging it) when it does.

For attacks whose symptom is a caller that never answers (a regular expression that
backtracks for hours, a FIFO that blocks ``open``): the bound is generous, far above
what the call needs on a loaded machine, and far below what the attack would cost.

``finishes_within`` runs the call in a thread of the test's process: enough for calls
that block in the operating system, which releases the GIL. A C-level loop that holds
the GIL (``re`` backtracking) would stall the whole process, so ``python_within`` runs
its code in a child interpreter, killed at the bound.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

_ROOT = Path(__file__).resolve().parents[2]


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


def python_within(seconds: float, code: str, *args: Any) -> Any:
    """Run ``code`` in a fresh interpreter, with ``ARGS`` bound to ``args`` (JSON), and return
    what it assigns to ``RESULT`` (JSON); the test fails when it runs longer than ``seconds``."""
    program = (f"import json, sys\nARGS = json.loads(sys.argv[1])\n{textwrap.dedent(code)}\n"
               "print(json.dumps(RESULT))\n")
    try:
        done = subprocess.run([sys.executable, "-c", program, json.dumps(args)], cwd=_ROOT,
                              capture_output=True, text=True, timeout=seconds)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the code did not finish within {seconds} s")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])
