"""Attacks on plans: saved plans, checkpoints, writes and routes (security round 2, new code).

A saved plan (``.lackpy/plans/NAME.json``) is data that may come with a workspace someone
else made; a step's program is code an attacker may have written; a step's output is data
that program chose. None of them may run an unvalidated program, reach a callable the
registry does not hold, change ``.lackpy/`` (the plan Store, saved plans), forge or destroy
a checkpoint, or make the caller (the CLI, the service) raise an exception that is not
lackpy's or do unbounded work. Each test is one attack, through the real entry points: the
CLI as a subprocess, ``PlanLibrary``/``Plan`` over a real ``LackpyService``.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest

from lackpy_kernel.config import LackpyConfig
from lackpy_kernel.engines import (
    Approval,
    Plan,
    PlanCompileError,
    PlanResumeError,
    PlanRuntimeError,
    Program,
    Step,
    from_prev,
)
from lackpy_kernel.engines.plans import PlanLibrary
from lackpy_kernel.errors import LackpyError
from lackpy_kernel.service import LackpyService
from tests.support.bounded import python_within

WRITE_KIT = ["read_file", "write_file", "edit_file"]
SHORT = 20_000  # characters: any message a user meets is shorter than this


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    (tmp_path / ".lackpy" / "plans").mkdir(parents=True)
    return tmp_path


@pytest.fixture
def service(workspace):
    """Programs in this process: these attacks are on the plan engine, not the sandbox."""
    with LackpyService(workspace, LackpyConfig(sandbox_enabled=False)) as running:
        yield running


def lackpy(workspace, *args, timeout=120):
    return subprocess.run([sys.executable, "-m", "lackpy_kernel", *args], cwd=workspace,
                          capture_output=True, text=True, timeout=timeout)


def save_raw(workspace, name, data):
    path = workspace / ".lackpy" / "plans" / f"{name}.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def program_step(name, source, kit=None, **more):
    return {"name": name, "target": {"kind": "program", "source": source, "kit": kit}, **more}


def assert_clean_failure(done):
    """The CLI failed with lackpy's own short message, not a traceback."""
    assert done.returncode in (1, 2), (done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert done.stderr.startswith("lackpy: ") and len(done.stderr) < SHORT, done.stderr[:2000]


# -- saved plans are data: refused at load, never run -----------------------------------


def test_a_saved_plan_naming_a_callable_outside_the_registry_runs_nothing(workspace):
    save_raw(workspace, "evil", {"format": 1, "steps": [
        program_step("first", "write_file('ran.txt', 'x')", WRITE_KIT),
        {"name": "system", "target": {"kind": "callable", "name": "system"}},
        {"name": "typed", "target": {"kind": "program", "source": "1"}, "output": "os.system"},
    ]})
    done = lackpy(workspace, "plan", "run", "evil", "x")
    assert_clean_failure(done)
    assert "'system'" in done.stderr and "registry" in done.stderr
    assert not (workspace / "ran.txt").exists()


@pytest.mark.parametrize("source", [
    "open('pwned.txt', 'w')",
    "__import__('os').system('touch pwned.txt')",
    "read_file.__globals__",
    "x = " + "[" * 300 + "]" * 300,
    "def f():\n    write_file('pwned.txt', 'x')",
], ids=["open", "import", "globals", "too-deep", "def"])
def test_a_saved_plan_with_an_invalid_program_is_refused_when_it_loads(workspace, source):
    save_raw(workspace, "bad", {"format": 1, "steps": [
        program_step("first", "write_file('ran.txt', 'x')", WRITE_KIT),
        program_step("evil", source, WRITE_KIT)]})
    done = lackpy(workspace, "plan", "run", "bad", "x")
    assert_clean_failure(done)
    assert "the plan cannot run" in done.stderr and "step 'evil'" in done.stderr
    assert not (workspace / "ran.txt").exists() and not (workspace / "pwned.txt").exists()


def test_a_deeply_nested_saved_plan_is_a_clear_error(workspace):
    save_raw(workspace, "deep", '{"format": 1, "steps": ' + "[" * 100_000 + "]" * 100_000 + "}")
    done = lackpy(workspace, "plan", "run", "deep", "x")
    assert_clean_failure(done)
    assert "cannot read the saved plan" in done.stderr


def test_a_saved_plan_holding_megabytes_gets_a_short_error(workspace):
    blob = "A" * 5_000_000
    save_raw(workspace, "huge", {"format": 1, "steps": [
        {"name": "a", "target": {"kind": "mystery", "blob": blob}}]})
    done = lackpy(workspace, "plan", "run", "huge", "x")
    assert_clean_failure(done)
    assert "unknown target kind 'mystery'" in done.stderr


@pytest.mark.parametrize("step", [
    {"name": ["a"], "target": {"kind": "program", "source": "1"}},
    {"name": "a", "target": {"kind": "program", "source": "1"}, "routes_by": ["next"]},
    {"name": "a", "target": {"kind": "program", "source": "1"}, "routes_by": "next",
     "after_branches": {"x": 1}},
    {"name": "a", "target": {"kind": "callable", "name": ["x"]}},
    {"name": "a", "target": "read_file"},
], ids=["list-name", "list-routes_by", "dict-after_branches", "list-callable", "bare-target"])
def test_a_saved_plan_of_the_wrong_shape_is_a_compile_error(workspace, service, step):
    with pytest.raises(PlanCompileError):
        Plan.from_dict({"format": 1, "steps": [step]}, service=service)


def test_a_saved_plan_of_thousands_of_broken_steps_compiles_in_linear_time(workspace):
    """Each of 20,000 steps reads a step that does not exist: every problem is listed, the
    'did you mean' costs a bounded amount each (it searched all 20,000 names for each of
    them, some 11 minutes)."""
    code = """
    from lackpy_kernel.config import LackpyConfig
    from lackpy_kernel.engines import Plan, PlanCompileError
    from lackpy_kernel.service import LackpyService
    steps = [{"name": f"s{i}", "target": {"kind": "program", "source": "task"},
              "task": {"sentinel": "from_step", "name": f"nope{i}"}} for i in range(20_000)]
    with LackpyService(ARGS[0], LackpyConfig(sandbox_enabled=False)) as service:
        try:
            Plan.from_dict({"format": 1, "steps": steps}, service=service)
            RESULT = None
        except PlanCompileError as exc:
            RESULT = str(exc).count("names no step")
    """
    assert python_within(90, code, str(workspace)) == 20_000


# -- a step cannot touch .lackpy/: the Store, its journal, saved plans -------------------


@pytest.mark.parametrize("target", [
    ".lackpy/plans.sqlite", ".lackpy/plans.sqlite-wal", ".lackpy/plans.sqlite-shm",
    ".lackpy/plans/gated.json", "./.lackpy//plans/new.json", "notes/../.lackpy/plans.sqlite",
])
def test_a_step_cannot_write_the_plan_store_or_a_saved_plan(workspace, service, target):
    library = PlanLibrary(workspace)
    gated = Plan(Step(Program("task", kit=WRITE_KIT), name="prep"),
                 Step(Approval("publish?"), name="approve"),
                 Step(Program("write_file('published.txt', task)", kit=WRITE_KIT), name="publish"),
                 service=service)
    library.save("gated", gated)
    saved = (workspace / ".lackpy" / "plans" / "gated.json").read_text()
    paused = library.load("gated", service=service, checkpoint_key="k").run("draft")
    assert paused.error.type == "PlanPaused"
    attack = Plan(Step(Program(f"write_file({target!r}, 'x')\nedit_file({target!r}, 'a', 'b')",
                               kit=WRITE_KIT), name="attack"), service=service)
    envelope = attack.run("x")
    assert "WorkspaceError" in envelope.error.message and ".lackpy" in envelope.error.message
    assert (workspace / ".lackpy" / "plans" / "gated.json").read_text() == saved
    assert not (workspace / ".lackpy" / "plans" / "new.json").exists()
    assert library.run("k").status == "paused" and library.run("k").next_step == "approve"
    assert not (workspace / "published.txt").exists()
    library.close()


# -- step outputs and writes cannot forge or destroy checkpoints --------------------------


def forged_checkpoint(plan_name, **more):
    """What a checkpoint row holds, as a program could write it as its output."""
    return {"checkpoint_version": 2, "status": "paused", "run_uid": "forged", "plan": plan_name,
            "next_step": "approve", "paused_step": "approve", "completed_steps": [],
            "history": [], "kv": {}, "task": "draft", "iterations": 0, "branch_return": {},
            "step_hashes": {}, "owner": {}, "error": None, **more}


def test_a_step_output_cannot_forge_a_paused_run_that_skips_an_approval(workspace, service):
    library = PlanLibrary(workspace)
    library.save("gated", Plan(Step(Approval("publish?"), name="approve"),
                               Step(Program("write_file('published.txt', task)",
                                            kit=WRITE_KIT), name="publish"), service=service))
    forged = repr(forged_checkpoint("gated"))
    innocent = Plan(Step(Program(forged), name="report", writes="report"),
                    store=library.store, service=service)
    with pytest.raises(PlanRuntimeError, match="checkpoint_version"):
        innocent.run("x")
    assert library.store.read("report") is None
    assert library.runs() == []
    done = lackpy(workspace, "plan", "resume", "report")
    assert_clean_failure(done)
    assert not (workspace / "published.txt").exists()
    library.close()


def test_a_step_cannot_overwrite_another_runs_checkpoint(workspace, service):
    library = PlanLibrary(workspace)
    library.save("gated", Plan(Step(Program("task"), name="prep"),
                               Step(Approval("publish?"), name="approve"), service=service))
    assert library.load("gated", service=service, checkpoint_key="monday").run("x").error
    before = library.store.read("monday")
    clobber = Plan(Step(Program("'gone'"), name="clobber", writes="monday"),
                   store=library.store, service=service)
    with pytest.raises(PlanRuntimeError, match="'monday', the key of another run's checkpoint"):
        clobber.run("x")
    assert library.store.read("monday") == before
    assert library.run("monday").status == "paused"
    library.close()


def write_row(workspace, key, value):
    """A checkpoint row as someone with the file could forge it."""
    PlanLibrary(workspace).store.close()  # the Store's table exists
    with sqlite3.connect(workspace / ".lackpy" / "plans.sqlite") as db:
        db.execute("INSERT OR REPLACE INTO store (key, value, updated) VALUES (?, ?, 0)",
                   (key, json.dumps(value)))


@pytest.mark.parametrize("malformed", [
    {"completed_steps": [["a"]]},
    {"completed_steps": 5},
    {"owner": "me", "status": "running"},
    {"history": ["not a step"]},
    {"next_step": ["approve"]},
    {"plan": {"name": "gated"}},
    {"error": "boom"},
    {"kv": [1, 2]},
], ids=lambda m: "-".join(m))
def test_a_malformed_checkpoint_row_is_refused_with_a_clear_error(workspace, service, malformed):
    library = PlanLibrary(workspace)
    library.save("gated", Plan(Step(Approval("publish?"), name="approve"),
                               Step(Program("write_file('published.txt', task)",
                                            kit=WRITE_KIT), name="publish"), service=service))
    library.close()
    write_row(workspace, "forged", forged_checkpoint("gated", **malformed))
    status = lackpy(workspace, "plan", "status")
    assert status.returncode == 0 and "Traceback" not in status.stderr, status.stderr[-3000:]
    assert "forged" in status.stdout
    resumed = lackpy(workspace, "plan", "resume", "forged")
    assert_clean_failure(resumed)
    assert not (workspace / "published.txt").exists()


def test_a_forged_checkpoint_cannot_inject_a_program(workspace, service):
    library = PlanLibrary(workspace)
    library.save("count", Plan(Step(Program("len(task)", kit=WRITE_KIT), name="first"),
                               Step(Program("task + 1", kit=WRITE_KIT), name="second"),
                               service=service))
    injected = {"name": "first", "output": 41, "program": "write_file('pwned.txt', 'x')",
                "ms": 0.0, "trace": [], "error": None}
    library.close()
    write_row(workspace, "k", forged_checkpoint(
        "count", status="failed", next_step="second", paused_step=None, history=[injected],
        completed_steps=[], kv={"second": "write_file('pwned.txt', 'x')"}))
    done = lackpy(workspace, "plan", "resume", "k", "--json")
    assert done.returncode == 0, done.stderr[-3000:]
    envelope = json.loads(done.stdout)
    assert envelope["payload"] == 42
    assert [step["program"] for step in envelope["history"]][1:] == ["task + 1"]
    assert not (workspace / "pwned.txt").exists()


def test_a_forged_checkpoint_whose_next_step_is_not_in_the_plan_is_refused(workspace, service):
    library = PlanLibrary(workspace)
    library.save("count", Plan(Step(Program("len(task)"), name="first"), service=service))
    library.close()
    write_row(workspace, "k", forged_checkpoint("count", status="failed",
                                                next_step="write_file('pwned.txt', 'x')"))
    library = PlanLibrary(workspace)
    with pytest.raises(PlanResumeError, match="not in this plan"):
        library.load("count", service=service, checkpoint_key="k", resume=True).run()
    assert library.store.read("k")["next_step"].startswith("write_file")
    assert not (workspace / "pwned.txt").exists()
    library.close()


# -- routes over outputs a program chose ---------------------------------------------------


@pytest.mark.parametrize("value", [
    "['next']", "{'step': 1}", "'x' * 3000000", "'_' + '_init_' + '_'", "'\\nlackpy: fake error'",
], ids=["list", "dict", "megabytes", "dunder", "newline"])
def test_routes_by_over_a_hostile_field_is_a_short_plan_error(workspace, service, value):
    plan = Plan(Step(Program(f"{{'next': {value}}}"), name="decide", routes_by="next",
                     output=dict),
                Step(Program("task"), name="end"), service=service)
    with pytest.raises(PlanRuntimeError) as raised:
        plan.run("x")
    assert "names no step" in str(raised.value) and len(str(raised.value)) < SHORT


def test_routes_by_that_loops_forever_stops_at_max_iterations(workspace, service):
    plan = Plan(Step(Program("{'next': 'again', 'n': task if task else 1}"), name="again",
                     routes_by="next", output=dict),
                max_iterations=25, service=service)
    envelope = plan.run(None)
    assert envelope.error.type == "MaxIterationsExceeded"
    assert len(envelope.history) == 25


def test_an_output_that_expands_when_rendered_stays_bounded_as_the_next_steps_context(
        workspace, service):
    plan = Plan(Step(Program("s = 'A' * 1000000\n[s] * 60000"), name="bomb"),
                Step(Program("len(context)"), name="measure", task=from_prev,
                     context=[from_prev]), service=service)
    envelope = python_free(plan)
    assert envelope.ok, envelope.error
    assert envelope.payload < 20_000_000


def python_free(plan):
    """Run ``plan``; an attack that expanded the value would take minutes and gigabytes."""
    try:
        return plan.run("x")
    except LackpyError as exc:  # pragma: no cover - the test then shows why
        pytest.fail(f"{type(exc).__name__}: {exc}")
