"""The agent loop, turn by turn, against loopback servers speaking the Anthropic, Ollama and
OpenAI-compatible tool-calling protocols through the real client libraries: every knob of
LLMEngine, parallel calls and their caps, failures of the model and of the tools."""

from __future__ import annotations

import dataclasses
import json
import threading
import warnings

import pytest

from lackpy_kernel.engines import Agent, LLMEngine, PlanStepError
from lackpy_kernel.errors import UsageError
from lackpy_kernel.infer.models import MUST_CALL_A_TOOL
from tests.support import agents
from tests.support import loopback as lb

TURN_READ = ("read_file", {"path": "notes.txt"})


def run(protocol, server, service, workspace, *steps, tools="debug", output=str, **knobs):
    server.script(*steps)
    agent = Agent(agents.engine(protocol, server, workspace, **knobs), tools=tools,
                  service=service, output=output)
    return agent.run("how many lines does notes.txt have?")


def final(protocol, text="notes.txt has 3 lines."):
    return lb.tool_turn(protocol, text)


# -- a run ------------------------------------------------------------------------------


def test_the_model_calls_tools_gets_their_results_and_answers(protocol, model_server, service,
                                                                workspace):
    envelope = run(protocol, model_server, service, workspace,
                   lb.tool_turn(protocol, "Reading.", [TURN_READ, ("find_files", {"pattern": "*.txt"})]),
                   final(protocol))
    assert envelope.ok and envelope.payload == "notes.txt has 3 lines."
    assert [(e.tool, e.args, e.success) for e in envelope.trace] == [
        ("read_file", {"path": "notes.txt"}, True), ("find_files", {"pattern": "*.txt"}, True)]
    first, second = model_server.requests
    assert agents.tool_results(protocol, second) == ["alpha\nbeta\ngamma\n", '["notes.txt", "todo.txt"]']
    tools = {tool["name"] if protocol == "anthropic" else tool["function"]["name"]
             for tool in first.json["tools"]}
    assert tools == {"read_file", "find_files", "find_definitions", "find_callers"}
    expected_in = sum(lb.usage_of(request, "")[0] for request in model_server.requests)
    assert envelope.metadata["turns"] == 2 and envelope.metadata["tool_calls"] == 2
    assert envelope.metadata["input_tokens"] == expected_in
    assert [step.name for step in envelope.history] == ["turn 1", "turn 2"]
    assert [e.tool for e in envelope.history[0].trace] == ["read_file", "find_files"]


@pytest.mark.parametrize("stream", [True, False])
def test_the_answer_is_the_same_streamed_or_not(stream, protocol, model_server, service,
                                                workspace):
    agents.write_config(workspace, protocol, model_server, stream=stream)
    model_server.script(lb.tool_turn(protocol, "", [TURN_READ]), final(protocol))
    engine = LLMEngine(agents.MODEL, provider="loop", workspace=workspace, **agents.FAST)
    envelope = Agent(engine, tools="debug", service=service).run("count the lines")
    assert envelope.payload == "notes.txt has 3 lines."
    assert all(bool(r.json.get("stream")) is stream for r in model_server.requests)


def test_system_and_temperature_are_sent_as_given(protocol, model_server, service, workspace):
    run(protocol, model_server, service, workspace, final(protocol),
        system="Answer in one line.", temperature=0.0)
    (request,) = model_server.requests
    assert agents.system_text(protocol, request) == "Answer in one line."
    assert agents.temperature_of(protocol, request) == 0.0  # 0.0 is sent, not dropped


def test_tool_choice_any_forces_a_tool_on_the_first_turn_only(protocol, model_server, service,
                                                               workspace):
    run(protocol, model_server, service, workspace, lb.tool_turn(protocol, "", [TURN_READ]),
        lb.tool_turn(protocol, "", [TURN_READ]), final(protocol), tool_choice="any")
    requests = model_server.requests
    if protocol == "anthropic":
        assert [r.json["tool_choice"] for r in requests] == [{"type": "any"}] + [{"type": "auto"}] * 2
    elif protocol == "openai":
        assert [r.json["tool_choice"] for r in requests] == ["required", "auto", "auto"]
    else:  # Ollama has no tool_choice: the first turn's system prompt says it
        assert [MUST_CALL_A_TOOL in agents.system_text(protocol, r) for r in requests] == [
            True, False, False]


