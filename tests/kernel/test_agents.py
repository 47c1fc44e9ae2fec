"""The kernel's %agent and %replan through jupyter_client, against a loopback Anthropic server:
turns shown live, the run's program offered as the next cell, the ratchet, the stop button,
a tool call the sandbox stops, and a planner's rounds with a checkpoint."""

from __future__ import annotations

import json
import os
import time

import pytest

from lackpy_kernel.engines import Store
from tests.support import agents
from tests.support import loopback as lb
from tests.support.kernel import Kernel, make_workspace

INTENT = "how many lines does notes.txt have?"


@pytest.fixture(scope="module")
def server():
    with lb.LoopbackServer() as running:
        yield running


@pytest.fixture(scope="module")
def kernel(tmp_path_factory, server):
    workspace = make_workspace(tmp_path_factory.mktemp("agents"))
    agents.write_config(workspace, "anthropic", server, retry_delay=0.001,
                        extra='[agent]\nprovider = "loop"\nmodel = "claude-loop"\n'
                              "[sandbox]\ntimeout = 30\nmemory_mb = 256\n")
    clean = {k: v for k, v in os.environ.items() if k not in agents.CLEARED_ENV}
    running = Kernel(workspace, env={**clean, "ANTHROPIC_API_KEY": agents.KEY})
    yield running
    running.close()


@pytest.fixture
def model(server):
    """The server with no requests and no script left over."""
    server.requests.clear()
    server.steps.clear()
    return server


def texts(outcome, kind: str = "display_data") -> list[str]:
    return [content["data"]["text/plain"] for content in outcome.of(kind)]


def next_cell(outcome) -> str | None:
    found = [p["text"] for p in outcome.reply["content"]["payload"]
             if p.get("source") == "set_next_input"]
    return found[0] if found else None


def test_agent_shows_each_turn_live_and_offers_its_calls_as_the_next_cell(kernel, model):
    model.script(lb.tool_turn("anthropic", "Let me read it.", [("read_file", {"path": "notes.txt"}),
                                                              ("find_files", {"pattern": "*.txt"})]),
                 lb.tool_turn("anthropic", "notes.txt has 3 lines."))
    outcome = kernel.execute(f"%agent {INTENT}")
    assert outcome.status == "ok", outcome.messages
    live, final = outcome.of("display_data")
    display_id = live["transient"]["display_id"]
    updates = [m["data"]["text/plain"] for m in outcome.of("update_display_data")
               if m["transient"]["display_id"] == display_id]
    assert any("read_file(path='notes.txt')" in text and "running" in text for text in updates)
    assert updates[-1] == f"agent: {INTENT}"  # the live display ends as it began
    table = final["data"]["text/plain"]
    assert "model: Let me read it." in table and "tools" in table
    assert "read_file(path='notes.txt')" in table and "model: notes.txt has 3 lines." in table
    assert [row.split()[2] for row in table.splitlines()[1:] if "(" in row] == ["ok", "ok"]
    assert outcome.result() == "notes.txt has 3 lines."
    assert "done: 2 turns, 2 tool calls" in outcome.stream("stdout")
    program = next_cell(outcome)
    assert program == ("step_1 = read_file(path='notes.txt')\n"
                       "step_2 = find_files(pattern='*.txt')\n[step_1, step_2]")

    ran = kernel.execute(program)
    assert ran.status == "ok" and "notes.txt" in ran.result()


def test_the_offered_program_saved_as_a_template_answers_the_intent_without_the_model(kernel, model):
    model.script(lb.tool_turn("anthropic", "", [("read_file", {"path": "app.py"})]),
                 lb.tool_turn("anthropic", "It defines main and helper."))
    intent = "what does app.py define?"
    program = next_cell(kernel.execute(f"%agent {intent}"))
    saved = kernel.execute(f"%%create app-defs\n{program}")
    assert saved.status == "ok" and f"pattern: {intent}" in texts(saved)[0]
    asked = len(model.requests)
    again = kernel.execute(f"%delegate --run {intent}")
    assert "written by templates" in again.stream("stdout")
    assert "def main" in again.result()
    assert len(model.requests) == asked


