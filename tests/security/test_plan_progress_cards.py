"""Hostile text in the progress cards of ``%plan run-many`` and of a plan run on Temporal
(``PROGRESS_MIME`` beside text and HTML): a task, an output or an error full of markup and
control characters, a megabyte long, is escaped in the HTML and cut to a few lines' length
in the card and the text, as the tables are. The Lab extension sets the card's fields as
text (tests/browser renders a hostile card); this is the kernel's side: what it sends."""

from __future__ import annotations

import json

import pytest

from lackpy_kernel.engines import Envelope, ErrorInfo
from lackpy_kernel.engines.temporal._runner import TemporalRun
from lackpy_kernel.notebook.bundles import PROGRESS_MIME, remote_run_bundle, tasks_bundle
from lackpy_kernel.notebook.plans import TaskLog

HOSTILE = "<img src=x onerror=alert(1)>\x1b[2J\u202e" + "x" * 1_000_000
BOUND = 20_000  # characters: a card of one row with every field a few lines long


def sizes(bundle: dict) -> list[int]:
    return [len(json.dumps(value)) for value in bundle.values()]


def test_a_run_many_card_escapes_and_bounds_hostile_tasks_outputs_and_errors():
    log = TaskLog([HOSTILE, {"task": HOSTILE}, "calm"])
    for index in range(3):
        log(index, None, None)
    log(0, Envelope(payload=HOSTILE), 1.0)
    log(1, Envelope(error=ErrorInfo("ProviderError", HOSTILE)), 2.0)
    bundle = tasks_bundle("run-many " + HOSTILE[:40], log.rows(), log.state())
    assert max(sizes(bundle)) < BOUND, sizes(bundle)
    assert "<img" not in bundle["text/html"]
    card = bundle[PROGRESS_MIME]
    assert [item["status"] for item in card["items"]] == ["done", "failed", "running"]
    assert card["items"][1]["detail"].startswith("ProviderError: <img")  # text, escaped there


HOSTILE_RUNS = {
    "failed": {"status": "failed", "error": {"type": "ProviderError", "message": HOSTILE}},
    "paused": {"status": "paused", "error": {"type": "PlanPaused", "message": HOSTILE}},
    "retrying": {"status": "running", "running": ["fetch"]},
}


@pytest.mark.parametrize("state", HOSTILE_RUNS)
def test_a_temporal_runs_card_bounds_a_hostile_error_retry_reason_and_worker(state):
    data = {"plan": "p", "steps": ["fetch"], "workers": {"fetch": HOSTILE},
            "attempts": {"fetch": 2}, **HOSTILE_RUNS[state]}
    run = TemporalRun.from_status("k", data, [{"step": "fetch", "attempt": 2, "why": HOSTILE}])
    bundle = remote_run_bundle("plan p on Temporal", run)
    assert "<img" not in bundle["text/html"]
    assert max(sizes(bundle)) < BOUND, sizes(bundle)