def test_without_tools_the_model_is_sent_none(protocol, model_server, service, workspace):
    envelope = run(protocol, model_server, service, workspace, final(protocol), tools=[],
                   tool_choice="any")
    assert envelope.ok
    body = model_server.requests[0].json
    assert not body.get("tools") and "tool_choice" not in body  # the ollama client sends []
    assert MUST_CALL_A_TOOL not in agents.system_text(protocol, model_server.requests[0])


# -- parallel calls and their caps ---------------------------------------------------------


class Overlap:
    """A tool whose calls wait until ``target`` of them run at once (or all have started),
    recording the most that ever ran together."""

    def __init__(self, target: int, total: int) -> None:
        self.target, self.total = target, total
        self.active = self.started = self.most = 0
        self.condition = threading.Condition()

    def __call__(self, n: int) -> int:
        """Return n once enough calls overlap."""
        with self.condition:
            self.active += 1
            self.started += 1
            self.most = max(self.most, self.active)
            self.condition.notify_all()
            ready = self.condition.wait_for(
                lambda: self.active >= self.target or self.started >= self.total, timeout=60)
            assert ready, "the calls never overlapped"
            self.active -= 1
            self.condition.notify_all()
        return n * 10


@pytest.mark.parametrize(("cap", "most"), [(2, 2), (None, 5)])
def test_calls_of_one_turn_run_concurrently_up_to_max_parallel_tools(
        cap, most, protocol, model_server, service, workspace):
    overlap = Overlap(target=most, total=5)

    def spread(n: int) -> int:
        """Ten times n."""
        return overlap(n)

    calls = [("spread", {"n": n}) for n in range(5)]
    envelope = run(protocol, model_server, service, workspace, lb.tool_turn(protocol, "", calls),
                   final(protocol), tools=[spread], max_parallel_tools=cap)
    assert envelope.ok and overlap.most == most
    assert agents.tool_results(protocol, model_server.requests[1]) == ["0", "10", "20", "30", "40"]


def test_calls_past_max_tool_calls_per_turn_are_answered_with_an_error(
        protocol, model_server, service, workspace):
    ran = []

    def note(word: str) -> str:
        """Remember a word."""
        ran.append(word)
        return word

    calls = [("note", {"word": word}) for word in ("one", "two", "three")]
    envelope = run(protocol, model_server, service, workspace, lb.tool_turn(protocol, "", calls),
                   final(protocol), tools=[note], max_tool_calls_per_turn=1)
    assert envelope.ok and ran == ["one"]
    results = agents.tool_results(protocol, model_server.requests[1])
    assert results[0] == "one"
    assert all(r.startswith("ToolCallLimit: only 1 tool call run per turn "
                            "(max_tool_calls_per_turn=1)") for r in results[1:])
    assert [entry.success for entry in envelope.trace] == [True, False, False]


# -- failures of the tools -------------------------------------------------------------


def test_a_tool_that_times_out_is_an_error_result_and_the_run_goes_on(
        protocol, model_server, service, workspace):
    release = threading.Event()

    def wait_forever(x: str) -> str:
        """Never answers (until the test ends)."""
        release.wait(60)
        return x

    try:
        envelope = run(protocol, model_server, service, workspace,
                       lb.tool_turn(protocol, "", [("wait_forever", {"x": "a"}), TURN_READ]),
                       final(protocol), tools=[wait_forever, "read_file"], tool_timeout=0.5)
    finally:
        release.set()
    assert envelope.ok and envelope.payload == "notes.txt has 3 lines."
    timed_out, read = agents.tool_results(protocol, model_server.requests[1])
    assert timed_out == ("ToolTimeoutError: wait_forever did not finish within tool_timeout=0.5 s "
                         "and was stopped")
    assert read == "alpha\nbeta\ngamma\n"


