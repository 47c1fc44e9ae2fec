"""%agent and %replan in both hosts (the lackpy kernel, a Python kernel with the extension),
through jupyter_client, against a loopback Anthropic server: turns shown live, the run's
program offered as the next cell, the ratchet, the stop button, a tool call the sandbox
stops, a planner's rounds with a checkpoint, and the drifts the two hosts once had
(streamed text throttled, --max-turns read alike)."""

from __future__ import annotations

import json
import time

import pytest

from lackpy_kernel.engines import Store
from tests.support import agents
from tests.support import loopback as lb
from tests.support.hosts import Host, host_with, run_error
from tests.support.kernel import make_workspace

INTENT = "how many lines does notes.txt have"  # no last ?: IPython reads it as help


@pytest.fixture(scope="module")
def server():
    with lb.LoopbackServer() as running:
        yield running


def agents_workspace(folder, server: lb.LoopbackServer):
    workspace = make_workspace(folder)
    agents.write_config(workspace, "anthropic", server, retry_delay=0.001,
                        extra='[agent]\nprovider = "loop"\nmodel = "claude-loop"\n'
                              "[sandbox]\ntimeout = 30\nmemory_mb = 256\n")
    return workspace


host = host_with(agents_workspace, prefix="agents", unset=agents.CLEARED_ENV,
                 env={"ANTHROPIC_API_KEY": agents.KEY})


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


def program_cell(host: Host, program: str, kit: str | None = None) -> str:
    """The cell a host offers for ``program`` (run with ``kit``): the kernel's sets the kit
    with %kit, a Python notebook's is a %%lackpy cell."""
    if host.name == "kernel":
        return f"%kit {kit}\n{program}" if kit else program
    return "%%lackpy" + (f" --kit {kit}" if kit else "") + "\n" + program


def program_of(host: Host, cell: str) -> str:
    """The program in an offered cell (a Python notebook's starts with its %%lackpy line)."""
    return cell if host.name == "kernel" else cell.split("\n", 1)[1]


def test_agent_shows_each_turn_live_and_offers_its_calls_as_the_next_cell(host, model):
    model.script(lb.tool_turn("anthropic", "Let me read it.", [("read_file", {"path": "notes.txt"}),
                                                              ("find_files", {"pattern": "*.txt"})]),
                 lb.tool_turn("anthropic", "notes.txt has 3 lines."))
    outcome = host.kernel.execute(f"%agent {INTENT}")
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
    assert outcome.result() == host.shown_text("notes.txt has 3 lines.")
    assert "done: 2 turns, 2 tool calls" in outcome.stream("stdout")
    assert "are in the next cell; %%create NAME saves it as a template" in outcome.stream("stdout")
    cell = next_cell(outcome)
    assert cell == program_cell(host, "step_1 = read_file(path='notes.txt')\n"
                                      "step_2 = find_files(pattern='*.txt')\n[step_1, step_2]")

    ran = host.kernel.execute(cell)
    assert ran.status == "ok" and "notes.txt" in ran.result()


def test_the_offered_cell_runs_with_the_agents_kit(host, model):
    model.script(lb.tool_turn("anthropic", "", [("read_file", {"path": "notes.txt"})]),
                 lb.tool_turn("anthropic", "Three."))
    outcome = host.kernel.execute(f"%agent --kit read_file,find_files {INTENT}")
    assert next_cell(outcome) == program_cell(host, "step_1 = read_file(path='notes.txt')\nstep_1",
                                              kit="read_file,find_files")


def test_the_offered_program_saved_as_a_template_answers_the_intent_without_the_model(host, model):
    model.script(lb.tool_turn("anthropic", "", [("read_file", {"path": "app.py"})]),
                 lb.tool_turn("anthropic", "It defines main and helper."))
    intent = "what does app.py define"
    program = program_of(host, next_cell(host.kernel.execute(f"%agent {intent}")))
    saved = host.kernel.execute(f"%%create app-defs\n{program}")
    assert saved.status == "ok" and f"pattern: {intent}" in texts(saved)[0]
    asked = len(model.requests)
    again = host.kernel.execute(f"%delegate --run {intent}")
    assert "written by templates" in again.stream("stdout")
    assert "def main" in again.result()
    assert len(model.requests) == asked


