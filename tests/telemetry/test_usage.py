"""The usage record: every model call's tokens from each vendor's own wire format, its cost
when priced, what the ratchet saved, and a record that two processes share or that is broken."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
from pathlib import Path

import pytest

from lackpy_kernel.errors import TelemetryError, UsageError
from lackpy_kernel.service import LackpyService
from lackpy_kernel.telemetry import (
    USAGE_FILE,
    ModelCall,
    _store,
    parse_since,
    record_answer,
    tallying,
    usage_report,
)
from tests.support import loopback as lb

PROGRAM = "content = read_file('notes.txt')\ncontent"
MODEL_INTENT = "show me my notes please"
# What the loopback servers count: Ollama 5 in, 3 out; OpenAI and Anthropic 10 in, 5 out.
COUNTS = {"ollama": (5, 3), "openai": (10, 5), "anthropic": (10, 5)}


@pytest.fixture(autouse=True)
def _env(model_env):
    """No proxy or base-URL variables; a fake Anthropic key."""


def workspace(tmp_path: Path, server: lb.LoopbackServer, protocol: str, *, stream: bool = True,
              prices: str = "price_in = 2.0\nprice_out = 10.0\n") -> Path:
    """A workspace whose tiers are templates, rules, then the model ``loop`` on ``server``."""
    where = {"ollama": f'host = "{server.url}"', "openai": f'base_url = "{server.url}/v1"',
             "anthropic": f'base_url = "{server.url}"'}[protocol]
    (tmp_path / "notes.txt").write_text("a\nb\n")
    (tmp_path / ".lackpy").mkdir()
    (tmp_path / ".lackpy" / "config.toml").write_text(
        '[inference]\norder = ["templates", "rules", "loop"]\n\n'
        f'[inference.providers.loop]\nplugin = "{protocol}"\n{where}\nmodel = "tiny"\n'
        f"stream = {json.dumps(stream)}\nretry_delay = 0.001\n{prices}\n"
        "[sandbox]\nenabled = false\n")
    return tmp_path


def answer(protocol: str) -> lb.Step:
    return {"ollama": lb.ollama_answer, "openai": lb.openai_answer,
            "anthropic": lb.anthropic_answer}[protocol](PROGRAM)


@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
@pytest.mark.parametrize("protocol", ["ollama", "openai", "anthropic"])
async def test_a_model_call_records_the_servers_token_counts_and_their_cost(
        tmp_path, model_server, protocol, stream):
    folder = workspace(tmp_path, model_server.script(answer(protocol)), protocol, stream=stream)
    with LackpyService(folder) as service, tallying() as tally:
        generated = await service.generate(MODEL_INTENT, ["read_file"])
    assert generated.provider_name == "loop"
    tokens_in, tokens_out = COUNTS[protocol]
    cost = (tokens_in * 2.0 + tokens_out * 10.0) / 1_000_000
    report = usage_report(folder / ".lackpy" / USAGE_FILE)
    assert [(line.key, line.calls, line.input_tokens, line.output_tokens) for line in report.by_provider] == [
        (protocol, 1, tokens_in, tokens_out)]
    assert [line.key for line in report.by_tier] == ["loop"]
    assert report.total.cost == pytest.approx(cost)
    assert (tally.calls, tally.input_tokens, tally.output_tokens) == (1, tokens_in, tokens_out)
    assert tally.summary() == f"1 model call, {tokens_in} tokens in, {tokens_out} out, ${cost:.4f}"


async def test_an_unpriced_provider_records_tokens_without_a_cost(tmp_path, model_server):
    folder = workspace(tmp_path, model_server.script(answer("ollama")), "ollama", prices="")
    with LackpyService(folder) as service:
        await service.generate(MODEL_INTENT, ["read_file"])
    report = usage_report(folder / ".lackpy" / USAGE_FILE)
    assert (report.total.input_tokens, report.total.cost) == (5, None)
    assert "$" not in report.text()


async def test_a_failed_model_call_is_recorded_as_failed(tmp_path, model_server):
    model_server.script(lb.ollama_error(400, "bad request"))
    folder = workspace(tmp_path, model_server, "ollama")
    with LackpyService(folder) as service:
        with pytest.raises(Exception, match="no provider could write"):
            await service.generate(MODEL_INTENT, ["read_file"])
    report = usage_report(folder / ".lackpy" / USAGE_FILE)
    assert (report.total.calls, report.total.failed) == (1, 1)
    assert "1 call (1 failed)" in report.text()


async def test_usage_after_a_template_a_rule_and_a_model_shows_one_call_and_two_saved(
        tmp_path, model_server):
    folder = workspace(tmp_path, model_server.script(answer("openai")), "openai")
    templates = folder / ".lackpy" / "templates"
    templates.mkdir()
    (templates / "notes.tmpl").write_text(f"---\nname: notes\npattern: the notes\n---\n{PROGRAM}\n")
    with LackpyService(folder) as service:
        tiers = [(await service.delegate(intent, ["read_file"]))["generation_tier"]
                 for intent in ("the notes", "read file notes.txt", MODEL_INTENT)]
    assert tiers == ["templates", "rules", "loop"]
    report = usage_report(folder / ".lackpy" / USAGE_FILE)
    assert (report.total.calls, report.total.input_tokens, report.total.output_tokens) == (1, 10, 5)
    assert report.saved == {"rules": 1, "template": 1}
    assert report.saved_calls == 2
    assert "the ratchet saved 2 model calls (rules 1, template 1), about 30 tokens" in report.text()
    assert "$0.0001" in report.text()


def test_a_price_that_is_not_a_number_makes_the_provider_unavailable_saying_why(tmp_path, model_server):
    folder = workspace(tmp_path, model_server, "ollama", prices='price_in = "cheap"\n')
    with LackpyService(folder) as service:
        listed = {entry["name"]: entry for entry in service.providers_list()}
    assert "price_in must be a number of at least 0" in json.dumps(listed["loop"])


async def test_a_corrupt_usage_file_does_not_fail_a_delegate_and_reading_it_says_what_to_do(
        tmp_path, model_server, caplog):
    folder = workspace(tmp_path, model_server.script(answer("ollama")), "ollama")
    record = folder / ".lackpy" / USAGE_FILE
    record.write_bytes(b"this is not a database, it is " * 100)
    with LackpyService(folder) as service:
        result = await service.delegate(MODEL_INTENT, ["read_file"])
    assert result["success"], result["error"]
    assert "cannot be used as the usage record" in caplog.text
    with pytest.raises(TelemetryError, match="move it aside and lackpy starts a new one"):
        usage_report(record)


def test_the_record_keeps_only_the_last_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(_store, "MAX_ROWS", 5)
    record = tmp_path / USAGE_FILE
    for number in range(8):
        _store.record_call(record, ModelCall("ollama", f"tier{number}", "m", 1, 1, None, 1.0, True))
    assert [line.key for line in usage_report(record).by_tier] == [f"tier{n}" for n in range(3, 8)]


WRITER = """
import sys
from pathlib import Path
from lackpy_kernel.telemetry import ModelCall, record_answer
from lackpy_kernel.telemetry._store import record_call
for n in range(int(sys.argv[2])):
    record_call(Path(sys.argv[1]), ModelCall("openai", sys.argv[3], "m", 2, 1, 0.5, 1.0, True))
    record_answer(Path(sys.argv[1]), kind="rules", tier="rules")
