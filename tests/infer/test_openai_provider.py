"""OpenAIProvider: the real ``openai.AsyncOpenAI`` against a loopback chat-completions server."""

from __future__ import annotations

import json
import logging
import sys
import traceback

import pytest

from lackpy_kernel.errors import ProviderError, ProviderTimeoutError, StreamStallError
from lackpy_kernel.infer.models import (
    FALLBACK_MAX_TOKENS,
    NO_KEY,
    GenerationSettings,
    OpenAIProvider,
    RetryPolicy,
)
from lackpy_kernel.infer.prompt import FIXER_INSTRUCTION, FRAMING, Example
from lackpy_kernel.service import LackpyService
from tests.support import loopback as lb

KEY = "sk-proj-LOOPBACKtestkey0123456789abcdef"
PROGRAM = "files = find_files('**/*.py')\nlen(files)"
TOOLS = "find_files(pattern: str) -> list[str]: paths matching a glob"
INTENT = "count the python files"


@pytest.fixture(autouse=True)
def env(monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ADMIN_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID",
                "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def server():
    with lb.LoopbackServer(default=lb.openai_answer(PROGRAM)) as running:
        yield running


def fast(**knobs) -> RetryPolicy:
    return RetryPolicy(**{"retry_delay": 0.001, "request_timeout": 5.0, "stream_idle_timeout": 5.0, **knobs})


def provider(server, **kwargs) -> OpenAIProvider:
    kwargs.setdefault("policy", fast())
    return OpenAIProvider(base_url=f"{server.url}/v1", **kwargs)


# --- chat, raw completion and streaming ------------------------------------------------------------

@pytest.mark.parametrize("stream", [True, False])
async def test_chat_sends_each_example_as_turns_and_the_program_slot_last(server, stream, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    openai = provider(server, model="local-model", temperature=0.0, stream=stream)
    pool = [Example("find the definition of load", "defs = find_definitions('load')\ndefs"),
            Example("count the python tests", "tests = find_files('tests/**/*.py')\nlen(tests)")]
    config = {"params_desc": "root: str", "max_tokens": 300, "example_pool": pool}
    assert await openai.generate(INTENT, TOOLS, config) == PROGRAM
    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert lb.api_key_of(request) == KEY
    body = request.json
    assert body["model"] == "local-model" and bool(body.get("stream")) is stream
    assert (body["temperature"], body["max_tokens"], body["stop"]) == (0.0, 300, ["\nIntent:", "\n```"])
    system, *examples, user = body["messages"]
    assert system["role"] == "system" and system["content"].startswith(FRAMING)
    assert TOOLS in system["content"] and "root: str" in system["content"]
    assert "Intent:" not in system["content"]  # the example that fits goes as a user and a model turn
    assert examples == [
        {"role": "user", "content": "Intent: count the python tests\nProgram:\n"},
        {"role": "assistant", "content": "```python\ntests = find_files('tests/**/*.py')\nlen(tests)\n```"}]
    assert user == {"role": "user", "content": f"Intent: {INTENT}\nProgram:\n"}


async def test_raw_completion_has_the_examples_in_its_text_before_the_program_slot(server):
    openai = provider(server, generation=GenerationSettings(raw=True))
    pool = [Example("count the python tests", "tests = find_files('tests/**/*.py')\nlen(tests)")]
    await openai.generate(INTENT, TOOLS, {"example_pool": pool})
    prompt = server.requests[0].json["prompt"]
    assert prompt.endswith("\n\nExamples:\n\nIntent: count the python tests\nProgram:\n"
                           f"tests = find_files('tests/**/*.py')\nlen(tests)\n\nIntent: {INTENT}\nProgram:\n")
    assert "```" not in prompt


@pytest.mark.parametrize("stream", [True, False])
async def test_raw_sends_one_completion_text_that_ends_at_the_program_slot(server, stream):
    server.default = lb.openai_answer("len(find_files('**/*.py'))")
    openai = provider(server, stream=stream, generation=GenerationSettings(raw=True, max_tokens=64))
    assert await openai.generate(INTENT, TOOLS) == "len(find_files('**/*.py'))"
    [request] = server.requests
    assert request.path == "/v1/completions"
    prompt = request.json["prompt"]
    assert prompt.startswith(FRAMING) and TOOLS in prompt
    assert prompt.endswith(f"\n\nIntent: {INTENT}\nProgram:\n")
    assert (request.json["max_tokens"], request.json["stop"]) == (64, ["\nIntent:", "\n```"])


async def test_the_answer_streams_to_on_text_piece_by_piece(server):
    seen: list[str] = []
    server.script(lb.openai_stream(["files = ", "find_files('**/*.py')\n", "len(files)"]))
    assert await provider(server).generate(INTENT, TOOLS, {"on_text": seen.append}) == PROGRAM
    assert seen == ["files = ", "files = find_files('**/*.py')\n", PROGRAM]


async def test_fix_is_a_fresh_fixer_conversation(server):
    answer = await provider(server).fix(INTENT, "files = glob('*')", ["glob is not a known name"], TOOLS)
    assert answer == PROGRAM
    system, user = server.requests[0].json["messages"]
    assert user["content"].startswith(FIXER_INSTRUCTION) and TOOLS in system["content"]
    assert "files = glob('*')" in user["content"] and "Errors: glob is not a known name" in user["content"]


@pytest.mark.parametrize("stream", [True, False])
async def test_an_empty_answer_is_none(server, stream):
    server.script(lb.openai_answer("  \n"))
    assert await provider(server, stream=stream).generate(INTENT, TOOLS) is None


# --- the key -----------------------------------------------------------------------------------------

async def test_a_server_of_ones_own_needs_no_key(server):
    openai = provider(server)
    assert openai.available() and openai.unavailable_reason() is None
    assert await openai.generate(INTENT, TOOLS) == PROGRAM
    assert lb.api_key_of(server.requests[0]) == NO_KEY


def test_the_openai_api_needs_the_key_from_api_key_env(monkeypatch):
    assert OpenAIProvider().unavailable_reason() == (
        "OPENAI_API_KEY is not set (a local server needs none: set base_url)")
    monkeypatch.setenv("MY_KEY", KEY)
    assert OpenAIProvider(api_key_env="MY_KEY").available()


async def test_the_key_comes_from_api_key_env(server, monkeypatch):
    monkeypatch.setenv("TEAM_KEY", KEY)
    await provider(server, api_key_env="TEAM_KEY").generate(INTENT, TOOLS)
    assert lb.api_key_of(server.requests[0]) == KEY


async def test_generate_against_the_openai_api_without_a_key_says_so():
    with pytest.raises(ProviderError, match="OPENAI_API_KEY is not set"):
        await OpenAIProvider(policy=fast()).generate(INTENT, TOOLS)


@pytest.mark.parametrize("status", [401, 500])
async def test_a_server_echoing_the_key_does_not_leak_it(server, status, caplog, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    caplog.set_level(logging.DEBUG)

    def echo(handler, request):
        lb.openai_error(status, f"invalid key {lb.api_key_of(request)}")(handler, request)

    server.default = echo
    with pytest.raises(ProviderError) as caught:
        await provider(server, policy=fast(max_retries=1)).generate(INTENT, TOOLS)
    assert lb.api_key_of(server.requests[0]) == KEY
    error = caught.value
    assert "[REDACTED]" in str(error)
    for text in (str(error), repr(error), "".join(traceback.format_exception(error))):
        assert KEY not in text
    assert KEY not in caplog.text


async def test_an_answer_containing_the_key_is_redacted_also_while_it_streams(server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    seen: list[str] = []
    server.script(lb.openai_answer(f"key = '{KEY}'\nkey"))
    answer = await provider(server).generate(INTENT, TOOLS, {"on_text": seen.append})
    assert KEY not in answer and "[REDACTED]" in answer
    assert seen and all(KEY not in text for text in seen)


# --- retries and errors ------------------------------------------------------------------------------

@pytest.mark.parametrize("stream", [True, False])
async def test_a_429_with_retry_after_is_retried(server, stream):
    server.script(lb.openai_error(429, "slow down", headers={"Retry-After": "0"}, kind="rate_limit_error"))
    assert await provider(server, stream=stream).generate(INTENT, TOOLS) == PROGRAM
    assert len(server.requests) == 2


async def test_a_500_is_retried_and_a_400_is_not(server):
    server.script(lb.openai_error(500, "boom", kind="server_error"))
    assert await provider(server).generate(INTENT, TOOLS) == PROGRAM
    server.script(lb.openai_error(400, "max_tokens is too large"))
    with pytest.raises(ProviderError, match="HTTP 400.*max_tokens is too large.*not retried") as caught:
        await provider(server).generate(INTENT, TOOLS)
    assert len(server.requests) == 3 and caught.value.status_code == 400


async def test_an_unknown_model_names_the_model_and_the_server(server):
    server.script(lb.openai_error(404, "model 'nope' not found"))
    with pytest.raises(ProviderError, match=r"check the model name 'nope' and base_url"):
        await provider(server, model="nope").generate(INTENT, TOOLS)


async def test_a_stalled_stream_raises_stream_stall_error_and_is_retried(server):
    server.script(lb.openai_stream(["files = ", "find_files('**/*.py')\n", "len(files)"], stall_after=2))
    assert await provider(server, policy=fast(stream_idle_timeout=0.3)).generate(INTENT, TOOLS) == PROGRAM
    server.script(lb.openai_stream(["files = "], stall_after=1))
    with pytest.raises(StreamStallError, match=r"stalled: no data for 0\.3 s"):
        await provider(server, policy=fast(stream_idle_timeout=0.3, max_retries=0)).generate(INTENT, TOOLS)


async def test_a_server_that_never_answers_hits_request_timeout(server):
    server.script(lb.hang())
    with pytest.raises(ProviderTimeoutError, match=r"request_timeout=0\.3"):
        await provider(server, policy=fast(request_timeout=0.3, max_retries=0)).generate(INTENT, TOOLS)


async def test_an_unreachable_server_says_where_it_looked():
    base_url = f"{lb.closed_port_url()}/v1"
    with pytest.raises(ProviderError) as caught:
        await OpenAIProvider(base_url=base_url, policy=fast(max_retries=1)).generate(INTENT, TOOLS)
    assert "after 2 attempts" in str(caught.value) and f"cannot connect to {base_url}" in str(caught.value)


# --- settings and the missing package ----------------------------------------------------------------

def test_from_settings_reads_every_key():
    openai = OpenAIProvider.from_settings("local-llama", {
        "plugin": "openai", "model": "gemma", "base_url": "http://127.0.0.1:8000/v1", "api_key_env": "K",
        "temperature": 0.1, "stream": False, "max_tokens": 200, "stop": ["\n\n"], "raw": True,
        "correction_rounds": 1, "max_retries": 0, "request_timeout": 30, "stream_idle_timeout": 10,
    })
    assert (openai.name, openai.model, openai.base_url, openai.api_key_env) == (
        "local-llama", "gemma", "http://127.0.0.1:8000/v1", "K")
    assert (openai.temperature, openai.stream, openai.correction_rounds) == (0.1, False, 1)
    assert openai.generation == GenerationSettings(stop=("\n\n",), max_tokens=200, raw=True,
                                                   correction_rounds=1)
    assert openai.policy == RetryPolicy(max_retries=0, request_timeout=30, stream_idle_timeout=10)
    defaults = OpenAIProvider.from_settings("o", {"plugin": "openai"})
    assert (defaults.model, defaults.base_url, defaults.api_key_env, defaults.generation) == (
        OpenAIProvider.default_model, None, "OPENAI_API_KEY", GenerationSettings())
    assert defaults.sampling().max_tokens == FALLBACK_MAX_TOKENS


@pytest.mark.parametrize("settings, message", [
    ({"plugin": "openai", "api_key": KEY}, "unknown setting 'api_key'"),
    ({"plugin": "ollama"}, "expected 'openai'"),
    ({"api_key_env": ""}, "api_key_env"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"stop": "\n\n"}, "stop"),
    ({"correction_rounds": -1}, "correction_rounds"),
    ({"base_url": 8000}, "base_url"),
])
def test_from_settings_rejects_bad_settings(settings, message):
    with pytest.raises(ValueError, match=message):
        OpenAIProvider.from_settings("o", settings)


def test_lackpy_providers_says_what_to_install_when_the_package_is_missing(tmp_path, monkeypatch):
    (tmp_path / ".lackpy").mkdir()
    (tmp_path / ".lackpy" / "config.toml").write_text(
        '[inference]\norder = ["local"]\n\n[inference.providers.local]\nplugin = "openai"\n'
        'base_url = "http://127.0.0.1:9/v1"\n')
    with LackpyService(tmp_path) as service:
        assert [p["available"] for p in service.providers_list() if p["name"] == "local"] == [True]
        monkeypatch.setitem(sys.modules, "openai", None)  # as if it were not installed
        [listed] = [p for p in service.providers_list() if p["name"] == "local"]
    assert listed["available"] is False
    assert listed["reason"] == "the openai package is not installed: pip install 'lackpy-kernel[openai]'"
    assert json.dumps(listed)  # the CLI and MCP server show it as it is
