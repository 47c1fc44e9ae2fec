"""The progress card (``PROGRESS_MIME``) a hostile provider or model could fill: a failing
tier's reason and a correction step's account stay as short as in the text, and every field
is plain text (the Lab extension sets text, never markup: tests/browser/test_lab_progress.py
renders a hostile card)."""

from __future__ import annotations

import json

from lackpy_kernel.infer import CorrectionStep, ProviderFailed, ProviderTried, ProviderUnavailable
from lackpy_kernel.notebook.bundles import PROGRESS_MIME, PROGRESS_REASON, GenerationProgress

HOSTILE = "<script>alert(1)</script>" + "x" * 1_000_000


def test_a_hostile_tiers_reasons_are_cut_to_the_same_length_as_the_text_shows():
    progress = GenerationProgress("delegating: x ...")
    for event in (ProviderUnavailable("a", HOSTILE), ProviderTried("b", "model"),
                  CorrectionStep("b", "cleanup", HOSTILE, False), ProviderFailed("b", HOSTILE)):
        bundle = progress.add(event)
    card = bundle[PROGRESS_MIME]
    assert all(len(item["detail"]) <= PROGRESS_REASON for item in card["items"])
    assert len(json.dumps(card)) < 4 * PROGRESS_REASON + 1000
    assert card["items"][0]["detail"].startswith("<script>")  # as text: the renderer escapes
