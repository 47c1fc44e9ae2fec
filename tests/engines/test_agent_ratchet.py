"""The ratchet from agent runs: a run's tool calls become a straight-line program that
validates, makes the same calls, and, saved as a template, answers the intent with no
model. And recorded conversations: a run on a model is recorded, then replayed without it."""

from __future__ import annotations

import asyncio

import pytest

from lackpy_kernel.config import LackpyConfig
from lackpy_kernel.engines import Agent, LLMEngine, trace_to_program
from lackpy_kernel.engines.agents import remember_program
from lackpy_kernel.errors import UsageError
from lackpy_kernel.lang import validate
from lackpy_kernel.service import LackpyService
from tests.support import agents
from tests.support import loopback as lb

PROTOCOL = "openai"
INTENT = "what do the notes and the package say?"


@pytest.fixture
def tree(workspace):
    (workspace / "pkg").mkdir()
    (workspace / "pkg" / "__init__.py").write_text("def main():\n    return 1\n")
    return workspace


def agent_run(server, service, workspace, *turns, tools="debug,lackpy"):
    server.script(*[lb.tool_turn(PROTOCOL, "", calls) for calls in turns],
                  lb.tool_turn(PROTOCOL, "The notes list three words."))
    agent = Agent(agents.engine(PROTOCOL, server, workspace), tools=tools, service=service)
    return agent.run(INTENT)


RUN = (
    [("read_file", {"path": "notes.txt"}), ("find_files", {"pattern": "pkg/__init__.py"})],
    [("read_file", {"path": "missing.txt"}),                      # fails: not in the program
     ("find_definitions", {"name": "main"}),
     ("lackpy", {"program": "words = read_file('notes.txt').split()\nlen(words)"})],
)


def test_the_program_validates_and_makes_the_runs_successful_calls(model_env, model_server,
                                                                   service, tree):
    envelope = agent_run(model_server, service, tree, *RUN)
    assert envelope.ok
    program = trace_to_program(envelope)
    assert program == (
        "step_1 = read_file(path='notes.txt')\n"
        "step_2 = find_files(pattern=('pkg/_' + '_init_' + '_.py'))\n"
        "step_3 = find_definitions(name='main')\n"
        "words = read_file('notes.txt').split()\n"
        "step_4 = len(words)\n"
        "[step_1, step_2, step_3, step_4]\n")
    assert validate(program, {"read_file", "find_files", "find_definitions"}).valid
    result = asyncio.run(service.run_program(program, "debug"))
    assert result.success
    made = [(entry.tool, entry.args) for entry in result.trace.entries]
    assert made == [("read_file", {"path": "notes.txt"}),
                    ("find_files", {"pattern": "pkg/__init__.py"}),
                    ("find_definitions", {"name": "main"}),
                    ("read_file", {"path": "notes.txt"})]
    assert result.output[1] == ["pkg/__init__.py"] and result.output[3] == 3


def test_saved_as_a_template_the_program_answers_the_intent_with_no_model_call(
        model_env, model_server, tree):
    with LackpyService(tree, LackpyConfig(sandbox_enabled=False)) as service:
        envelope = agent_run(model_server, service, tree, *RUN)
        program = trace_to_program(envelope, tools=["read_file", "find_files", "find_definitions"])
        remember_program(service, INTENT, program, ["read_file", "find_files", "find_definitions"])
        saved = asyncio.run(service.create(program, "debug", "notes-and-package"))
        assert saved["success"] and saved["pattern"] == INTENT
        asked = len(model_server.requests)
        again = asyncio.run(service.delegate(INTENT, "debug"))
    assert again["success"] and again["generation_tier"] == "templates"
    assert again["output"][3] == 3
    assert len(model_server.requests) == asked  # zero model calls


def test_a_run_without_a_successful_call_has_no_program(model_env, model_server, service, tree):
    envelope = agent_run(model_server, service, tree, [("read_file", {"path": "missing.txt"})])
    with pytest.raises(UsageError, match="no successful tool call"):
        trace_to_program(envelope)


def test_a_call_to_a_python_tool_cannot_be_a_lackpy_call(model_env, model_server, service, tree):
    def shout(text: str) -> str:
        """Upper-case text."""
        return text.upper()

    envelope = agent_run(model_server, service, tree, [("shout", {"text": "hi"})],
                         tools=["read_file", shout])
    with pytest.raises(UsageError, match="called 'shout', which is not a kit tool"):
        trace_to_program(envelope, tools=["read_file"])


# -- recorded conversations ------------------------------------------------------------------


def test_a_recorded_run_replays_without_the_model(model_env, model_server, tree):
    agents.write_config(tree, PROTOCOL, model_server, extra="[inference]\nrecord = true\n")
    with LackpyService(tree, None) as service:
        model_server.script(lb.tool_turn(PROTOCOL, "Reading.", [("read_file", {"path": "notes.txt"})]),
                            lb.tool_turn(PROTOCOL, "Three words."))
        recorded = Agent(LLMEngine(agents.MODEL, provider="loop", workspace=tree,
                                   **agents.FAST), tools="debug", service=service).run(INTENT)
        asked = len(model_server.requests)
        replayed = Agent(LLMEngine("replay", workspace=tree), tools="debug",
                         service=service).run(INTENT.upper())
    assert (tree / ".lackpy" / "conversations.jsonl").is_file()
    assert replayed.ok and replayed.payload == recorded.payload == "Three words."
    assert [(e.tool, e.args, e.result) for e in replayed.trace] == [
        (e.tool, e.args, e.result) for e in recorded.trace]
    assert len(model_server.requests) == asked
    assert replayed.metadata["provider"] == "replay"


def test_replay_without_a_recording_says_how_to_make_one(model_env, service, tree):
    envelope = Agent(LLMEngine("replay", workspace=tree), tools="debug",
                     service=service).run("something never recorded")
    assert envelope.error.type == "ProviderError"
    assert "no recorded conversation" in envelope.error.message
    assert "[inference] record = true" in envelope.error.message


def test_replay_with_other_tools_does_not_match(model_env, model_server, tree):
    agents.write_config(tree, PROTOCOL, model_server, extra="[inference]\nrecord = true\n")
    with LackpyService(tree, None) as service:
        model_server.script(lb.tool_turn(PROTOCOL, "Hi."))
        Agent(LLMEngine(agents.MODEL, provider="loop", workspace=tree, **agents.FAST),
              tools="debug", service=service).run(INTENT)
        other = Agent(LLMEngine("replay", workspace=tree), tools="read_file",
                      service=service).run(INTENT)
    assert "no recorded conversation" in other.error.message
