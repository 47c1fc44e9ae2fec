"""The deterministic tiers on their one base: each answers from fixed text, never on a retry."""

import pytest

from lackpy_kernel.infer import (
    KIND_REPLAY,
    KIND_RULES,
    KIND_TEMPLATE,
    InferenceProvider,
    ReplayProvider,
    RulesProvider,
    TemplatesProvider,
    record_generation,
)
from lackpy_kernel.infer.tiers import format_template

NAMESPACE = "read_file(path: str) -> str: read a text file"
CONFIG = {"tool_names": ["read_file"]}
INTENT = "read the file notes.txt"
PROGRAM = "content = read_file('notes.txt')\ncontent"


def templates(tmp_path):
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "read.tmpl").write_text(
        format_template("read", "read the file {path}", "content = read_file('{path}')\ncontent"))
    return TemplatesProvider(folder, name="saved")


def rules(tmp_path):
    return RulesProvider(name="saved")


def replay(tmp_path):
    path = tmp_path / "replay.jsonl"
    record_generation(path, INTENT, ["read_file"], PROGRAM, "ollama")
    return ReplayProvider(path, name="saved")


@pytest.fixture(params=[(templates, KIND_TEMPLATE), (rules, KIND_RULES), (replay, KIND_REPLAY)],
                ids=["templates", "rules", "replay"])
def tier(request, tmp_path):
    make, kind = request.param
    provider = make(tmp_path)
    assert provider.kind == kind
    return provider


async def test_a_deterministic_tier_answers_from_fixed_text_and_passes_on_a_retry(tier):
    """Seed 001: return None on the retry when the provider cannot take the feedback."""
    assert isinstance(tier, InferenceProvider) and tier.name == "saved"
    assert tier.available() and tier.unavailable_reason() is None
    assert await tier.generate(INTENT, NAMESPACE, CONFIG) == PROGRAM
    assert await tier.generate(INTENT, NAMESPACE, CONFIG, error_feedback=["bad"]) is None
    assert await tier.generate("something else entirely", NAMESPACE, CONFIG) is None


def test_a_tier_that_needs_a_file_says_why_it_is_unavailable(tmp_path):
    missing = [TemplatesProvider(tmp_path / "none"), ReplayProvider(tmp_path / "none.jsonl")]
    assert [(p.available(), bool(p.unavailable_reason())) for p in missing] == [(False, True)] * 2
    assert RulesProvider().available()
