"""Template patterns are not a ReDoS: matching is linear in the intent, whatever the pattern.

The attack (security round 2, item 4): each ``{name}`` was a lazy ``.+?``, so a pattern
with six placeholders against an 80-word intent that does not match backtracked for
91 s on the kernel's event loop; the MCP ``create`` tool let a client plant such a
template and hang the server with one ``delegate``. Each hostile call runs in a child
interpreter killed at a generous bound (backtracking in ``re`` holds the GIL, so a
thread could not be timed out); the linear matcher answers in milliseconds.
"""

from __future__ import annotations

import pytest

from tests.support.bounded import python_within

BOUND_S = 60


def words(count: int, prefix: str = "w") -> str:
    return " ".join(f"{prefix}{index}" for index in range(count))


def placeholders(count: int, separator: str = " ") -> str:
    return separator.join(f"{{p{index}}}" for index in range(count))


# Holds every literal word of the patterns below, so no cheap pre-check can skip the match.
HOSTILE = words(5_000) + " done " + words(5_000)
TEN_AS = {name: "a" for name in "abcdefghi"} | {"j": " ".join(["a"] * 9_991)}

MATCH = """
from lackpy_kernel.infer.tiers import compile_pattern
pattern, intent = ARGS
RESULT = compile_pattern(pattern).match(intent)
"""


@pytest.mark.parametrize(
    ("pattern", "intent", "expected"),
    [
        # the reproduction: six placeholders, 80 words, no match
        (placeholders(6) + " done", words(40) + " done " + words(40), None),
        # ten placeholders against ten thousand words
        (placeholders(10) + " done", HOSTILE, None),
        (placeholders(10, " and ") + " done", words(10_000, "and "), None),
        ("start " + placeholders(10, "") + " end", "start " + "x" * 100_000, None),
        ("find " + placeholders(10, " in ") + " in", "find " + " in ".join(["x"] * 10_000) + " out", None),
        ("{a} {b} {c} {d} {e} {f} {g} {h} {i} {j}", " ".join(["a"] * 10_000) + " " * 10_000, TEN_AS),
    ],
)
def test_matching_a_hostile_intent_answers_at_once(pattern, intent, expected):
    assert python_within(BOUND_S, MATCH, pattern, intent) == expected


def test_ten_thousand_words_and_ten_placeholders_that_match():
    intent = " then ".join(words(1_000, f"s{index}_") for index in range(10)) + " done"
    found = python_within(BOUND_S, MATCH, placeholders(10, " then ") + " done", intent)
    assert [found[f"p{index}"] for index in range(10)] == [words(1_000, f"s{i}_") for i in range(10)]


def test_a_template_folder_full_of_hostile_patterns_answers_at_once(tmp_path):
    code = """
    import asyncio
    from pathlib import Path
    from lackpy_kernel.infer.tiers import TemplatesProvider, format_template
    folder, pattern, intent = Path(ARGS[0]), ARGS[1], ARGS[2]
    folder.mkdir()
    for index in range(50):
        (folder / f"t{index:02d}.tmpl").write_text(format_template(f"t{index:02d}", pattern, "'x'"))
    RESULT = asyncio.run(TemplatesProvider(folder).generate(intent, ""))
    """
    assert python_within(BOUND_S, code, str(tmp_path / "t"), placeholders(10) + " done", HOSTILE) is None


PLANT_THEN = """
import asyncio
from lackpy_kernel.errors import GenerationError
from lackpy_kernel.service import LackpyService

async def main(workspace, pattern, hostile, matching, method):
    with LackpyService(workspace) as service:
        made = await service.create("'planted'", ["read_file"], "planted", pattern=pattern)
        assert made["success"], made
        try:
            await getattr(service, method)(hostile, ["read_file"])
            refused = None
        except GenerationError as exc:
            refused = str(exc)
        # the service still answers, from the planted template when the intent matches it
        outcome = await service.delegate(matching, ["read_file"])
        return [refused, outcome["generation_tier"], outcome["output"]]

RESULT = asyncio.run(main(*ARGS))
"""


@pytest.mark.parametrize("method", ["generate", "delegate"])
def test_a_planted_template_cannot_hang_the_service(tmp_path, method):
    refused, tier, output = python_within(BOUND_S, PLANT_THEN, str(tmp_path), placeholders(10) + " done",
                                          HOSTILE, words(20) + " done", method)
    assert "no program for this intent" in refused
    assert (tier, output) == ("templates", "planted")