def test_an_unknown_tool_is_an_error_result(protocol, model_server, service, workspace):
    envelope = run(protocol, model_server, service, workspace,
                   lb.tool_turn(protocol, "", [("reed_file", {"path": "notes.txt"})]),
                   final(protocol))
    assert envelope.ok
    (result,) = agents.tool_results(protocol, model_server.requests[1])
    assert result == "UnknownTool: there is no tool 'reed_file'; did you mean 'read_file'?"
    assert not envelope.trace[0].success


@pytest.mark.parametrize(("arguments", "said"), [
    ({"paht": "notes.txt"}, "there is no argument 'paht'; did you mean 'path'? "
                            "(read_file takes path)"),
    ({}, "the argument 'path' is missing (read_file takes path)"),
    ({"path": 3}, "the argument 'path' must be a JSON string, not int"),
])
def test_arguments_that_do_not_fit_the_schema_are_an_error_result(
        arguments, said, protocol, model_server, service, workspace):
    envelope = run(protocol, model_server, service, workspace,
                   lb.tool_turn(protocol, "", [("read_file", arguments)]), final(protocol))
    assert envelope.ok
    (result,) = agents.tool_results(protocol, model_server.requests[1])
    assert result == f"BadArguments: read_file: {said}"


@pytest.mark.parametrize("protocol", ["anthropic", "openai"])  # Ollama's client reads objects only
def test_arguments_that_are_not_json_are_an_error_result(protocol, model_env, model_server,
                                                         service, workspace):
    envelope = run(protocol, model_server, service, workspace,
                   lb.tool_turn(protocol, "", [("read_file", '{"path": "notes')]), final(protocol))
    assert envelope.ok
    (result,) = agents.tool_results(protocol, model_server.requests[1])
    assert result.startswith("BadArguments: read_file: the arguments are not valid JSON")
    assert envelope.trace[0].args == {"arguments": '{"path": "notes'}


def test_max_turns_ends_the_run_and_the_last_turns_calls_do_not_run(
        protocol, model_server, service, workspace):
    ran = []

    def note(word: str) -> str:
        """Remember a word."""
        ran.append(word)
        return word

    envelope = run(protocol, model_server, service, workspace,
                   *[lb.tool_turn(protocol, "", [("note", {"word": str(n)})]) for n in range(3)],
                   tools=[note], max_turns=2)
    assert envelope.error.type == "MaxTurnsExceeded"
    assert "turn 2, its last (max_turns=2)" in envelope.error.message
    assert ran == ["0"] and len(model_server.requests) == 2
    with pytest.raises(PlanStepError, match="MaxTurnsExceeded"):
        envelope.raise_for_error()


# -- failures of the model -----------------------------------------------------------------


def test_a_429_then_success_is_retried(protocol, model_server, service, workspace):
    envelope = run(protocol, model_server, service, workspace,
                   lb.tool_error(protocol, 429, "slow down"), final(protocol))
    assert envelope.ok and len(model_server.requests) == 2
    assert envelope.metadata["turns"] == 1


def test_with_max_retries_0_a_429_ends_the_run(protocol, model_server, service, workspace):
    envelope = run(protocol, model_server, service, workspace,
                   lb.tool_error(protocol, 429, "slow down"), final(protocol), max_retries=0)
    assert envelope.error.type == "ProviderError" and envelope.error.retryable
    assert "429" in envelope.error.message and "max_retries=0" in envelope.error.message
    assert len(model_server.requests) == 1


def test_a_stream_that_stalls_is_a_stream_stall_error(protocol, model_server, service, workspace):
    envelope = run(protocol, model_server, service, workspace,
                   lb.tool_turn(protocol, "Let me look at it.", [TURN_READ], stall_after=1),
                   stream_idle_timeout=0.5, max_retries=0)
    assert envelope.error.type == "StreamStallError" and envelope.error.retryable
    assert "stream_idle_timeout" in envelope.error.message


