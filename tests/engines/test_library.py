"""A workspace's plans: saved in .lackpy/plans/, runs checkpointed in .lackpy/plans.sqlite."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from lackpy_kernel.engines import Plan, PlanPaused, Program, Step
from lackpy_kernel.engines.plans import PlanLibrary
from lackpy_kernel.errors import UsageError


def hold(task):
    raise PlanPaused("later")


def test_a_saved_plan_loads_with_its_name_and_the_workspace_store(workspace, service):
    library = PlanLibrary(workspace)
    path = library.save("count", Plan(Step(Program("len(task)"), name="n"), service=service))
    assert path == workspace / ".lackpy" / "plans" / "count.json"
    plan = library.load("count", service=service, checkpoint_key="k")
    assert plan.name == "count" and plan.store is library.store
    assert plan.run("abc").payload == 3
    assert library.store.path == workspace / ".lackpy" / "plans.sqlite"
    assert library.run("k").plan == "count" and library.names() == ["count"]


@pytest.mark.parametrize("name", ["../x", "a/b", "", ".hidden", "x..y"])
def test_a_plan_name_is_a_plain_file_stem(workspace, name):
    with pytest.raises(UsageError, match="invalid plan name"):
        PlanLibrary(workspace).path(name)


def test_status_tells_a_run_whose_process_died_from_a_running_one(workspace, service):
    library = PlanLibrary(workspace)
    library.save("held", Plan(Step(Program("len(task)"), name="n"), Step(hold),
                              service=service))
    library.load("held", {"hold": hold}, service=service, checkpoint_key="k").run("abc")
    assert library.run("k").status == "paused"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    saved = library.store.read("k")
    library.store.write("k", {**saved, "status": "running",
                              "owner": {**saved["owner"], "pid": gone.pid, "started": None}})
    assert library.run("k").status == "stopped"
    library.store.write("k", {**saved, "status": "running",
                              "owner": {**saved["owner"], "pid": os.getppid(), "started": None}})
    assert library.run("k").status == "running"
    assert [run.key for run in library.runs()] == ["k"]


def test_a_run_not_started_from_a_saved_plan_cannot_be_resumed_by_key(workspace, service):
    library = PlanLibrary(workspace)
    Plan(Step(hold), store=library.store, checkpoint_key="k").run(None)
    with pytest.raises(UsageError, match="was not started from a saved plan"):
        library.plan_for("k")
