"""A long validation runs on the kernel's own thread; the stop button still stops it."""

from __future__ import annotations

import time

NESTED = "a = " + "[" * 150 + "]" * 150 + "\n"
# About 1 MB, which takes seconds to validate, and invalid at its end: if validation ran to
# the end the reply would be a LackpyValidationError, not an interrupt.
SLOW_TO_VALIDATE = NESTED * (990_000 // len(NESTED)) + "import os\n"


def test_interrupting_a_long_validation_stops_it_and_keeps_the_session(kernel):
    kernel.execute("kept = 'still here'")
    # Interrupt once the kernel is at the cell (a busy machine can take longer than a fixed
    # wait just to receive 1 MB), and early in its seconds of validation.
    msg_id = kernel.start(SLOW_TO_VALIDATE)
    time.sleep(0.2)
    kernel.manager.interrupt_kernel()
    outcome = kernel.wait(msg_id, timeout=120)
    assert outcome.reply["content"]["ename"] == "KeyboardInterrupt", outcome.reply["content"]
    assert kernel.execute("kept").result() == "still here"
    assert kernel.execute("a").status == "error"  # nothing of the stopped cell was kept
