"""The IPython extension's %%step and %plan in-process: each magic's value is the run's
(what both hosts show is in tests/notebook/test_plans.py)."""

from __future__ import annotations

import pytest

from lackpy_kernel.engines import Envelope, PlanStepError, Store
from lackpy_kernel.errors import UsageError
from tests.support.shell import extension_shell


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    (tmp_path / ".lackpy").mkdir()
    (tmp_path / ".lackpy" / "config.toml").write_text("[sandbox]\ntimeout = 30\n")
    return tmp_path


@pytest.fixture
def shell(workspace, tmp_path_factory):
    with extension_shell(workspace, tmp_path_factory.mktemp("ipython")) as ip:
        yield ip


def step(shell, line, cell):
    return shell.run_cell_magic("step", line, cell)


def plan(shell, line=""):
    return shell.run_line_magic("plan", line)


def test_lackpy_cells_become_steps_and_the_plan_runs(shell, capsys):
    step(shell, "fetch --writes text", "read_file(task)")
    step(shell, "lines --parallel", "len(task.splitlines())")
    step(shell, "chars --parallel", "len(task)")
    step(shell, "report --task from_parallel_all(lines)", "task")
    shown = capsys.readouterr().out
    assert "step 4 of 4" in shown and "from_parallel_all('lines')" in shown
    assert plan(shell, "run notes.txt") == {"lines": 2, "chars": 11}
    final = capsys.readouterr().out
    assert "report  done" in final


def test_a_gate_pauses_and_resume_continues(shell, workspace, capsys):
    step(shell, "fetch", "read_file(task)")
    plan(shell, "gate review ok to count?")
    step(shell, "count", "len(task)")
    assert plan(shell, "run notes.txt --key g") is None
    assert "paused at step 'review': ok to count?; %plan resume g continues" in \
        capsys.readouterr().out
    assert Store(workspace / ".lackpy" / "plans.sqlite").read("g")["status"] == "paused"
    assert plan(shell, "resume g") == 11


def test_a_failed_run_raises_plan_step_error(shell):
    step(shell, "fetch", "read_file(task)")
    with pytest.raises(PlanStepError, match="no file 'missing.txt'"):
        plan(shell, "run missing.txt")


def test_run_many_over_a_python_list(shell, capsys):
    step(shell, "count", "len(read_file(task))")
    shell.user_ns["files"] = ["notes.txt", "nope.txt"]
    envelopes = plan(shell, "run-many files --concurrency 2")
    assert all(isinstance(e, Envelope) for e in envelopes)
    assert envelopes[0].payload == 11 and envelopes[1].error.type == "LackpyRuntimeError"
    shell.user_ns["word"] = "x"
    with pytest.raises(UsageError, match="takes a list; word is a str"):
        plan(shell, "run-many word")


def test_save_and_load(shell, workspace):
    step(shell, "count", "len(task)")
    plan(shell, "save counting")
    assert (workspace / ".lackpy" / "plans" / "counting.json").is_file()
    plan(shell, "clear")
    plan(shell, "load counting")
    assert plan(shell, "run abc") == 3
