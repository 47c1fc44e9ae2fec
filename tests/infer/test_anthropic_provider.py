"""AnthropicProvider: the real ``anthropic.AsyncAnthropic`` against a loopback /v1/messages server."""

from __future__ import annotations

import logging
import sys
import time
import traceback

import anthropic as _client  # noqa: F401 - imported up front: a first import is slow, not a timeout
import pytest

from lackpy_kernel.errors import ProviderError, ProviderTimeoutError, StreamStallError
from lackpy_kernel.infer.models import FALLBACK_MAX_TOKENS, AnthropicProvider, GenerationSettings, RetryPolicy
from lackpy_kernel.infer.prompt import FIXER_INSTRUCTION, FRAMING
from tests.support import loopback as lb

KEY = "sk-ant-api03-LOOPBACK-test-key-0123456789abcdef"
PROGRAM = "defs = find_definitions('main')\ndefs"
TOOLS = "find_definitions(name: str) -> list[dict]: where a name is defined"
INTENT = "find the definition of main"


@pytest.fixture(autouse=True)
def env(monkeypatch):
    for var in ("ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE", "ANTHROPIC_CONFIG_DIR",
                "ANTHROPIC_CUSTOM_HEADERS", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


@pytest.fixture
def server():
    with lb.LoopbackServer(default=lb.anthropic_answer(PROGRAM)) as running:
        yield running


def fast(**knobs) -> RetryPolicy:
    return RetryPolicy(**{"retry_delay": 0.001, "request_timeout": 5.0, "stream_idle_timeout": 5.0, **knobs})


def provider(server, **kwargs) -> AnthropicProvider:
    kwargs.setdefault("policy", fast())
    return AnthropicProvider(base_url=server.url, **kwargs)


# --- availability and the key ------------------------------------------------------------------------

def test_available_needs_the_key(monkeypatch):
    assert AnthropicProvider().available() is True
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    assert AnthropicProvider().available() is False
    monkeypatch.setenv("ANTHROPIC_API_KEY", "")
    assert AnthropicProvider().available() is False


def test_a_missing_package_is_named_before_the_key(monkeypatch):
    """Without the package, setting the key would not help: the first answer names what to
    install, so a newcomer fixes both in one go."""
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setitem(sys.modules, "anthropic", None)  # as if it were not installed
    reason = AnthropicProvider().unavailable_reason()
    assert reason == "the anthropic package is not installed: pip install 'lackpy-kernel[anthropic]'"


async def test_generate_without_a_key_says_so(server, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(ProviderError, match="ANTHROPIC_API_KEY is not set"):
        await provider(server).generate(INTENT, TOOLS)
    assert server.requests == []


async def test_the_key_is_read_when_the_client_is_made(server, monkeypatch):
    anthropic = provider(server)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY + "-rotated")
    await anthropic.generate(INTENT, TOOLS)
    assert lb.api_key_of(server.requests[0]) == KEY + "-rotated"


# --- success -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("stream", [True, False])
async def test_generate_sends_the_prompt_and_returns_the_raw_answer(server, stream):
    anthropic = provider(server, model="claude-opus-4-7", temperature=0.0, stream=stream,
                         generation=GenerationSettings(max_tokens=321))
    assert await anthropic.generate(INTENT, TOOLS, {"params_desc": "root: str"}) == PROGRAM
    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/v1/messages")
    assert lb.api_key_of(request) == KEY  # anthropic 2.x sends it as `authorization: Bearer <key>`
    assert request.headers.get("x-stainless-retry-count") == "0"
    body = request.json
    assert body["model"] == "claude-opus-4-7" and body["max_tokens"] == 321
    assert body["temperature"] == 0.0  # sent, not dropped as falsy
    assert bool(body.get("stream")) is stream
    assert body["system"].startswith(FRAMING) and TOOLS in body["system"] and "root: str" in body["system"]
    assert body["messages"] == [{"role": "user", "content": f"Intent: {INTENT}\nProgram:\n"}]


async def test_defaults_on_the_wire(server):
    await provider(server).generate(INTENT, TOOLS)
    body = server.requests[0].json
    assert body["model"] == AnthropicProvider.default_model and body["max_tokens"] == FALLBACK_MAX_TOKENS
    assert "temperature" not in body and body["stop_sequences"] == ["\nIntent:", "\n```"]


async def test_the_dispatchers_stop_and_token_limit_are_sent_unless_the_settings_say_otherwise(server):
    config = {"stop": ["\nEND"], "max_tokens": 300}
    await provider(server).generate(INTENT, TOOLS, config)
    own = GenerationSettings(stop=(), max_tokens=77)
    await provider(server, generation=own).generate(INTENT, TOOLS, config)
    first, second = (request.json for request in server.requests)
    assert (first["stop_sequences"], first["max_tokens"]) == (["\nEND"], 300)
    assert "stop_sequences" not in second and second["max_tokens"] == 77


async def test_a_given_system_prompt_and_a_retry_message(server):
    config = {"system_prompt": "DISPATCHER SYSTEM", "previous_program": "while True: pass"}
    await provider(server).generate(INTENT, TOOLS, config, error_feedback=["while is not allowed"])
    body = server.requests[0].json
    assert body["system"] == "DISPATCHER SYSTEM"
    user = body["messages"][0]["content"]
    assert user.startswith(f"Intent: {INTENT}") and "was rejected" in user
    assert "Errors: while is not allowed" in user and user.endswith("Program:\n")


async def test_fix_is_a_fresh_fixer_conversation(server):
    assert await provider(server).fix(INTENT, "defs = grep('main')", ["grep is unknown"], TOOLS) == PROGRAM
    body = server.requests[0].json
    assert FIXER_INSTRUCTION in body["messages"][-1]["content"] and TOOLS in body["system"]
    assert len(body["messages"]) == 1
    assert "defs = grep('main')" in body["messages"][0]["content"]
    assert "grep is unknown" in body["messages"][0]["content"]


@pytest.mark.parametrize("stream", [True, False])
async def test_an_empty_answer_is_none(server, stream):
    server.script(lb.anthropic_answer(""))
    assert await provider(server, stream=stream).generate(INTENT, TOOLS) is None


# --- retries and errors ------------------------------------------------------------------------------

@pytest.mark.parametrize("stream", [True, False])
async def test_a_429_honours_retry_after(server, stream):
    server.script(lb.anthropic_error(429, "rate_limit_error", "slow down", headers={"Retry-After": "0"}))
    anthropic = provider(server, stream=stream, policy=fast(retry_delay=5.0))  # Retry-After: 0 wins
    start = time.monotonic()
    assert await anthropic.generate(INTENT, TOOLS) == PROGRAM
    assert time.monotonic() - start < 2.5
    assert len(server.requests) == 2
    # The SDK's own retries are off: both requests are first tries of the SDK.
    assert [r.headers.get("x-stainless-retry-count") for r in server.requests] == ["0", "0"]


@pytest.mark.parametrize("status, kind", [(500, "api_error"), (529, "overloaded_error")])
async def test_server_errors_are_retried(server, status, kind):
    server.script(lb.anthropic_error(status, kind, "try later"))
    assert await provider(server).generate(INTENT, TOOLS) == PROGRAM
    assert len(server.requests) == 2


async def test_an_overloaded_error_event_in_the_stream_is_retried(server):
    server.script(lb.anthropic_stream_error("overloaded_error", "Overloaded"))
    assert await provider(server).generate(INTENT, TOOLS) == PROGRAM
    assert len(server.requests) == 2


@pytest.mark.parametrize("stream", [True, False])
async def test_a_400_is_not_retried(server, stream):
    server.script(lb.anthropic_error(400, "invalid_request_error", "max_tokens: too large"))
    expected = "HTTP 400 invalid_request_error: max_tokens: too large"
    with pytest.raises(ProviderError, match=expected) as caught:
        await provider(server, stream=stream).generate(INTENT, TOOLS)
    assert len(server.requests) == 1 and caught.value.status_code == 400


async def test_x_should_retry_false_is_obeyed(server):
    server.script(lb.anthropic_error(503, "api_error", "no", headers={"x-should-retry": "false"}))
    with pytest.raises(ProviderError, match="not retried"):
        await provider(server).generate(INTENT, TOOLS)
    assert len(server.requests) == 1


async def test_a_stalled_stream_raises_stream_stall_error(server):
    server.script(lb.anthropic_stream(["defs = ", "find_definitions('main')\n", "defs"], stall_after=4))
    anthropic = provider(server, policy=fast(stream_idle_timeout=0.3, max_retries=0))
    start = time.monotonic()
    with pytest.raises(StreamStallError, match=r"stalled: no data for 0\.3 s") as caught:
        await anthropic.generate(INTENT, TOOLS)
    assert 0.25 < time.monotonic() - start < 2
    assert caught.value.gap == 0.3 and len(server.requests) == 1


@pytest.mark.parametrize("stream", [True, False])
async def test_a_server_that_never_answers_hits_request_timeout(server, stream):
    server.script(lb.hang())
    anthropic = provider(server, stream=stream, policy=fast(request_timeout=0.3, max_retries=0))
    start = time.monotonic()
    with pytest.raises(ProviderTimeoutError, match=r"request_timeout=0\.3"):
        await anthropic.generate(INTENT, TOOLS)
    assert 0.25 < time.monotonic() - start < 2


async def test_an_unreachable_host_fails_clearly_after_retries():
    base_url = lb.closed_port_url()
    anthropic = AnthropicProvider(base_url=base_url, policy=fast(max_retries=2))
    start = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        await anthropic.generate(INTENT, TOOLS)
    message = str(caught.value)
    assert f"cannot connect to the Anthropic API at {base_url}" in message and "after 3 attempts" in message
    assert time.monotonic() - start < 3


async def test_the_deadline_stops_retrying(server):
    server.default = lb.anthropic_error(529, "overloaded_error", "Overloaded")
    anthropic = provider(server, policy=fast(max_retries=50, retry_delay=0.1, deadline=1.0))
    start = time.monotonic()
    with pytest.raises(ProviderError, match=r"deadline of 1 s"):
        await anthropic.generate(INTENT, TOOLS)
    assert time.monotonic() - start < 3.0  # the deadline, and a margin for a loaded machine
    assert 1 <= len(server.requests) <= 10  # not the 51 attempts max_retries allows


# --- the key never leaks -----------------------------------------------------------------------------

@pytest.mark.parametrize("status", [401, 500])
async def test_a_server_echoing_the_key_does_not_leak_it(server, status, caplog):
    caplog.set_level(logging.DEBUG)
    server.default = lb.echo_api_key(status)
    with pytest.raises(ProviderError) as caught:
        await provider(server, policy=fast(max_retries=1)).generate(INTENT, TOOLS)
    assert lb.api_key_of(server.requests[0]) == KEY  # the server did get the key...
    error = caught.value
    shown = "".join(traceback.format_exception(error))
    assert "[REDACTED]" in str(error)
    for text in (str(error), repr(error), shown, *(str(arg) for arg in error.args)):
        assert KEY not in text  # ...and nothing we raise or print repeats it
    assert all(KEY not in record.getMessage() for record in caplog.records)
    assert KEY not in caplog.text


async def test_an_answer_containing_the_key_is_redacted(server):
    server.script(lb.anthropic_answer(f"key = '{KEY}'\nkey"))
    answer = await provider(server).generate(INTENT, TOOLS)
    assert KEY not in answer and "[REDACTED]" in answer


# --- settings ----------------------------------------------------------------------------------------

def test_from_settings_reads_every_key():
    anthropic = AnthropicProvider.from_settings("anthropic-fallback", {
        "plugin": "anthropic", "model": "claude-haiku-4-5-20251001", "temperature": 0.0, "max_tokens": 2048,
        "base_url": "http://127.0.0.1:9", "stream": False, "max_retries": 0, "retry_delay": 2,
        "request_timeout": 0, "stream_idle_timeout": 10,
    })
    assert anthropic.name == "anthropic-fallback" and anthropic.temperature == 0.0
    assert (anthropic.generation.max_tokens, anthropic.base_url, anthropic.stream) == (
        2048, "http://127.0.0.1:9", False)
    assert anthropic.policy == RetryPolicy(max_retries=0, retry_delay=2, request_timeout=None,
                                           stream_idle_timeout=10)
    defaults = AnthropicProvider.from_settings("a", {"plugin": "anthropic"})
    assert (defaults.model, defaults.generation, defaults.temperature) == (
        AnthropicProvider.default_model, GenerationSettings(), None)


@pytest.mark.parametrize("settings, message", [
    ({"plugin": "anthropic", "api_key": "sk-ant-nope"}, "unknown setting 'api_key'"),
    ({"host": "x"}, "unknown setting 'host'"),
    ({"plugin": "ollama"}, "expected 'anthropic'"),
    ({"max_tokens": 0}, "max_tokens"),
    ({"max_tokens": "1024"}, "max_tokens"),
    ({"temperature": -1}, "temperature"),
    ({"stream": 1}, "stream"),
    ({"retry_delay": "fast"}, "retry_delay"),
    ({"raw": True}, "raw"),
    ({"stop": "END"}, "stop"),
    ({"correction_rounds": -1}, "correction_rounds"),
])
def test_from_settings_rejects_bad_settings(settings, message):
    with pytest.raises(ValueError, match=message):
        AnthropicProvider.from_settings("anthropic-fallback", settings)