def test_a_stalled_stream_is_retried_like_any_transient_error(protocol, model_server, service,
                                                              workspace):
    envelope = run(protocol, model_server, service, workspace,
                   lb.tool_turn(protocol, "Let me look.", [TURN_READ], stall_after=1),
                   final(protocol), stream_idle_timeout=0.5, max_retries=1)
    assert envelope.ok and len(model_server.requests) == 2


def test_a_server_that_never_answers_runs_into_request_timeout(protocol, model_server, service,
                                                                workspace):
    envelope = run(protocol, model_server, service, workspace, lb.hang(),
                   request_timeout=0.5, max_retries=0)
    assert envelope.error.type == "ProviderTimeoutError"
    assert "request_timeout=0.5" in envelope.error.message


def test_the_key_never_reaches_an_error(model_env, model_server, service, workspace):
    envelope = run("anthropic", model_server, service, workspace, lb.echo_api_key(),
                   max_retries=0)
    assert envelope.error.type == "ProviderError"
    assert agents.KEY not in envelope.error.message and "[REDACTED]" in envelope.error.message


# -- structured output ---------------------------------------------------------------------


@dataclasses.dataclass
class Counts:
    lines: int
    words: int


def test_a_malformed_first_answer_is_asked_again_once(protocol, model_server, service, workspace):
    envelope = run(protocol, model_server, service, workspace,
                   lb.tool_turn(protocol, "", [TURN_READ]),
                   final(protocol, "3 lines and 3 words"),
                   final(protocol, '```json\n{"lines": 3, "words": 3}\n```'), output=Counts)
    assert envelope.ok and envelope.payload == Counts(lines=3, words=3)
    first, _, retry = model_server.requests
    assert '"lines": {"type": "integer"}' in agents.system_text(protocol, first)
    assert "Your answer could not be read: the answer is not JSON" in retry.body.decode()


def test_two_malformed_answers_are_an_agent_output_error(protocol, model_server, service,
                                                         workspace):
    envelope = run(protocol, model_server, service, workspace,
                   final(protocol, '{"lines": 3}'), final(protocol, '{"lines": "3", "words": 1}'),
                   output=Counts)
    assert envelope.error.type == "AgentOutputError"
    assert "the answer.lines must be a integer, not str" in envelope.error.message
    assert "Your answer could not be read: the answer lacks the field(s) 'words' of Counts" \
        in model_server.requests[1].body.decode()


# -- streaming -----------------------------------------------------------------------------


@pytest.mark.parametrize("buffer", [1, 64])
async def test_stream_yields_the_text_across_tool_call_turns(buffer, protocol, model_server,
                                                             service, workspace):
    model_server.script(lb.tool_turn(protocol, "Let me read it. ", [TURN_READ]),
                        final(protocol, "It has 3 lines."))
    agent = Agent(agents.engine(protocol, model_server, workspace, stream_buffer=buffer),
                  tools="debug", service=service)
    pieces = [piece async for piece in agent.stream("how many lines?")]
    assert "".join(pieces) == "Let me read it. It has 3 lines."
    assert len(pieces) > 2


async def test_a_stream_whose_run_fails_raises_its_error(model_env, model_server, service,
                                                         workspace):
    model_server.script(lb.tool_error("anthropic", 500, "broken"))
    agent = Agent(agents.engine("anthropic", model_server, workspace, max_retries=0),
                  tools="debug", service=service)
    with pytest.raises(PlanStepError, match="ProviderError"):
        [piece async for piece in agent.stream("how many lines?")]


# -- knobs at construction -----------------------------------------------------------------


def test_stream_idle_timeout_none_warns_once_when_the_engine_is_made(protocol, model_server,
                                                                     service, workspace):
    agents.write_config(workspace, protocol, model_server)
    with pytest.warns(UserWarning) as caught:
        engine = LLMEngine(agents.MODEL, provider="loop", workspace=workspace,
                           stream_idle_timeout=None)
    assert len(caught) == 1 and "stream_idle_timeout=None" in str(caught[0].message)
    model_server.script(final(protocol))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Agent(engine, tools="debug", service=service).run("hi").ok


