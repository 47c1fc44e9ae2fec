"""ReplanEngine: a planner decides each round; parallel tasks run together, lackpy tasks are
validated first, every round is checkpointed, and a run killed with SIGKILL resumes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from lackpy_kernel.engines import (
    Agent,
    PlanCompileError,
    PlanResumeError,
    PlanRound,
    ReplanEngine,
    Store,
    Task,
)
from lackpy_kernel.errors import UsageError
from tests.support import agents
from tests.support import loopback as lb

ROOT = Path(__file__).resolve().parents[2]
PATIENCE_S = 120.0


def scripted(*rounds, answer="finished"):
    """A planner that plays ``rounds`` (lists of Tasks) in order, then is done; it keeps the
    histories it was given."""
    seen: list[list[dict]] = []

    def planner(task, history):
        seen.append(json.loads(json.dumps(history)))
        if len(history) < len(rounds):
            return PlanRound(list(rounds[len(history)]))
        return PlanRound(done=True, answer=answer)

    planner.seen = seen
    return planner


def test_rounds_run_their_tasks_and_the_planner_sees_each_result(service):
    planner = scripted([Task("read_file", {"path": "notes.txt"})],
                       [Task("find_files", {"pattern": "*.txt"})], answer="two rounds")
    envelope = Agent(ReplanEngine(), tools=[planner, "read_file", "find_files"],
                     service=service).run("look around")
    assert envelope.ok and envelope.payload == "two rounds"
    assert [step.name for step in envelope.history] == ["round 1", "round 2", "round 3"]
    assert [e.tool for e in envelope.trace] == ["read_file", "find_files"]
    first_seen, second_seen, third_seen = planner.seen
    assert first_seen == []
    assert second_seen[0]["tasks"] == [{"tool": "read_file", "kwargs": {"path": "notes.txt"},
                                        "parallel": False, "ok": True,
                                        "output": "alpha\nbeta\ngamma\n", "error": None}]
    assert third_seen[1]["tasks"][0]["output"] == ["notes.txt", "todo.txt"]


def test_parallel_tasks_run_together_and_the_others_after_them_in_order(service):
    together = threading.Barrier(2, timeout=60)
    events: list[str] = []

    def side(name: str) -> str:
        """Meets the other parallel task."""
        events.append(f"start {name}")
        together.wait()
        events.append(f"end {name}")
        return name

    def after(name: str) -> str:
        """Runs once the parallel ones are over."""
        events.append(f"after {name}")
        return name

    planner = scripted([Task("after", {"name": "x"}), Task("side", {"name": "a"}, parallel=True),
                        Task("side", {"name": "b"}, parallel=True), Task("after", {"name": "y"})])
    envelope = Agent(ReplanEngine(), tools=[planner, side, after], service=service).run("go")
    assert envelope.ok
    assert events[-2:] == ["after x", "after y"]
    assert sorted(events[:4]) == ["end a", "end b", "start a", "start b"]
    record = envelope.history[0].output
    assert [task["output"] for task in record["tasks"]] == ["x", "a", "b", "y"]  # as planned


def test_a_lackpy_task_is_validated_before_it_runs(service, workspace):
    planner = scripted([Task("lackpy", {"program": "write_file('x.txt', 'y')\nopen('x.txt')"})],
                       [Task("lackpy", {"program": "len(read_file('notes.txt'))"})])
    envelope = Agent(ReplanEngine(), tools=[planner, "read_file", "write_file"],
                     service=service, auto_run="write").run("go")
    bad, good = (record.output["tasks"][0] for record in envelope.history[:2])
    assert not bad["ok"] and bad["error"].startswith(
        "UsageError: the program is not valid lackpy, nothing ran: line 2, col 1: the name 'open'")
    assert not (workspace / "x.txt").exists()
    assert good["ok"] and good["output"] == 17


def test_a_task_for_an_unknown_tool_or_with_bad_kwargs_is_an_error_in_the_history(service):
    planner = scripted([Task("reed_file", {"path": "notes.txt"}),
                        Task("read_file", {"paht": "notes.txt"}),
                        Task("planner", {"task": "x", "history": []})])
    envelope = Agent(ReplanEngine(), tools=[planner, "read_file"], service=service).run("go")
    errors = [task["error"] for task in envelope.history[0].output["tasks"]]
    assert errors == ["UnknownTool: there is no tool 'reed_file'; did you mean 'read_file'?",
                      "BadArguments: read_file: there is no argument 'paht'; did you mean "
                      "'path'? (read_file takes path)",
                      "UnknownTool: the planner plans; it is not a task"]


def test_every_round_is_checkpointed(service, workspace):
    store = Store(workspace / "runs.sqlite")
    checkpoints = []

    def planner(task, history):
        checkpoints.append(store.read("k"))
        if len(history) < 2:
            return PlanRound([Task("read_file", {"path": "notes.txt"})])
        return PlanRound(done=True, answer=len(history))

    engine = ReplanEngine(store=store, checkpoint_key="k")
    envelope = Agent(engine, tools=[planner, "read_file"], service=service).run("go")
    assert envelope.payload == 2
    assert [(c["status"], c["iterations"], len(c["history"])) for c in checkpoints] == [
        ("running", 0, 0), ("running", 1, 1), ("running", 2, 2)]
    final = store.read("k")
    assert final["status"] == "done" and final["next_step"] is None and final["iterations"] == 3
    assert final["task"] == "go" and final["plan"] == "replan"


def test_a_planner_that_fails_ends_the_run_with_its_error(service, workspace):
    def planner(task, history):
        raise LookupError("no idea what to do")

    store = Store(workspace / "runs.sqlite")
    envelope = Agent(ReplanEngine(store=store, checkpoint_key="k"), tools=[planner, "read_file"],
                     service=service).run("go")
    assert envelope.error.type == "LookupError" and "no idea" in envelope.error.message
    assert store.read("k")["status"] == "failed"


def test_a_planner_answer_that_is_not_a_round_is_an_error(service):
    def planner(task, history):
        return {"tasks": [{"tool": "read_file"}], "done": "soon"}

    envelope = Agent(ReplanEngine(), tools=[planner, "read_file"], service=service).run("go")
    assert envelope.error.type == "TypeError"
    assert envelope.error.message == "the planner's round.done must be a boolean, not str"


def test_max_rounds_stops_a_planner_that_never_finishes(service):
    def planner(task, history):
        return PlanRound([Task("read_file", {"path": "notes.txt"})])

    envelope = Agent(ReplanEngine(max_rounds=3), tools=[planner, "read_file"],
                     service=service).run("go")
    assert envelope.error.type == "MaxRoundsExceeded" and len(envelope.history) == 3


def test_an_agent_without_a_planner_is_told_what_to_add(service):
    with pytest.raises(UsageError, match="ReplanEngine needs a tool named 'planner'"):
        Agent(ReplanEngine(), tools=["read_file"], service=service).run("go")


@pytest.mark.parametrize(("options", "said"), [
    ({"max_rounds": 0}, "max_rounds=0"),
    ({"checkpoint_key": "k"}, "without store="),
    ({"resume": True}, "resume=True needs"),
])
def test_options_that_cannot_work_fail_at_construction(options, said):
    with pytest.raises(PlanCompileError, match=said):
        ReplanEngine(**options)


def test_resume_refuses_a_checkpoint_of_other_tools(service, workspace):
    store = Store(workspace / "runs.sqlite")
    Agent(ReplanEngine(store=store, checkpoint_key="k"), tools=[scripted([]), "read_file"],
          service=service).run("go")
    store.write("k", {**store.read("k"), "status": "paused", "next_step": "round"})
    with pytest.raises(PlanResumeError, match="changed since the checkpoint"):
        Agent(ReplanEngine(store=store, checkpoint_key="k", resume=True),
              tools=[scripted([]), "read_file", "find_files"], service=service).run("go")


def test_a_planner_agent_sees_the_tools_and_the_history_and_answers_a_plan_round(
        model_env, model_server, service, workspace):
    round_one = json.dumps({"tasks": [{"tool": "read_file", "kwargs": {"path": "notes.txt"},
                                       "parallel": True}]})
    model_server.script(lb.tool_turn("anthropic", round_one),
                        lb.tool_turn("anthropic", json.dumps({"done": True, "answer": "3 lines"})))
    planner = Agent(agents.engine("anthropic", model_server, workspace), tools=[],
                    service=service, name="planner", output=PlanRound)
    envelope = Agent(ReplanEngine(), tools=[planner, "read_file"], service=service).run(
        "how long are the notes?")
    assert envelope.ok and envelope.payload == "3 lines"
    first, second = (request.json for request in model_server.requests)
    assert '"required": ["tool"]' in first["system"]  # the PlanRound schema
    prompt = first["messages"][0]["content"]
    assert prompt.startswith("Task: how long are the notes?")
    assert '"name": "read_file"' in prompt and '"name": "planner"' not in prompt
    assert "(none yet)" in prompt
    assert '"output": "alpha\\nbeta\\ngamma\\n"' in second["messages"][0]["content"]


# -- a run killed with SIGKILL, then resumed ---------------------------------------------


def start(place: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.support.replan_runner", str(place), "nightly", *extra],
        cwd=place, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def journal(place: Path) -> Counter:
    path = place / "journal.txt"
    return Counter(path.read_text().splitlines() if path.exists() else [])


def test_a_run_killed_in_a_round_resumes_at_that_round(workspace):
    (workspace / "block.txt").write_text("two")
    process = start(workspace)
    deadline = time.monotonic() + PATIENCE_S
    while journal(workspace)["start two"] < 1:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the run never reached round 2"
        time.sleep(0.005)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=PATIENCE_S)
    checkpoint = Store(workspace / "replan.sqlite").read("nightly")
    assert checkpoint["status"] == "running" and checkpoint["iterations"] == 1

    (workspace / "block.txt").unlink()
    resumed = start(workspace, "--resume")
    out, err = resumed.communicate(timeout=PATIENCE_S)
    assert resumed.returncode == 0, err
    envelope = json.loads(out)
    assert envelope["payload"] == ["alpha\nbeta\ngamma\n", "ONE", "TWO", 3]
    assert [step["name"] for step in envelope["history"]] == [
        "round 1", "round 2", "round 3", "round 4"]
    assert journal(workspace) == Counter({"plan 1": 1, "start one": 1, "plan 2": 2,
                                          "start two": 2, "plan 3": 1, "plan 4": 1})
    assert Store(workspace / "replan.sqlite").read("nightly")["status"] == "done"
