"""A model's tool calls are as safe as programs: validated, confined to the workspace, plain
data only, under the sandbox's limits, and writes only with approval. Attacks a model could
try become error results, never crashes or escapes."""

from __future__ import annotations

import dataclasses

import pytest

from lackpy_kernel.config import LackpyConfig
from lackpy_kernel.engines import Agent, Plan, Step
from lackpy_kernel.errors import KitError, UsageError
from lackpy_kernel.service import LackpyService
from tests.support import agents
from tests.support import loopback as lb

PROTOCOL = "anthropic"  # the protocols are alike here; test_agent_loop covers each


@pytest.fixture
def ask(model_env, model_server, workspace):
    """Run an agent whose model makes the scripted turns; returns (envelope, tool results
    of the request after the first turn)."""

    def ask(service, *turns, tools="debug", auto_run=None, **knobs):
        model_server.script(*[lb.tool_turn(PROTOCOL, "", calls) for calls in turns],
                            lb.tool_turn(PROTOCOL, "done"))
        agent = Agent(agents.engine(PROTOCOL, model_server, workspace, **knobs), tools=tools,
                      service=service, auto_run=auto_run)
        envelope = agent.run("do it")
        results = [agents.tool_results(PROTOCOL, request) for request in model_server.requests[1:]]
        return envelope, results

    return ask


# -- limits: the sandbox stops a call, the run goes on ------------------------------------


def test_a_program_call_that_hangs_is_stopped_at_tool_timeout_and_the_next_call_works(
        ask, sandboxed):
    envelope, (first, second) = ask(
        sandboxed, [("lackpy", {"program": "sum(range(1000000000000))"})],
        [("lackpy", {"program": "len(read_file('notes.txt'))"})], tools="debug,lackpy",
        tool_timeout=1.0)
    assert envelope.ok
    assert first == ["ToolTimeoutError: lackpy did not finish within tool_timeout=1 s and was "
                     "stopped"]
    assert second == ["17"]


def test_a_program_call_that_hangs_without_tool_timeout_meets_the_sandbox_limit(ask, sandboxed):
    envelope, (first,) = ask(sandboxed, [("lackpy", {"program": "sum(range(1000000000000))"})],
                             tools="debug,lackpy")
    assert envelope.ok
    assert first[0].startswith("ProgramTimeoutError: the program ran longer than the 2 s limit")


def test_a_program_call_that_eats_memory_is_stopped_and_the_run_goes_on(ask, workspace):
    program = "['x' * 100000000 for i in range(100)]"  # the cap in a few quick steps
    # a time limit a busy machine cannot meet first (the fixture's 2 s was met under load)
    with LackpyService(workspace, LackpyConfig(sandbox_timeout=120)) as sandboxed:
        envelope, (first, second) = ask(sandboxed, [("lackpy", {"program": program})],
                                        [("read_file", {"path": "todo.txt"})],
                                        tools="debug,lackpy")
    assert envelope.ok
    assert first[0].startswith("ProgramMemoryError")
    assert second == ["write tests\n"]


def test_kit_calls_run_in_sandbox_workers_the_agent_keeps_until_closed(
        model_env, model_server, sandboxed, workspace):
    turn = [("read_file", {"path": "notes.txt"}), ("find_files", {"pattern": "*.txt"})]
    agent = Agent(agents.engine(PROTOCOL, model_server, workspace), tools="debug",
                  service=sandboxed)
    with agent:
        for _ in range(2):
            model_server.script(lb.tool_turn(PROTOCOL, "", turn), lb.tool_turn(PROTOCOL, "done"))
            assert agent.run("look").ok
            assert agent.sandbox_workers == 2  # one per concurrent call, kept for the next run
    assert agent.sandbox_workers == 0
    assert agents.tool_results(PROTOCOL, model_server.requests[-1]) == [
        "alpha\nbeta\ngamma\n", '["notes.txt", "todo.txt"]']
    assert sandboxed.sandbox_worker_pid is None  # not the service's one-shot worker


