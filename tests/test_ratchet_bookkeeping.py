"""The ratchet's intent log, written behind the caller: remembering an intent opens no file,
``intent_for`` finds every intent whether written yet or not, the log keeps the last
``INTENT_LOG_LIMIT`` in order, a clean exit loses none, and a log that cannot be written
is said once and fails nobody."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lackpy_kernel.infer import KIND_TEMPLATE, GenerationResult
from lackpy_kernel.ratchet import INTENT_LOG_LIMIT, Ratchet
from lackpy_kernel.telemetry import USAGE_FILE, flush_writes, usage_report
from tests.support.audit import recorded_events

TOOLS = ["read_file"]


def program(number: int) -> str:
    return f"content = read_file('notes{number}.txt')\ncontent"


def from_rules(number: int) -> GenerationResult:
    return GenerationResult(program(number), "rules", 0.1, kind="rules")


def logged(ratchet: Ratchet) -> list[str]:
    return [json.loads(line)["intent"] for line in ratchet.intent_log.read_text().splitlines()]


@pytest.fixture
def ratchet(tmp_path):
    return Ratchet(tmp_path / ".lackpy")


def test_remembering_an_intent_opens_no_file_in_the_callers_thread(ratchet):
    with recorded_events("open", "sqlite3.connect") as events:
        ratchet.generated("read notes 1", from_rules(1), TOOLS)
        ratchet.generated("read notes 2", GenerationResult(program(2), "templates", 0.1,
                                                           kind=KIND_TEMPLATE), TOOLS)
    assert events == []
    ratchet.flush()
    assert logged(ratchet) == ["read notes 1", "read notes 2"]
    assert usage_report(ratchet.config_dir / USAGE_FILE).saved == {"rules": 1, "template": 1}


def test_intent_for_finds_each_intent_at_once_written_or_not(ratchet):
    for number in range(300):
        ratchet.generated(f"read notes {number}", from_rules(number), TOOLS)
        assert ratchet.intent_for(program(number)) == f"read notes {number}"
    assert ratchet.intent_for(program(299).replace("'", '"')) == "read notes 299"  # same syntax
    ratchet.flush()
    assert ratchet.intent_for(program(5)) is None  # older than the last INTENT_LOG_LIMIT


def test_the_log_keeps_the_last_intents_in_order_across_writes(ratchet):
    for number in range(150):
        ratchet.generated(f"intent {number}", from_rules(number), TOOLS)
    ratchet.flush()
    for number in range(150, 260):
        ratchet.generated(f"intent {number}", from_rules(number), TOOLS)
    ratchet.flush()
    assert logged(ratchet) == [f"intent {number}" for number in range(260 - INTENT_LOG_LIMIT, 260)]


def test_a_log_that_cannot_be_written_is_said_once_and_fails_nobody(tmp_path, caplog):
    (tmp_path / "file").write_text("not a folder")
    ratchet = Ratchet(tmp_path / "file" / ".lackpy")
    for number in range(3):
        ratchet.generated(f"intent {number}", from_rules(number), TOOLS)
        flush_writes()
    said = [entry.getMessage() for entry in caplog.records
            if "could not save the intent log" in entry.getMessage()]
    assert len(said) == 1 and str(ratchet.intent_log) in said[0]


REMEMBERS = """
import sys
from pathlib import Path
from lackpy_kernel.infer import GenerationResult
from lackpy_kernel.ratchet import Ratchet
ratchet = Ratchet(Path(sys.argv[1]))
for number in range(5):
    ratchet.generated(f"intent {number}", GenerationResult(f"x = {number}", "rules", 0.1, kind="rules"), [])
"""


def test_a_clean_exit_writes_every_intent(tmp_path):
    config_dir = tmp_path / ".lackpy"
    subprocess.run([sys.executable, "-c", REMEMBERS, str(config_dir)], check=True, timeout=120)
    assert logged(Ratchet(config_dir)) == [f"intent {number}" for number in range(5)]
    assert Ratchet(config_dir).intent_for("x = 4") == "intent 4"