@pytest.mark.parametrize(("knobs", "said"), [
    ({"max_turns": 0}, "max_turns=0 must be a whole number of at least 1"),
    ({"tool_choice": "required"}, "did you mean 'auto'"),
    ({"max_parallel_tools": 0}, "max_parallel_tools=0"),
    ({"max_tool_calls_per_turn": -1}, "max_tool_calls_per_turn=-1"),
    ({"stream_buffer": 0}, "stream_buffer=0"),
    ({"tool_timeout": 0}, "tool_timeout=0 must be a number above 0"),
    ({"temperature": -1}, "temperature=-1"),
])
def test_a_knob_out_of_range_fails_at_construction(knobs, said, model_env, workspace):
    with pytest.raises(UsageError, match=said.replace("(", r"\(").replace(")", r"\)")):
        LLMEngine("claude-haiku-4-5", workspace=workspace, **knobs)


def test_a_configured_providers_retry_settings_apply_unless_a_knob_overrides_them(
        model_env, model_server, service, workspace):
    agents.write_config(workspace, "anthropic", model_server, max_retries=0, retry_delay=0.001)
    model_server.script(lb.tool_error("anthropic", 429, "slow"), final("anthropic"))
    configured = LLMEngine(agents.MODEL, provider="loop", workspace=workspace)
    assert Agent(configured, tools=[], service=service).run("hi").error.type == "ProviderError"
    model_server.script(lb.tool_error("anthropic", 429, "slow"), final("anthropic"))
    overridden = LLMEngine(agents.MODEL, provider="loop", workspace=workspace, max_retries=1)
    assert Agent(overridden, tools=[], service=service).run("hi").ok


def test_the_configured_host_and_model_are_used(model_env, model_server, service, workspace):
    agents.write_config(workspace, "ollama", model_server, model="qwen2.5-coder:7b",
                        keep_alive="5m")
    model_server.script(final("ollama"))
    engine = LLMEngine("ollama", provider="loop", workspace=workspace)  # an alias keeps the model
    assert Agent(engine, tools=[], service=service).run("hi").ok
    (request,) = model_server.requests
    assert request.path == "/api/chat"
    assert request.json["model"] == "qwen2.5-coder:7b" and request.json["keep_alive"] == "5m"
    assert json.loads(request.body)["stream"] is True


def test_the_retry_knobs_become_the_providers_retry_policy(protocol, model_server, workspace):
    engine = agents.engine(protocol, model_server, workspace, max_retries=5, retry_delay=0.25,
                           request_timeout=7.0, stream_idle_timeout=9.0)
    policy = engine.chat.tier.policy
    assert (policy.max_retries, policy.retry_delay, policy.request_timeout,
            policy.stream_idle_timeout) == (5, 0.25, 7.0, 9.0)
    default = LLMEngine(agents.MODEL, provider="loop", workspace=workspace).chat.tier.policy
    assert (default.max_retries, default.retry_delay, default.request_timeout,
            default.stream_idle_timeout) == (3, 1.0, 120.0, 90.0)


def test_a_configured_token_limit_is_sent(protocol, model_server, service, workspace):
    key = "num_predict" if protocol == "ollama" else "max_tokens"
    agents.write_config(workspace, protocol, model_server, **{key: 333})
    model_server.script(final(protocol), final(protocol))
    engine = LLMEngine(agents.MODEL, provider="loop", workspace=workspace, **agents.FAST)
    assert Agent(engine, tools=[], service=service).run("hi").ok
    body = model_server.requests[0].json
    sent = body["options"]["num_predict"] if protocol == "ollama" else body["max_tokens"]
    assert sent == 333
    agents.write_config(workspace, protocol, model_server)
    engine = LLMEngine(agents.MODEL, provider="loop", workspace=workspace, **agents.FAST)
    assert Agent(engine, tools=[], service=service).run("hi").ok
    unset = model_server.requests[1].json
    if protocol == "anthropic":
        assert unset["max_tokens"] == 4096  # the Messages API needs one
    else:
        assert "max_tokens" not in unset and "num_predict" not in unset.get("options", {})
