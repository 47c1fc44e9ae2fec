"""`lackpy plan`: a plan saved in a workspace runs, pauses and resumes from the shell."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lackpy_kernel.engines import Plan, Program, Step, from_start, from_step
from lackpy_kernel.engines.plans import PlanLibrary

APPROVAL = '''
from pathlib import Path
from lackpy_kernel.engines import PlanPaused

def approve(task):
    if not Path("approved.txt").exists():
        raise PlanPaused("waiting for approved.txt")
    return task

REGISTRY = {"approve": approve}
'''


def lackpy(*args, cwd):
    return subprocess.run([sys.executable, "-m", "lackpy_kernel", "plan", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def saved(workspace, service):
    library = PlanLibrary(workspace)
    library.save("wordcount", Plan(
        Step("read_file", writes="text"),
        Step(Program("len(task.splitlines())"), name="lines", parallel=True, writes="lines"),
        Step(Program("len(task.split())"), name="words", parallel=True, writes="words"),
        Step(Program("{'file': context, 'lines': task}"), name="report",
             task=from_step("lines"), context=from_start),
        service=service))
    (workspace / "approval.py").write_text(APPROVAL)
    namespace: dict = {}
    exec(APPROVAL, namespace)
    library.save("gated", Plan(Step("read_file"), Step(namespace["approve"]),
                               Step(Program("len(task)"), name="size"), service=service))
    return workspace


def test_plan_run_prints_each_step_and_the_output(saved):
    done = lackpy("run", "wordcount", "notes.txt", cwd=saved)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[0] for line in lines[:4]] == ["read_file", "lines", "words", "report"]
    assert lines[4:] == ["--- output", "{'file': 'notes.txt', 'lines': 3}"]


def test_plan_run_json_is_the_envelope(saved):
    done = lackpy("run", "wordcount", "notes.txt", "--json", cwd=saved)
    envelope = json.loads(done.stdout)
    assert envelope["payload"] == {"file": "notes.txt", "lines": 3} and envelope["error"] is None
    assert [entry["tool"] for entry in envelope["trace"]] == ["read_file"]


def test_a_paused_run_resumes_from_the_shell(saved):
    paused = lackpy("run", "gated", "notes.txt", "--key", "k", "--registry", "approval:REGISTRY",
                    cwd=saved)
    assert paused.returncode == 1
    assert "PlanPaused: paused at step 'approve': waiting for approved.txt" in paused.stderr
    assert "`lackpy plan resume k` continues there" in paused.stderr
    status = lackpy("status", "k", "--json", cwd=saved)
    (run,) = json.loads(status.stdout)
    assert (run["status"], run["next_step"], run["plan"]) == ("paused", "approve", "gated")

    (saved / "approved.txt").touch()
    resumed = lackpy("resume", "k", "--registry", "approval:REGISTRY", cwd=saved)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.endswith("--- output\n17\n")
    assert "k " in lackpy("status", cwd=saved).stdout and "done" in lackpy("status", cwd=saved).stdout


def test_restart_runs_a_finished_run_again(saved):
    lackpy("run", "wordcount", "notes.txt", "--key", "nightly", cwd=saved)
    (saved / "notes.txt").write_text("one\n")
    again = lackpy("restart", "nightly", "--json", cwd=saved)
    assert json.loads(again.stdout)["payload"] == {"file": "notes.txt", "lines": 1}


def test_a_failed_step_exits_1_with_its_error(saved):
    done = lackpy("run", "wordcount", "missing.txt", cwd=saved)
    assert done.returncode == 1 and "no file 'missing.txt'" in done.stderr


@pytest.mark.parametrize(("args", "said"), [
    (("run", "nope", "x"), "no saved plan 'nope'"),
    (("run", "../etc/passwd", "x"), "invalid plan name"),
    (("resume", "never"), "no plan run under the key 'never'"),
    (("run", "gated", "x", "--registry", "no_such_module:R"), "--registry no_such_module:R"),
    (("run", "gated", "x"), "'approve' (a step's callable) is not in the registry"),
])
def test_bad_input_is_a_usage_error_that_says_what_to_do(saved, args, said):
    done = lackpy(*args, cwd=saved)
    assert done.returncode in (1, 2) and said in done.stderr, done.stderr


def test_plan_list_names_the_saved_plans(saved):
    assert lackpy("list", cwd=saved).stdout.split() == ["gated", "wordcount"]


def test_a_run_paused_on_a_file_change_resumes_from_the_shell_approving_it(saved):
    (saved / ".lackpy" / "config.toml").write_text('[sandbox]\napprove = "write"\n')
    library = PlanLibrary(saved)
    library.save("append", Plan(Step(Program(
        "write_file('todo.txt', read_file('todo.txt') + task + '\\n')\n'added'"),
        name="add"), kit=["read_file", "write_file"]))
    library.close()

    paused = lackpy("run", "append", "ship it", "--key", "todo", cwd=saved)
    assert paused.returncode == 1
    assert "step 'add' would change files (1 file changed: +1 -0" in paused.stderr
    assert "+ship it" in paused.stderr  # the diff, as the person approves it
    assert "`lackpy plan resume todo --approve` continues there" in paused.stderr
    assert (saved / "todo.txt").read_text() == "write tests\n"

    again = lackpy("resume", "todo", cwd=saved)  # resuming alone does not approve it
    assert again.returncode == 1 and "--approve" in again.stderr
    assert (saved / "todo.txt").read_text() == "write tests\n"

    approved = lackpy("resume", "todo", "--approve", cwd=saved)
    assert approved.returncode == 0, approved.stderr
    assert approved.stdout.endswith("--- output\nadded\n")
    assert (saved / "todo.txt").read_text() == "write tests\nship it\n"
    assert "done" in lackpy("status", "todo", cwd=saved).stdout