# -- confinement and validation ---------------------------------------------------------


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/passwd", "link.txt"])
def test_a_path_outside_the_workspace_is_refused(path, ask, service, workspace):
    (workspace.parent / "outside.txt").write_text("secret")
    (workspace / "link.txt").symlink_to(workspace.parent / "outside.txt")
    envelope, (results,) = ask(service, [("read_file", {"path": path})])
    assert envelope.ok
    assert results[0].startswith("WorkspaceError:") and "secret" not in results[0]


@pytest.mark.parametrize("program", [
    "open('notes.txt').read()",
    "read_file.__globals__",
    "import os",
    "getattr(read_file, '__code__')",
])
def test_a_program_that_is_not_lackpy_is_refused_before_it_runs(program, ask, service):
    envelope, (results,) = ask(service, [("lackpy", {"program": program})], tools="debug,lackpy")
    assert results[0].startswith("UsageError: the program is not valid lackpy, nothing ran")


def test_a_tool_argument_is_data_never_code(ask, service, workspace):
    hostile = "notes.txt'); write_file('pwned.txt', 'x"
    envelope, (results,) = ask(service, [("read_file", {"path": hostile}),
                                         ("find_files", {"pattern": "__import__('os')"})])
    assert results[0].startswith("FileNotFoundError: no file")
    assert results[1] == "[]"
    assert not (workspace / "pwned.txt").exists()


# -- writes need approval ----------------------------------------------------------------


def test_a_write_tool_is_refused_below_the_write_ceiling(ask, service, workspace):
    envelope, (results,) = ask(service, [("write_file", {"path": "new.txt", "content": "x"})],
                               tools="read_file,write_file")
    assert results[0].startswith("ToolApprovalError: write_file is a write tool, and this agent "
                                 "runs tools up to 'read' without asking, so it did not run")
    assert not (workspace / "new.txt").exists()


@pytest.mark.parametrize("sandbox", [False, True], ids=["in-process", "sandbox"])
def test_a_write_no_one_can_approve_is_refused_naming_the_setting(ask, workspace, sandbox):
    config = LackpyConfig(sandbox_enabled=sandbox, sandbox_timeout=10)  # approve = "write"
    with LackpyService(workspace, config) as service:
        _, (results,) = ask(service, [("write_file", {"path": "new.txt", "content": "x"})],
                            tools="read_file,write_file", auto_run="write")
    assert "changes to new.txt were not applied: no one can be asked" in results[0]
    assert '[sandbox] approve = "never"' in results[0]
    assert not (workspace / "new.txt").exists()


def test_a_write_tool_runs_when_the_agent_is_allowed_writes(ask, service, workspace):
    envelope, (results,) = ask(service, [("write_file", {"path": "new.txt", "content": "x"}),
                                         ("write_file", {"path": ".lackpy/config.toml",
                                                         "content": "[sandbox]\nenabled = false"})],
                               tools="read_file,write_file", auto_run="write")
    assert results[0] == "wrote 1 chars to new.txt"
    assert results[1].startswith("WorkspaceError:")  # a model cannot change its own config
    assert (workspace / "new.txt").read_text() == "x"
    assert "enabled = false" not in (workspace / ".lackpy" / "config.toml").read_text()


def test_a_program_that_writes_needs_the_same_approval(ask, service, workspace):
    program = "write_file('new.txt', read_file('notes.txt'))"
    envelope, (results,) = ask(service, [("lackpy", {"program": program})],
                               tools="read_file,write_file,lackpy")
    assert results[0].startswith("ToolApprovalError: write_file is a write tool")
    assert not (workspace / "new.txt").exists()


def test_an_unknown_ceiling_is_refused(service):
    with pytest.raises(UsageError, match="auto_run='everything' is not a grade"):
        Agent("claude-haiku-4-5", tools="debug", service=service, auto_run="everything")