def test_the_stop_button_ends_a_run_cleanly(kernel, model):
    model.script(lb.tool_turn("anthropic", "", [("read_file", {"path": "notes.txt"})]), lb.hang())
    msg_id = kernel.client.execute(f"%agent {INTENT}")
    deadline = time.monotonic() + 60
    while len(model.requests) < 2:
        assert time.monotonic() < deadline, "the second turn never started"
        time.sleep(0.02)
    kernel.manager.interrupt_kernel()
    stopped = kernel.wait(msg_id)
    assert stopped.error["ename"] == "KeyboardInterrupt"
    assert "the run stopped in turn 2" in stopped.error["evalue"]
    last_row = texts(stopped)[-1].splitlines()[-1].split()
    assert last_row[:3] == ["2", "model", "interrupted"]
    assert kernel.execute("1 + 1").result() == "2"


def test_a_tool_call_that_eats_memory_is_stopped_and_the_kernel_survives(kernel, model):
    model.script(lb.tool_turn("anthropic", "", [("lackpy", {"program": "[list(range(1000000)) "
                                                                       "for i in range(1000)]"})]),
                 lb.tool_turn("anthropic", "That was too big."))
    outcome = kernel.execute(f"%agent --kit debug,lackpy {INTENT}")
    assert outcome.status == "ok"
    assert "failed: ProgramMemoryError" in texts(outcome)[-1]
    sent = json.loads(model.requests[1].body)["messages"][-1]["content"][0]
    assert sent["is_error"] and sent["content"].startswith("ProgramMemoryError")
    assert next_cell(outcome) is None  # no successful call: nothing to offer
    assert kernel.execute("len(read_file('notes.txt'))").result() == "17"


def test_a_run_that_ends_in_an_error_shows_it(kernel, model):
    model.script(*[lb.tool_turn("anthropic", "", [("read_file", {"path": "notes.txt"})])] * 2)
    outcome = kernel.execute(f"%agent --max-turns 2 {INTENT}")
    assert outcome.error["ename"] == "MaxTurnsExceeded"
    assert "max_turns=2" in outcome.error["evalue"]


def test_bad_agent_lines_are_usage_errors(kernel, model):
    assert kernel.execute("%agent").error["ename"] == "UsageError"
    assert "--max-turns takes a whole number" in kernel.execute(
        "%agent --max-turns x hi").error["evalue"]
    unknown = kernel.execute("%agent --provider nowhere hi").error
    assert unknown["ename"] == "UsageError" and "no provider 'nowhere'" in unknown["evalue"]
    assert model.requests == []


def test_replan_runs_a_planners_rounds_and_checkpoints_them(kernel, model):
    first = {"tasks": [{"tool": "read_file", "kwargs": {"path": "notes.txt"}, "parallel": True},
                       {"tool": "find_files", "kwargs": {"pattern": "*.py"}, "parallel": True}]}
    model.script(lb.tool_turn("anthropic", json.dumps(first)),
                 lb.tool_turn("anthropic", json.dumps({"done": True, "answer": "3 lines, 1 file"})))
    outcome = kernel.execute("%replan --key survey survey the workspace")
    assert outcome.status == "ok", outcome.messages
    table = texts(outcome)[-1]
    assert "planner: read_file (parallel), find_files (parallel)" in table
    assert "planner: done" in table
    assert outcome.result() == "3 lines, 1 file"
    assert "done: 2 rounds, 2 tool calls" in outcome.stream("stdout")
    saved = Store(kernel.workspace / ".lackpy" / "plans.sqlite").read("survey")
    assert saved["status"] == "done" and saved["iterations"] == 2
    status = kernel.execute("%plan status survey")
    assert "replan" in texts(status)[0] and "done" in texts(status)[0]
