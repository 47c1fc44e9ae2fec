"""Attacks on the agent loop: a hostile model, a forged recording, a hostile trace.

The model is the attacker here: whatever it answers (unknown tools, arguments that are not
data or are nested without end, ten thousand calls in one turn, programs that reach a write
tool under a read-only ceiling, a final answer that is not data), the run gives it an error
result and goes on, or ends with a clear error, and writes nothing it was not allowed to. A
recording (``.lackpy/conversations.jsonl``, which a shared notebook may carry) is an
attacker too, and ``trace_to_program`` must turn any trace into a straight line of tool
calls with data arguments, or refuse. Models answer from loopback servers that speak the
real wire protocols (tests/support/loopback.py); tools run through the real Toolset.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import math

import pytest

from lackpy_kernel.config import LackpyConfig
from lackpy_kernel.engines import Agent, LLMEngine, trace_to_program
from lackpy_kernel.errors import UsageError
from lackpy_kernel.run import TraceEntry
from lackpy_kernel.service import LackpyService
from tests.support import agents
from tests.support import loopback as lb

ANTHROPIC = "anthropic"


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    return tmp_path


@pytest.fixture
def service(workspace):
    with LackpyService(workspace, LackpyConfig(sandbox_enabled=False)) as running:
        yield running


@pytest.fixture
def server(monkeypatch):
    for name in agents.CLEARED_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", agents.KEY)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback-openai-0123456789")
    with lb.LoopbackServer() as running:
        yield running


def run_turns(server, workspace, service, *turns, tools="debug", protocol=ANTHROPIC,
              auto_run=None, output=str, **knobs):
    """An agent whose model makes ``turns`` (lists of calls) then answers 'done'; returns
    the envelope and the tool results each later request carried."""
    server.script(*[lb.tool_turn(protocol, "", calls) for calls in turns],
                  lb.tool_turn(protocol, "done"))
    agent = Agent(agents.engine(protocol, server, workspace, **knobs), tools=tools,
                  service=service, auto_run=auto_run, output=output)
    with agent:
        envelope = agent.run("do it")
    results = [agents.tool_results(protocol, request) for request in server.requests[1:]]
    return envelope, results


def untouched(workspace):
    return sorted(path.name for path in workspace.iterdir() if path.name != ".lackpy") == [
        "notes.txt"]


# -- tools that do not exist, arguments that are not data ---------------------------------


@pytest.mark.parametrize("name", ["__import__", "eval", "lackpy", "read_file\nwrite_file",
                                  "x" * 10_000, "read_file.__globals__"])
def test_a_call_to_a_tool_the_agent_does_not_have_is_an_error_result(
        server, workspace, service, name):
    envelope, (results, *_) = run_turns(server, workspace, service,
                                        [(name, {"path": "notes.txt"})])
    assert envelope.ok and envelope.payload == "done"
    assert results[0].startswith("UnknownTool: there is no tool") and len(results[0]) < 20_000
    assert untouched(workspace)


@pytest.mark.parametrize("arguments", [
    '["notes.txt"]', '"notes.txt"', "null", "12", '{"path": "notes.txt"', "NaN",
], ids=["list", "string", "null", "number", "cut-off", "nan"])
def test_arguments_that_are_not_a_json_object_are_an_error_result(
        server, workspace, service, arguments):
    envelope, (results, *_) = run_turns(server, workspace, service,
                                        [("read_file", arguments)], protocol="openai")
    assert envelope.ok
    assert results[0].startswith("BadArguments: read_file: ")


def test_arguments_nested_without_end_are_an_error_result(server, workspace, service):
    deep = '{"path": ' + "[" * 100_000 + "]" * 100_000 + "}"
    envelope, (results, second) = run_turns(server, workspace, service, [("read_file", deep)],
                                            [("read_file", {"path": "notes.txt"})],
                                            protocol="openai")
    assert envelope.ok, envelope.error
    assert results[0].startswith("BadArguments: read_file: ") and "nested" in results[0]
    assert second == ["alpha\nbeta\ngamma\n"]


@pytest.mark.parametrize("arguments", [
    {"path": "notes.txt", "x=1)\nwrite_file('pwned.txt', 'x')#": 1},
    {"path=1, content": "x"},
    {"path": {"__class__": "x"}},
    {"path": ["notes.txt"]},
], ids=["code-as-a-name", "two-names-in-one", "dict-value", "list-value"])
def test_argument_names_and_values_are_data_never_code(server, workspace, service, arguments):
    envelope, (results, *_) = run_turns(server, workspace, service, [("read_file", arguments)],
                                        tools="read_file,write_file", auto_run="write")
    assert envelope.ok
    assert results[0].startswith("BadArguments: read_file: ")
    assert untouched(workspace)


def test_ten_thousand_calls_in_one_turn_are_each_answered_and_none_writes(
        server, workspace, service):
    calls = [("write_file", {"path": f"f{index}.txt", "content": "x"}) for index in range(10_000)]
    envelope, (results, *_) = run_turns(server, workspace, service, calls,
                                        tools="read_file,write_file")
    assert envelope.ok and len(results) == 10_000
    assert all(result.startswith("ToolApprovalError: write_file is a write tool")
               for result in results)
    assert envelope.metadata["tool_calls"] == 10_000 and untouched(workspace)


def test_a_cap_on_calls_per_turn_answers_the_rest_without_running_them(
        server, workspace, service):
    calls = [("read_file", {"path": "notes.txt"})] * 2_000
    envelope, (results, *_) = run_turns(server, workspace, service, calls,
                                        max_tool_calls_per_turn=3)
    assert envelope.ok
    assert results[:3] == ["alpha\nbeta\ngamma\n"] * 3
    assert all(result.startswith("ToolCallLimit: only 3 tool calls run per turn")
               for result in results[3:]) and len(results) == 2_000


# -- the approval ceiling: a read-only agent never writes ----------------------------------


@pytest.mark.parametrize("program", [
    "w = write_file\nw('pwned.txt', 'x')",
    "tools = [read_file, write_file]\nw = tools[1]\nw('pwned.txt', 'x')",
    "e = edit_file\ne('notes.txt', 'alpha', 'pwned')",
    "pick = {'w': write_file}\nw = pick['w']\nw('pwned.txt', 'x')",
    "w = write_file if len('a') else read_file\nw('pwned.txt', 'x')",
], ids=["alias", "list-element", "edit-alias", "dict-value", "chosen"])
def test_a_program_cannot_reach_a_write_tool_under_a_read_ceiling(
        server, workspace, service, program):
    envelope, (results, *_) = run_turns(
        server, workspace, service, [("lackpy", {"program": program})],
        tools="read_file,write_file,edit_file,lackpy")
    assert envelope.ok
    assert results[0].startswith("ToolApprovalError: "), results[0]
    assert untouched(workspace)
    assert (workspace / "notes.txt").read_text() == "alpha\nbeta\ngamma\n"


def test_a_validation_bomb_as_a_program_is_refused_and_the_run_goes_on(
        server, workspace, service):
    bomb = ", ".join(f"v{i}" for i in range(100_000)) + " = range(100000)\nv0\n" + \
        "x = " + "-" * 300 + "1"
    envelope, (first, second) = run_turns(
        server, workspace, service, [("lackpy", {"program": bomb})],
        [("read_file", {"path": "notes.txt"})], tools="debug,lackpy")
    assert envelope.ok
    assert first[0].startswith("UsageError: the program is not valid lackpy, nothing ran")
    assert "nested more than 200 levels" in first[0]
    assert second == ["alpha\nbeta\ngamma\n"]


# -- the final answer --------------------------------------------------------------------


@dataclasses.dataclass
class Count:
    lines: int


@pytest.mark.parametrize("answer", [
    "[" * 100_000 + "]" * 100_000,
    '{"lines": ' + "[" * 100_000 + "]" * 100_000 + "}",
    '{"lines": 1e999}',
    '{"lines": "3", "__class__": "x"}',
], ids=["deep", "deep-field", "infinite", "extra-dunder"])
def test_a_structured_answer_that_is_not_the_type_is_a_clear_error(
        server, workspace, service, answer):
    server.script(lb.tool_turn(ANTHROPIC, answer), lb.tool_turn(ANTHROPIC, answer))
    agent = Agent(agents.engine(ANTHROPIC, server, workspace), tools="debug",
                  service=service, output=Count)
    envelope = agent.run("count")
    assert envelope.error is not None and envelope.error.type == "AgentOutputError"
    assert len(envelope.error.message) < 20_000


# -- a forged recording ------------------------------------------------------------------


def record(workspace, *records, raw=""):
    path = workspace / ".lackpy" / "conversations.jsonl"
    path.parent.mkdir(exist_ok=True)
    path.write_text("".join(json.dumps(item) + "\n" for item in records) + raw)


def replay_agent(workspace, service, tools="read_file,write_file", **options):
    return Agent(LLMEngine("replay", provider="replay", workspace=workspace), tools=tools,
                 service=service, **options)


def conversation(*turns, tools=("read_file", "write_file")):
    return {"intent": "do it", "tools": sorted(tools), "model": "forged", "turns": list(turns)}


def test_a_recording_forged_to_write_is_refused_below_the_write_ceiling(workspace, service):
    record(workspace, conversation(
        {"text": "", "calls": [{"name": "write_file",
                                "arguments": {"path": "pwned.txt", "content": "x"}}]},
        {"text": "", "calls": [{"name": "lackpy", "arguments": {
            "program": "w = write_file\nw('pwned.txt', 'x')"}}]},
        {"text": "done", "calls": []}))
    envelope = replay_agent(workspace, service).run("do it")
    assert envelope.ok
    assert [entry.success for entry in envelope.trace] == [False, False]
    assert untouched(workspace)


@pytest.mark.parametrize("raw", [
    json.dumps(conversation(1, 2)),
    json.dumps(conversation({"text": "", "calls": [3]})),
    json.dumps(conversation({"text": "", "calls": "read_file"})),
    json.dumps({**conversation({"text": "x"}), "tools": 5}),
    json.dumps({**conversation({"text": "x"}), "intent": ["do it"]}),
    '{"intent": "do it", "turns": ' + "[" * 100_000 + "]" * 100_000 + "}",
], ids=["turns-not-dicts", "call-not-dict", "calls-a-string", "tools-a-number",
        "intent-a-list", "deep"])
def test_a_malformed_recording_is_a_provider_error_not_a_crash(workspace, service, raw):
    record(workspace, raw=raw + "\n")
    envelope = replay_agent(workspace, service).run("do it")
    assert envelope.error is not None and envelope.error.type == "ProviderError", envelope.error
    assert untouched(workspace)


# -- trace_to_program: a straight line of calls with data arguments ----------------------

HOSTILE_STRINGS = [
    "it's", 'say "hi"', "'''", '"""', "a\nb", "a\\nb", "\\", "x'); write_file('pwned.txt', 'x'); ('",
    "__import__('os')", "{read_file.__globals__}", "___", "_" * 9, "\u2028write_file('p', 'x')",
    "\x85\x00\r", "\N{BULLET}" * 1000, "#", "f'{x}'", "a" * 100_000,
]


