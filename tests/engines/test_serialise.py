"""to_dict / from_dict: a plan as data, lossless, with callables found by name."""

from __future__ import annotations

import json
from typing import TypedDict

import pytest

from lackpy_kernel.engines import (
    Approval,
    Delegate,
    Plan,
    PlanCompileError,
    PlanRegistryError,
    Program,
    Step,
    Store,
    from_parallel_all,
    from_start,
    from_step,
)
from lackpy_kernel.errors import UsageError


class Verdict(TypedDict):
    next: str


def summarise(task, context):
    return f"{task} / {context}"


def is_long(output):
    return len(output) > 10


def triage(task):
    return {"next": "report"}


REGISTRY = {"summarise": summarise, "is_long": is_long, "triage": triage, "Verdict": Verdict}


def rich_plan(service, **options) -> Plan:
    return Plan(
        Step("read_file", writes="text"),
        Step(Program("len(task)"), name="size", parallel=True, writes="size"),
        Step(Delegate("find all .py files", kit=["find_files"]), name="py", parallel=True,
             task="ignored", output=list),
        Step(summarise, task=from_start, context=[from_step("read_file"), "note",
                                                  from_parallel_all("size")]),
        Step(triage, output=Verdict, routes_by="next", input=str),
        Step(Program("task", kit=["read_file"]), name="check",
             routes={"report": is_long, "size": is_long}, after_branches="report"),
        Step(Approval("publish?"), name="gate"),
        Step(Program("task"), name="report", task={"literal": [1, 2]}),
        kit=["read_file", "find_files"], max_iterations=12, name="rich",
        service=service, **options)


def test_a_round_trip_gives_an_identical_dict(service):
    saved = rich_plan(service, store=Store(), checkpoint_key="k").to_dict()
    loaded = Plan.from_dict(json.loads(json.dumps(saved)), REGISTRY, store=Store(),
                            service=service)
    assert loaded.to_dict() == saved


def test_the_dict_keeps_route_order_sentinels_and_limits(service):
    saved = rich_plan(service).to_dict()
    check = next(step for step in saved["steps"] if step["name"] == "check")
    assert check["routes"] == [["report", "is_long"], ["size", "is_long"]]
    summary = next(step for step in saved["steps"] if step["name"] == "summarise")
    assert summary["task"] == {"sentinel": "from_start"}
    assert summary["context"] == [{"sentinel": "from_step", "name": "read_file"}, "note",
                                  {"sentinel": "from_parallel_all", "name": "size"}]
    assert (saved["max_iterations"], saved["kit"], saved["name"]) == (
        12, ["read_file", "find_files"], "rich")


def test_a_loaded_plan_runs_like_the_original(service):
    original = Plan(Step("read_file"), Step(Program("len(task)"), name="n"), service=service)
    loaded = Plan.from_dict(original.to_dict(), service=service)
    assert loaded.run("notes.txt").payload == original.run("notes.txt").payload == 17


def test_a_callable_missing_from_the_registry_is_a_key_error_naming_it(service):
    saved = rich_plan(service).to_dict()
    with pytest.raises(KeyError) as caught:
        Plan.from_dict(saved, {k: v for k, v in REGISTRY.items() if k != "summarise"},
                       service=service)
    assert isinstance(caught.value, PlanRegistryError)
    assert "'summarise' (a step's callable) is not in the registry" in str(caught.value)


def test_a_missing_route_predicate_is_named_too(service):
    registry = {k: v for k, v in REGISTRY.items() if k != "is_long"}
    with pytest.raises(PlanRegistryError, match="'is_long' \\(the route predicate to 'report'\\)"):
        Plan.from_dict(rich_plan(service).to_dict(), registry, service=service)


def test_a_lambda_has_no_name_to_save_it_by():
    def first(task):
        return task

    plan = Plan(Step(first, routes={"first": lambda out: False}))
    with pytest.raises(UsageError, match="the route to 'first' has no name to save it by"):
        plan.to_dict()


def test_from_dict_checks_the_plan_again(service):
    saved = Plan(Step(Program("len(task)"), name="n"), service=service).to_dict()
    saved["steps"][0]["target"]["source"] = "import os"
    with pytest.raises(PlanCompileError, match="step 'n': line 1, col 1: Import is not allowed"):
        Plan.from_dict(saved, service=service)


@pytest.mark.parametrize("data", [
    {"steps": []}, {"format": 1, "steps": "x"}, [],
    {"format": 1, "steps": [{"target": {"kind": "module", "path": "os:system"}}]},
    {"format": 1, "steps": [{"name": "x"}]},
    {"format": 1, "steps": ["x"]},
    {"format": 1, "steps": [{"target": "read_file"}]},
])
def test_data_that_is_not_a_plan_is_refused_and_nothing_is_imported(data):
    with pytest.raises(PlanCompileError):
        Plan.from_dict(data, {})


def test_overrides_replace_saved_options(service):
    saved = Plan(Step("read_file"), service=service).to_dict()
    plan = Plan.from_dict(saved, store=Store(), checkpoint_key="nightly", resume=True,
                          service=service)
    assert (plan.checkpoint_key, plan.resume) == ("nightly", True)
