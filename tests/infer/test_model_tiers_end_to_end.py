"""Model tiers through the whole service: config, dispatcher, correction, real clients, loopback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lackpy_kernel.service import LackpyService
from tests.support import loopback as lb

BROKEN = "while True:\n    x = 1"
FIXED = "lines = read_file('notes.txt').splitlines()\nlen(lines)"
INTENT = "how many lines are in my notes"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for var in ("OLLAMA_HOST", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy",
                "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key-0123456789")


def workspace_with(tmp_path, providers: str, order: list[str]) -> Path:
    (tmp_path / "notes.txt").write_text("a\nb\nc\n")
    (tmp_path / ".lackpy").mkdir()
    (tmp_path / ".lackpy" / "config.toml").write_text(
        f"[inference]\norder = {json.dumps(order)}\nrecord = true\n\n{providers}"
        "\n[sandbox]\nenabled = false\n"
    )
    return tmp_path


def ollama_table(url: str) -> str:
    return (f'[inference.providers.local]\nplugin = "ollama"\nhost = "{url}"\n'
            'model = "tiny"\ntemperature = 0.0\nretry_delay = 0.01\nrequest_timeout = 5\n')


def anthropic_table(url: str) -> str:
    return (f'[inference.providers.cloud]\nplugin = "anthropic"\nbase_url = "{url}"\n'
            'retry_delay = 0.01\nrequest_timeout = 5\n')


async def test_ollama_first_answer_fails_validation_and_is_corrected(tmp_path):
    with lb.LoopbackServer() as server:
        server.script(lb.ollama_answer(BROKEN), lb.ollama_answer(FIXED))
        workspace = workspace_with(tmp_path, ollama_table(server.url), ["local"])
        with LackpyService(workspace) as service:
            result = await service.delegate(INTENT, kit="read_file")
        assert result["success"], result["error"]
        assert result["generation_tier"] == "local"
        assert result["correction_strategy"] == "retry"
        assert result["output"] == 3
        retry_messages = json.dumps(server.requests[1].json["messages"])
        assert "While is not allowed" in retry_messages
        assert server.requests[0].json["options"]["temperature"] == 0.0


async def test_anthropic_after_a_429_then_replay_without_the_server(tmp_path):
    with lb.LoopbackServer() as server:
        server.script(lb.anthropic_error(429, "rate_limit_error", "slow down", {"retry-after": "0"}),
                      lb.anthropic_answer(FIXED))
        workspace = workspace_with(tmp_path, anthropic_table(server.url), ["cloud"])
        with LackpyService(workspace) as service:
            result = await service.delegate(INTENT, kit="read_file")
        assert result["generation_tier"] == "cloud" and result["output"] == 3
        assert len(server.requests) == 2
    # the recording lets the same intent replay with no server and no key
    config = workspace / ".lackpy" / "config.toml"
    config.write_text('[inference]\norder = ["replay"]\n')
    with LackpyService(workspace) as service:
        replayed = await service.delegate(INTENT, kit="read_file")
    assert replayed["generation_tier"] == "replay"
    assert replayed["program"] == FIXED


async def test_unreachable_model_falls_through_to_the_next_tier(tmp_path):
    with lb.LoopbackServer() as server:
        server.script(lb.anthropic_answer(FIXED))
        tables = ollama_table(lb.closed_port_url()) + "max_retries = 1\n" + anthropic_table(server.url)
        workspace = workspace_with(tmp_path, tables, ["local", "cloud"])
        with LackpyService(workspace) as service:
            result = await service.delegate(INTENT, kit="read_file")
            providers = {p["name"]: p["available"] for p in service.providers_list()}
        assert result["generation_tier"] == "cloud"
        assert providers == {"templates": False, "rules": True, "local": True, "cloud": True}


async def test_every_tier_failing_names_each_and_hides_the_key(tmp_path):
    with lb.LoopbackServer() as server:
        server.script(*[lb.echo_api_key(401)] * 3)
        tables = ollama_table(lb.closed_port_url()) + "max_retries = 0\n" + anthropic_table(server.url)
        workspace = workspace_with(tmp_path, tables, ["local", "cloud"])
        with LackpyService(workspace) as service:
            with pytest.raises(RuntimeError) as caught:
                await service.delegate(INTENT, kit="read_file")
    message = str(caught.value)
    assert "local:" in message and "cloud:" in message and "rules:" in message
    assert "sk-ant-test-key-0123456789" not in message
