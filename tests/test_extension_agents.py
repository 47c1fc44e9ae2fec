"""The IPython extension's %agent and %replan, against a loopback Anthropic server: the same
runs as in the kernel, their answers as the magics' values, the program as the next cell."""

from __future__ import annotations

import json

import pytest

from lackpy_kernel.engines import PlanStepError
from lackpy_kernel.errors import UsageError
from tests.support import agents
from tests.support import loopback as lb
from tests.support.shell import extension_shell


@pytest.fixture
def server():
    with lb.LoopbackServer() as running:
        yield running


@pytest.fixture
def shell(tmp_path, tmp_path_factory, server, monkeypatch):
    for name in agents.CLEARED_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", agents.KEY)
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    agents.write_config(tmp_path, "anthropic", server, retry_delay=0.001,
                        extra='[agent]\nprovider = "loop"\n[sandbox]\nenabled = false\n')
    with extension_shell(tmp_path, tmp_path_factory.mktemp("ipython")) as ip:
        inserted: list[str] = []
        ip.set_next_input = lambda text, replace=False: inserted.append(text)
        ip.inserted = inserted
        yield ip


def test_agent_returns_the_answer_and_inserts_the_runs_program(shell, server, capsys):
    server.script(lb.tool_turn("anthropic", "Reading.", [("read_file", {"path": "notes.txt"})]),
                  lb.tool_turn("anthropic", "Two lines."))
    assert shell.run_line_magic("agent", "--kit read_file,find_files count the lines") == "Two lines."
    shown = capsys.readouterr().out
    assert "read_file(path='notes.txt')" in shown and "done: 2 turns, 1 tool call" in shown
    assert shell.inserted == ["%%lackpy --kit read_file,find_files\n"
                              "step_1 = read_file(path='notes.txt')\nstep_1"]
    assert shell.run_cell_magic("lackpy", "--kit read_file,find_files",
                                shell.inserted[0].split("\n", 1)[1]) == "alpha\nbeta\n"


def test_a_failed_run_raises_its_error(shell, server):
    server.script(*[lb.tool_turn("anthropic", "", [("read_file", {"path": "notes.txt"})])] * 2)
    with pytest.raises(PlanStepError, match="MaxTurnsExceeded"):
        shell.run_line_magic("agent", "--max-turns 2 count the lines")
    with pytest.raises(UsageError, match="what should the agent do"):
        shell.run_line_magic("agent", "")


def test_replan_returns_the_planners_answer(shell, server, capsys):
    server.script(lb.tool_turn("anthropic", json.dumps(
        {"tasks": [{"tool": "read_file", "kwargs": {"path": "notes.txt"}}]})),
        lb.tool_turn("anthropic", json.dumps({"done": True, "answer": {"lines": 2}})))
    assert shell.run_line_magic("replan", "--key r1 count the lines") == {"lines": 2}
    assert "planner: read_file" in capsys.readouterr().out
