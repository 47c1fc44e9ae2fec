"""Attacks on the Temporal engine's ``lackpy.forget`` activity: a run forgets only its own
workflow's commit records and allowed calls, never another workflow's, whatever workflow id
its request names. The activity runs in the Temporal SDK's activity environment, which gives
it the id of the workflow that scheduled it."""

from __future__ import annotations

import dataclasses

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from lackpy_kernel.engines.plans import Ledger, Store
from lackpy_kernel.engines.temporal import StepActivities
from lackpy_kernel.engines.temporal._activities import ForgetRequest
from lackpy_kernel.kit.changes import Change


def allowed_call(store: Store, workflow: str) -> Ledger:
    ledger = Ledger(store, f"temporal:{workflow}:write#1")
    ledger.allow("write", Change.of_call("post", "'hello'"))
    return ledger


def scheduled_by(workflow: str) -> ActivityEnvironment:
    environment = ActivityEnvironment()
    environment.info = dataclasses.replace(environment.info, workflow_id=workflow)
    return environment


async def test_a_workflow_cannot_forget_the_records_of_another(tmp_path):
    store = Store()
    activities = StepActivities(workspace=tmp_path, registry={}, config=None, store=store,
                                identity="here:1")
    victim, own = allowed_call(store, "victim"), allowed_call(store, "attacker")
    with pytest.raises(ApplicationError, match="forgets only its own") as refused:
        await scheduled_by("attacker").run(activities.forget,
                                           ForgetRequest("victim", ["write#1"]))
    assert refused.value.non_retryable
    assert victim.allowed("write") and own.allowed("write")
    await scheduled_by("attacker").run(activities.forget, ForgetRequest("attacker", ["write#1"]))
    assert victim.allowed("write") and not own.allowed("write")
    activities.close()
