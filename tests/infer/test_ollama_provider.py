"""OllamaProvider: the real ``ollama.AsyncClient`` against a loopback server speaking /api/chat."""

from __future__ import annotations

import time

import ollama as _client  # noqa: F401 - imported up front: a first import is slow, not a timeout
import pytest

from lackpy_kernel.errors import ProviderError, ProviderTimeoutError, StreamStallError
from lackpy_kernel.infer.models import FALLBACK_MAX_TOKENS, GenerationSettings, OllamaProvider, RetryPolicy
from lackpy_kernel.infer.prompt import FIXER_INSTRUCTION, FRAMING
from tests.support import loopback as lb

PROGRAM = "files = find_files('**/*.py')\nfiles"
TOOLS = "find_files(pattern: str) -> list[str]: files matching a glob"
INTENT = "list the python files"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for var in ("OLLAMA_HOST", "OLLAMA_API_KEY", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def server():
    with lb.LoopbackServer(default=lb.ollama_answer(PROGRAM)) as running:
        yield running


def fast(**knobs) -> RetryPolicy:
    return RetryPolicy(**{"retry_delay": 0.001, "request_timeout": 5.0, "stream_idle_timeout": 5.0, **knobs})


def provider(server, **kwargs) -> OllamaProvider:
    kwargs.setdefault("policy", fast())
    return OllamaProvider(host=server.url, **kwargs)


# --- success -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("stream", [True, False])
async def test_generate_sends_the_prompt_and_returns_the_raw_answer(server, stream):
    ollama = provider(server, model="qwen2.5-coder:7b", temperature=0.0, keep_alive="30m", stream=stream)
    assert await ollama.generate(INTENT, TOOLS, {"params_desc": "root: str"}) == PROGRAM
    [request] = server.requests
    assert (request.method, request.path) == ("POST", "/api/chat")
    body = request.json
    assert body["model"] == "qwen2.5-coder:7b" and body["stream"] is stream
    assert body["options"]["temperature"] == 0.0  # 0.0 is sent, not dropped as falsy
    assert body["keep_alive"] == "30m"
    system, user = body["messages"]
    assert system["role"] == "system" and system["content"].startswith(FRAMING)
    assert TOOLS in system["content"] and "root: str" in system["content"]
    assert user == {"role": "user", "content": f"Intent: {INTENT}\nProgram:\n"}


async def test_unset_options_are_not_sent_and_stop_and_num_predict_always_are(server):
    await provider(server).generate(INTENT, TOOLS)
    body = server.requests[0].json
    assert body["model"] == OllamaProvider.default_model and "keep_alive" not in body
    assert body["options"] == {"stop": ["\nIntent:", "\n```"], "num_predict": FALLBACK_MAX_TOKENS}


async def test_the_dispatchers_stop_and_token_limit_are_sent_unless_the_settings_say_otherwise(server):
    config = {"stop": ["\nEND"], "max_tokens": 300}
    await provider(server).generate(INTENT, TOOLS, config)
    own = GenerationSettings(stop=(), max_tokens=77)
    await provider(server, generation=own).generate(INTENT, TOOLS, config)
    first, second = (request.json["options"] for request in server.requests)
    assert first == {"stop": ["\nEND"], "num_predict": 300}
    assert second == {"num_predict": 77}


@pytest.mark.parametrize("stream", [True, False])
async def test_raw_sends_one_prompt_to_api_generate(server, stream):
    seen: list[str] = []
    ollama = provider(server, stream=stream, generation=GenerationSettings(raw=True, max_tokens=64))
    assert await ollama.generate(INTENT, TOOLS, {"on_text": seen.append}) == PROGRAM
    [request] = server.requests
    assert request.path == "/api/generate"
    body = request.json
    assert body["raw"] is True and "messages" not in body
    assert body["prompt"].startswith(FRAMING) and body["prompt"].endswith(f"Intent: {INTENT}\nProgram:\n")
    assert body["options"] == {"num_predict": 64, "stop": ["\nIntent:", "\n```"]}
    assert (seen[-1] == PROGRAM and len(seen) > 1) if stream else seen == []


async def test_a_given_system_prompt_is_used_verbatim(server):
    await provider(server).generate(INTENT, TOOLS, {"system_prompt": "SYSTEM PROMPT FROM THE DISPATCHER"})
    assert server.requests[0].json["messages"][0]["content"] == "SYSTEM PROMPT FROM THE DISPATCHER"


async def test_a_retry_sends_the_first_errors_and_a_fixer_standing_in_the_program_too(server):
    config = {"previous_program": "import os", "system_prompt": "S"}
    await provider(server).generate(INTENT, TOOLS, config, error_feedback=["import is not allowed"])
    await provider(server).generate(INTENT, TOOLS, dict(config, fixer=True), error_feedback=["import"])
    retry, fixer = (request.json["messages"][1]["content"] for request in server.requests)
    assert retry.startswith(f"Intent: {INTENT}\nThe previous program was rejected.")
    assert "import os" not in retry  # a small model shown its program copies it back
    assert "Errors: import is not allowed" in retry and retry.endswith("Program:\n")
    assert "This program was rejected:\nimport os" in fixer


async def test_fix_is_a_fresh_fixer_conversation(server):
    answer = await provider(server).fix(INTENT, "files = glob('*')", ["glob is not a known name"], TOOLS)
    assert answer == PROGRAM
    system, user = server.requests[0].json["messages"]
    assert FIXER_INSTRUCTION in user["content"] and TOOLS in system["content"]
    assert "files = glob('*')" in user["content"] and "glob is not a known name" in user["content"]


@pytest.mark.parametrize("stream", [True, False])
async def test_an_empty_answer_is_none(server, stream):
    server.script(lb.ollama_answer("  \n"))
    assert await provider(server, stream=stream).generate(INTENT, TOOLS) is None


async def test_host_comes_from_ollama_host(server, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", server.url)
    ollama = OllamaProvider(policy=fast())
    assert ollama.resolved_host == server.url
    assert await ollama.generate(INTENT, TOOLS) == PROGRAM
    assert len(server.requests) == 1


def test_available_needs_only_the_package():
    assert OllamaProvider(host="http://127.0.0.1:1").available() is True
    assert OllamaProvider().name == "ollama" and OllamaProvider("ollama-local").name == "ollama-local"


# --- retries and errors ------------------------------------------------------------------------------

@pytest.mark.parametrize("stream", [True, False])
async def test_a_429_with_retry_after_is_retried(server, stream):
    server.script(lb.ollama_error(429, "server busy", headers={"Retry-After": "0"}))
    ollama = provider(server, stream=stream, policy=fast(retry_delay=0.01))
    assert await ollama.generate(INTENT, TOOLS) == PROGRAM
    assert len(server.requests) == 2
    assert server.requests[0].json == server.requests[1].json


@pytest.mark.parametrize("stream", [True, False])
async def test_a_500_is_retried(server, stream):
    server.script(lb.ollama_error(500, "llama runner process has terminated"))
    assert await provider(server, stream=stream).generate(INTENT, TOOLS) == PROGRAM
    assert len(server.requests) == 2


@pytest.mark.parametrize("stream", [True, False])
async def test_a_400_is_not_retried(server, stream):
    server.script(lb.ollama_error(400, "invalid options"))
    with pytest.raises(ProviderError, match="HTTP 400: invalid options") as caught:
        await provider(server, stream=stream).generate(INTENT, TOOLS)
    assert len(server.requests) == 1
    assert caught.value.status_code == 400 and caught.value.attempts == 1


@pytest.mark.parametrize("stream", [True, False])
async def test_a_model_that_is_not_pulled_says_ollama_pull(server, stream):
    server.script(lb.ollama_model_not_found("qwen2.5-coder:32b"))
    ollama = provider(server, model="qwen2.5-coder:32b", stream=stream)
    with pytest.raises(ProviderError, match=r"`ollama pull qwen2\.5-coder:32b`") as caught:
        await ollama.generate(INTENT, TOOLS)
    assert len(server.requests) == 1 and caught.value.status_code == 404


async def test_an_error_line_in_the_stream_is_reported(server):
    server.script(lb.chunked([b'{"error": "out of memory"}\n'], "application/x-ndjson"))
    with pytest.raises(ProviderError, match="out of memory"):
        await provider(server).generate(INTENT, TOOLS)


async def test_a_stalled_stream_raises_stream_stall_error(server):
    server.script(lb.ollama_stream(["files = ", "find_files('**/*.py')\n", "files"], stall_after=1))
    ollama = provider(server, policy=fast(stream_idle_timeout=0.3, max_retries=0))
    start = time.monotonic()
    with pytest.raises(StreamStallError, match=r"stalled: no data for 0\.3 s") as caught:
        await ollama.generate(INTENT, TOOLS)
    assert 0.25 < time.monotonic() - start < 2
    assert caught.value.gap == 0.3 and len(server.requests) == 1


async def test_a_stall_is_retried_like_any_transient_error(server):
    server.script(lb.ollama_stream(["files"], stall_after=0))
    ollama = provider(server, policy=fast(stream_idle_timeout=0.3, max_retries=1))
    assert await ollama.generate(INTENT, TOOLS) == PROGRAM
    assert len(server.requests) == 2


@pytest.mark.parametrize("stream", [True, False])
async def test_a_server_that_never_answers_hits_request_timeout(server, stream):
    server.script(lb.hang())
    ollama = provider(server, stream=stream, policy=fast(request_timeout=0.3, max_retries=0))
    start = time.monotonic()
    with pytest.raises(ProviderTimeoutError, match=r"request_timeout=0\.3"):
        await ollama.generate(INTENT, TOOLS)
    assert 0.25 < time.monotonic() - start < 2


@pytest.mark.parametrize("stream", [True, False])
async def test_an_unreachable_host_fails_clearly_after_retries(stream):
    host = lb.closed_port_url()
    ollama = OllamaProvider(host=host, stream=stream, policy=fast(max_retries=2))
    start = time.monotonic()
    with pytest.raises(ProviderError) as caught:
        await ollama.generate(INTENT, TOOLS)
    message = str(caught.value)
    assert f"is Ollama running at {host}?" in message and "`ollama serve`" in message
    assert "after 3 attempts" in message and caught.value.attempts == 3
    assert time.monotonic() - start < 3


async def test_the_deadline_stops_retrying(server):
    server.default = lb.ollama_error(503, "loading model")
    ollama = provider(server, policy=fast(max_retries=50, retry_delay=0.1, deadline=1.0))
    start = time.monotonic()
    with pytest.raises(ProviderError, match=r"deadline of 1 s"):
        await ollama.generate(INTENT, TOOLS)
    assert time.monotonic() - start < 3.0  # the deadline, and a margin for a loaded machine
    assert 1 <= len(server.requests) <= 10  # not the 51 attempts max_retries allows


# --- settings ----------------------------------------------------------------------------------------

def test_from_settings_reads_every_key():
    ollama = OllamaProvider.from_settings("ollama-local", {
        "plugin": "ollama", "host": "http://localhost:11434", "model": "qwen2.5-coder:1.5b",
        "temperature": 0.0, "keep_alive": "30m", "stream": False, "max_retries": 1, "retry_delay": 0.5,
        "request_timeout": 60, "stream_idle_timeout": 30, "num_predict": 200, "stop": ["\n\n"],
        "raw": True, "correction_rounds": 1,
    })
    assert ollama.name == "ollama-local" and ollama.host == "http://localhost:11434"
    assert ollama.generation == GenerationSettings(stop=("\n\n",), max_tokens=200, raw=True,
                                                   correction_rounds=1)
    assert ollama.correction_rounds == 1
    assert ollama.temperature == 0.0 and ollama.keep_alive == "30m" and ollama.stream is False
    assert ollama.policy == RetryPolicy(max_retries=1, retry_delay=0.5, request_timeout=60,
                                        stream_idle_timeout=30)
    defaults = OllamaProvider.from_settings("o", {"plugin": "ollama"})
    assert (defaults.model, defaults.host, defaults.temperature, defaults.stream) == (
        OllamaProvider.default_model, None, None, True)
    assert defaults.policy == RetryPolicy()


@pytest.mark.parametrize("settings, message", [
    ({"plugin": "ollama", "temprature": 0.2}, "unknown setting 'temprature'"),
    ({"plugin": "ollama", "api_key": "x", "url": "y"}, "unknown settings 'api_key', 'url'"),
    ({"plugin": "anthropic"}, "expected 'ollama'"),
    ({"temperature": "hot"}, "temperature"),
    ({"temperature": True}, "temperature"),
    ({"stream": "yes"}, "stream"),
    ({"model": ""}, "model"),
    ({"host": 11434}, "host"),
    ({"keep_alive": True}, "keep_alive"),
    ({"max_retries": -1}, "max_retries"),
    ({"request_timeout": "2m"}, "request_timeout"),
    ({"max_tokens": 100}, "unknown setting 'max_tokens'"),  # Ollama calls it num_predict
    ({"num_predict": 0}, "num_predict"),
    ({"stop": ["ok", ""]}, "stop"),
    ({"raw": "yes"}, "raw"),
    ({"correction_rounds": 1.5}, "correction_rounds"),
])
def test_from_settings_rejects_bad_settings(settings, message):
    with pytest.raises(ValueError, match=message):
        OllamaProvider.from_settings("ollama-local", settings)
