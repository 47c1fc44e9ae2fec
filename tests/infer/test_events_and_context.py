"""Live progress events, the kit's tool names as data, and the notebook's variables in the prompt."""

from __future__ import annotations

import pytest

from lackpy_kernel.infer import (
    CorrectionStep,
    InferenceDispatcher,
    ProgramStreaming,
    ProviderFailed,
    ProviderTried,
    ProviderUnavailable,
    RulesProvider,
    UnavailableProvider,
)
from lackpy_kernel.infer.models import OllamaProvider, OpenAIProvider, RetryPolicy
from lackpy_kernel.run.context import describe_variables
from tests.support import loopback as lb

TOOLS = "read_file(path: str) -> str: read a text file\nfind_files(pattern: str) -> list[str]: glob"
ALLOWED = {"read_file", "find_files"}
GOOD = "lines = read_file('notes.txt').splitlines()\nlen(lines)"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for var in ("OLLAMA_HOST", "OPENAI_API_KEY", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy",
                "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)


def policy() -> RetryPolicy:
    return RetryPolicy(retry_delay=0.001, request_timeout=5.0, stream_idle_timeout=5.0, max_retries=0)


# --- live progress -------------------------------------------------------------------------------------

async def test_events_arrive_in_order_with_the_program_as_it_streams():
    events = []
    with lb.LoopbackServer() as server:
        server.script(lb.ollama_stream(["x = open(", "'notes.txt')\n", "x"]),
                      lb.ollama_stream(["lines = read_file('notes.txt')", ".splitlines()\n", "len(lines)"]))
        providers = [UnavailableProvider("offline", "no server"), RulesProvider(),
                     OllamaProvider("local", host=server.url, policy=policy())]
        result = await InferenceDispatcher(providers).generate(
            "count the lines of notes.txt", TOOLS, ALLOWED, on_event=events.append)
    assert result.program == GOOD
    kinds = [type(event).__name__ for event in events]
    assert kinds == ["ProviderUnavailable", "ProviderTried", "ProviderFailed", "ProviderTried",
                     "ProgramStreaming", "ProgramStreaming", "ProgramStreaming", "CorrectionStep",
                     "ProgramStreaming", "ProgramStreaming", "ProgramStreaming", "CorrectionStep"]
    assert events[0] == ProviderUnavailable("offline", "not available (no server)")
    assert events[1] == ProviderTried("rules", "rules")
    assert events[2] == ProviderFailed("rules", "no program for this intent")
    assert events[3] == ProviderTried("local", "model")
    streamed = ["x = open(", "x = open('notes.txt')\n", "x = open('notes.txt')\nx"]
    assert [e.text for e in events[4:7]] == streamed
    assert {e.step for e in events[4:7]} == {"generate"} and {e.step for e in events[8:11]} == {"retry"}
    assert events[7] == CorrectionStep("local", "cleanup", "found nothing to clean", False)
    assert events[-1].step == "retry" and events[-1].valid
    assert events[-2] == ProgramStreaming("local", "retry", GOOD)
    assert events[3].to_dict() == {"event": "provider_tried", "provider": "local", "kind": "model"}


async def test_an_error_in_the_callback_surfaces_even_while_a_provider_streams():
    def broken(event):
        if isinstance(event, ProgramStreaming):
            raise TypeError("the display is broken")

    with lb.LoopbackServer(default=lb.openai_answer(GOOD)) as server:
        provider = OpenAIProvider("local", base_url=f"{server.url}/v1", policy=policy())
        with pytest.raises(TypeError, match="the display is broken"):
            await InferenceDispatcher([provider]).generate("count lines", TOOLS, ALLOWED, on_event=broken)
        assert len(server.requests) == 1  # not retried as if the provider had failed


# --- the kit's tool names as data ----------------------------------------------------------------------

async def test_tool_names_reach_the_providers_as_data_and_default_to_the_allowed_names():
    rules = RulesProvider()
    dispatcher = InferenceDispatcher([rules])
    prose = "two tools: one reads, one globs"  # nothing a regex could find tool names in
    found = await dispatcher.generate("find all py files", prose, ALLOWED | {"n"}, tool_names=["find_files"])
    assert found.program == "files = find_files('**/*.py')\nfiles"
    with pytest.raises(RuntimeError, match="rules: no program"):
        await dispatcher.generate("find all py files", TOOLS, ALLOWED, tool_names=["read_file"])
    by_default = await dispatcher.generate("find all py files", prose, ALLOWED)
    assert by_default.provider_name == "rules"


# --- the notebook's variables --------------------------------------------------------------------------

async def test_the_variables_reach_the_prompt_as_the_model_server_receives_it_and_may_be_used():
    notebook = {"text": "alpha\nbeta\ngamma\n"}
    with lb.LoopbackServer(default=lb.ollama_answer("len(text.splitlines())")) as server:
        provider = OllamaProvider("local", host=server.url, policy=policy())
        result = await InferenceDispatcher([provider]).generate(
            "count the lines of text", TOOLS, ALLOWED | set(notebook),
            variables_desc=describe_variables(notebook))
        system = server.requests[0].json["messages"][0]["content"]
    assert result.program == "len(text.splitlines())"
    assert "The notebook's variables (use them by name):\ntext: str, 17 chars, 4 lines = 'alpha" in system