def test_the_stop_button_ends_a_run_cleanly(host, model):
    model.script(lb.tool_turn("anthropic", "", [("read_file", {"path": "notes.txt"})]), lb.hang())
    msg_id = host.kernel.client.execute(f"%agent {INTENT}")
    deadline = time.monotonic() + 60
    while len(model.requests) < 2:
        assert time.monotonic() < deadline, "the second turn never started"
        time.sleep(0.02)
    host.kernel.manager.interrupt_kernel()
    stopped = host.kernel.wait(msg_id)
    assert stopped.error["ename"] == "KeyboardInterrupt"
    assert "the run stopped in turn 2" in stopped.error["evalue"]
    last_row = texts(stopped)[-1].splitlines()[-1].split()
    assert last_row[:3] == ["2", "model", "interrupted"]
    assert host.kernel.execute("1 + 1").result() == "2"


def test_a_tool_call_that_eats_memory_is_stopped_and_the_host_survives(host, model):
    model.script(lb.tool_turn("anthropic", "", [("lackpy", {"program": "[list(range(1000000)) "
                                                                       "for i in range(1000)]"})]),
                 lb.tool_turn("anthropic", "That was too big."))
    outcome = host.kernel.execute(f"%agent --kit debug,lackpy {INTENT}")
    assert outcome.status == "ok"
    assert "failed: ProgramMemoryError" in texts(outcome)[-1]
    sent = json.loads(model.requests[1].body)["messages"][-1]["content"][0]
    assert sent["is_error"] and sent["content"].startswith("ProgramMemoryError")
    assert next_cell(outcome) is None  # no successful call: nothing to offer
    read = host.kernel.execute(program_cell(host, "len(read_file('notes.txt'))"))
    assert read.result() == "17"


def test_a_run_that_ends_in_an_error_shows_it(host, model):
    model.script(*[lb.tool_turn("anthropic", "", [("read_file", {"path": "notes.txt"})])] * 2)
    outcome = host.kernel.execute(f"%agent --max-turns 2 {INTENT}")
    assert outcome.error["ename"] == run_error(host, "MaxTurnsExceeded")
    assert "max_turns=2" in outcome.error["evalue"]


def test_bad_agent_lines_are_usage_errors(host, model):
    assert host.kernel.execute("%agent").error["ename"] == "UsageError"
    assert "--max-turns takes a whole number" in host.kernel.execute(
        "%agent --max-turns x hi").error["evalue"]
    unknown = host.kernel.execute("%agent --provider nowhere hi").error
    assert unknown["ename"] == "UsageError" and "no provider 'nowhere'" in unknown["evalue"]
    assert model.requests == []


def test_replan_runs_a_planners_rounds_and_checkpoints_them(host, model):
    first = {"tasks": [{"tool": "read_file", "kwargs": {"path": "notes.txt"}, "parallel": True},
                       {"tool": "find_files", "kwargs": {"pattern": "*.py"}, "parallel": True}]}
    model.script(lb.tool_turn("anthropic", json.dumps(first)),
                 lb.tool_turn("anthropic", json.dumps({"done": True, "answer": "3 lines, 1 file"})))
    outcome = host.kernel.execute("%replan --key survey survey the workspace")
    assert outcome.status == "ok", outcome.messages
    table = texts(outcome)[-1]
    assert "planner: read_file (parallel), find_files (parallel)" in table
    assert "planner: done" in table
    assert outcome.result() == host.shown_text("3 lines, 1 file")
    assert "done: 2 rounds, 2 tool calls" in outcome.stream("stdout")
    saved = Store(host.kernel.workspace / ".lackpy" / "plans.sqlite").read("survey")
    assert saved["status"] == "done" and saved["iterations"] == 2
    status = host.kernel.execute("%plan status survey")
    assert "replan" in texts(status)[0] and "done" in texts(status)[0]


# -- the drifts: each host once answered these differently ----------------------------


def test_streamed_text_updates_the_live_display_at_most_every_tenth_of_a_second(host, model):
    words = " ".join(f"word{number}" for number in range(300))
    model.script(lb.tool_turn("anthropic", words))
    outcome = host.kernel.execute(f"%agent {INTENT}")
    assert outcome.status == "ok", outcome.messages
    updates = outcome.of("update_display_data")
    assert 2 <= len(updates) < 30  # not one per streamed piece (300)
    assert "model: word0 word1" in texts(outcome)[-1]


@pytest.mark.parametrize("text", ["0", "x", "-2"])
def test_max_turns_and_max_rounds_take_a_whole_number(host, model, text):
    for magic, flag in (("agent", "--max-turns"), ("replan", "--max-rounds")):
        error = host.kernel.execute(f"%{magic} {flag} {text} hi").error
        assert error["ename"] == "UsageError"
        assert f"{flag} takes a whole number of at least 1, not '{text}'" in error["evalue"]
    assert model.requests == []