# -- Python tools and agents as tools ----------------------------------------------------


class Handle:
    pass


def test_a_python_tool_that_returns_an_object_is_refused(ask, service):
    def leak(x: str) -> object:
        """Returns an object."""
        return Handle()

    envelope, (results,) = ask(service, [("leak", {"x": "a"})], tools=[leak])
    assert results == ["TypeError: leak returned a Handle, not plain data (str, numbers, bool, "
                       "None, lists, dicts)"]


def test_a_python_tool_that_raises_is_an_error_result(ask, service):
    def divide(a: int, b: int) -> float:
        """a divided by b."""
        return a / b

    envelope, (results,) = ask(service, [("divide", {"a": 1, "b": 0}), ("divide", {"a": 6, "b": 3})],
                               tools=[divide])
    assert results == ["ZeroDivisionError: division by zero", "2.0"]


def test_a_python_tool_is_described_from_its_signature_and_docstring(ask, service, model_server):
    def lookup(name: str, limit: int = 3, exact: bool = False) -> list[str]:
        """Find people by name.

        More text that the model does not need."""
        return [name] * limit

    ask(service, tools=["read_file", lookup])
    tools = {tool["name"]: tool for tool in model_server.requests[0].json["tools"]}
    assert tools["lookup"]["description"] == "Find people by name."
    assert tools["lookup"]["input_schema"] == {
        "type": "object", "required": ["name"],
        "properties": {"name": {"type": "string"}, "limit": {"type": "integer"},
                       "exact": {"type": "boolean"}}}
    assert tools["read_file"]["input_schema"]["required"] == ["path"]


def test_two_tools_of_one_name_are_refused(service):
    def read_file(path: str) -> str:
        """Shadows the kit's."""
        return path

    with pytest.raises(UsageError, match="two tools are named 'read_file'"):
        Agent("claude-haiku-4-5", tools=["read_file", read_file], service=service)


def test_an_unknown_kit_tool_fails_when_the_agent_is_made(service):
    with pytest.raises(KitError, match="reed_file"):
        Agent("claude-haiku-4-5", tools=["reed_file"], service=service)


@dataclasses.dataclass
class Summary:
    lines: int


def test_an_agent_is_another_agents_tool_and_a_plan_step(model_env, model_server, service,
                                                         workspace):
    inner = Agent(agents.engine(PROTOCOL, model_server, workspace), tools="debug",
                  service=service, name="counter", output=Summary)
    outer = Agent(agents.engine(PROTOCOL, model_server, workspace), tools=[inner],
                  service=service)
    model_server.script(
        lb.tool_turn(PROTOCOL, "", [("counter", {"task": "count notes.txt"})]),  # outer
        lb.tool_turn(PROTOCOL, "", [("read_file", {"path": "notes.txt"})]),      # inner
        lb.tool_turn(PROTOCOL, '{"lines": 3}'),                                  # inner's answer
        lb.tool_turn(PROTOCOL, "It has 3 lines."))                               # outer
    envelope = outer.run("how long is notes.txt?")
    assert envelope.payload == "It has 3 lines."
    assert [e.tool for e in envelope.trace] == ["counter"]
    assert agents.tool_results(PROTOCOL, model_server.requests[3]) == ['{"lines": 3}']
    tools = model_server.requests[0].json["tools"]
    assert tools[0]["name"] == "counter" and tools[0]["input_schema"]["required"] == ["task"]

    model_server.script(lb.tool_turn(PROTOCOL, '{"lines": 3}'), lb.tool_turn(PROTOCOL, '{"lines": 3}'))
    plan = Plan(Step(inner.as_tool("count")), Step(inner, task="count again"), service=service)
    envelope = plan.run("count notes.txt")
    assert envelope.payload == {"lines": 3}
    assert [step.name for step in envelope.history] == ["count", "counter"]