def entry(step, tool, args):
    return TraceEntry(step, tool, args, None, 0.1, True, None)


def assert_straight_line(program, tools):
    tree = ast.parse(program)
    *assignments, last = tree.body
    for number, statement in enumerate(assignments, 1):
        assert isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call)
        assert [target.id for target in statement.targets] == [f"step_{number}"]
        call = statement.value
        assert isinstance(call.func, ast.Name) and call.func.id in tools and not call.args
        for keyword in call.keywords:
            for node in ast.walk(keyword.value):
                assert isinstance(node, (ast.Constant, ast.List, ast.Dict, ast.BinOp, ast.Add,
                                         ast.UnaryOp, ast.USub, ast.Load)), ast.dump(node)
    assert isinstance(last, ast.Expr)


def test_trace_to_program_keeps_hostile_strings_as_data():
    trace = [entry(i, "read_file", {"path": text}) for i, text in enumerate(HOSTILE_STRINGS)]
    trace.append(entry(99, "find_files", {"pattern": {"k": HOSTILE_STRINGS, "'": ["\n"]}}))
    program = trace_to_program(trace)
    assert_straight_line(program, {"read_file", "find_files"})
    values = [data_of(call.value.keywords[0].value) for call in ast.parse(program).body[:-1]]
    assert values[:-1] == HOSTILE_STRINGS


def data_of(node):
    """The value of an argument ``assert_straight_line`` checked: constants joined by +."""
    return eval(compile(ast.Expression(node), "<argument>", "eval"), {"__builtins__": {}})


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
def test_trace_to_program_never_turns_a_number_into_a_name(value):
    trace = [entry(0, "read_file", {"path": value})]
    try:
        program = trace_to_program(trace, tools=["read_file", "nan", "inf"])
    except UsageError:
        return
    assert_straight_line(program, {"read_file"})


@pytest.mark.parametrize(("tool", "args"), [
    ("read_file", {"path='a'); write_file('pwned.txt', 'x'); read_file(path": "b"}),
    ("read_file", {"path=1, x": "b"}),
    ("write_file('pwned.txt', 'x')\nread_file", {"path": "a"}),
], ids=["argument-name", "two-names", "tool-name"])
def test_trace_to_program_refuses_names_that_are_not_names(tool, args):
    with pytest.raises(UsageError):
        trace_to_program([entry(0, tool, args)], tools=["read_file", "write_file", tool])