"""


def test_two_processes_can_write_the_record_at_once(tmp_path):
    record = tmp_path / USAGE_FILE
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(record), "150", tier])
               for tier in ("a", "b")]
    assert [writer.wait(timeout=120) for writer in writers] == [0, 0]
    report = usage_report(record)
    assert [(line.key, line.calls) for line in report.by_tier] == [("a", 150), ("b", 150)]
    assert report.total.cost == pytest.approx(150.0)
    assert report.saved == {"rules": 300}


def test_since_keeps_the_days_from_that_day_on(tmp_path):
    record = tmp_path / USAGE_FILE
    record_answer(record, kind="template", tier="templates")
    today = datetime.datetime.now(datetime.UTC).date()
    assert usage_report(record, today).saved == {"template": 1}
    assert usage_report(record, today + datetime.timedelta(days=1)).saved == {}
    assert parse_since("7d", today) == today - datetime.timedelta(days=7)
    assert parse_since("2026-11-20") == datetime.date(2026, 11, 20)
    with pytest.raises(UsageError, match=r"--since takes a day \(2026-11-20\) or a number of days"):
        parse_since("last week")


def test_no_record_reads_as_nothing_recorded(tmp_path):
    assert usage_report(tmp_path / USAGE_FILE).text() == (
        "no model calls and no ratchet answers recorded")
