"""The progress card (``PROGRESS_MIME``) of a plan run on Temporal: ``%plan run --temporal``
ends its cell at once and the display that follows the run carries the card beside the
text, its steps with status, worker and time, and once the run ends its output (or its
error). On the real Temporal dev server with a ``lackpy worker``, through the lackpy kernel."""

from __future__ import annotations

import time
import uuid

import pytest

from lackpy_kernel.engines.temporal import TemporalRun
from lackpy_kernel.notebook.bundles import PROGRESS_MIME, remote_card, remote_run_bundle
from tests.support.hosts import running_host
from tests.support.kernel import make_workspace
from tests.support.shell import extension_shell, magics_of
from tests.support.temporal import (
    WorkerProcess,
    temporal_server,  # noqa: F401 - the module's server fixture
)

PATIENCE_S = 90.0
STATUS = {"plan": "counts", "status": "running", "steps": ["fetch", "size"], "next_step": "size",
          "running": ["size"], "completed_steps": ["fetch"], "task": "notes.txt",
          "history": [{"name": "fetch", "output": "a\nb\n", "ms": 3.5}],
          "attempts": {"fetch": 1, "size": 2}, "workers": {"fetch": "7@box", "size": "8@box"}}


def test_a_remote_runs_card_lists_its_steps_with_worker_attempt_and_time():
    run = TemporalRun.from_status("k1", STATUS, pending=[
        {"step": "size", "attempt": 2, "why": "the worker went away"}])
    card = remote_card("plan on 'notes.txt', key k1", run).to_dict()
    assert (card["kind"], card["state"]) == ("plan", "running")
    assert [(i["name"], i["status"], i["detail"], i["ms"]) for i in card["items"]] == [
        ("fetch", "done", "on 7@box", "3.5 ms"),
        ("size", "retrying: the worker went away", "on 8@box, attempt 2", "")]
    assert "%plan status k1 shows it" in card["note"]
    assert PROGRESS_MIME in remote_run_bundle("t", run)
    assert PROGRESS_MIME not in remote_run_bundle("t", run, trace=True)  # %plan status: tables


@pytest.fixture(scope="module")
def queue():
    return f"cards-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def host(installed_kernelspec, temporal_server, queue, tmp_path_factory):  # noqa: F811
    place = make_workspace(tmp_path_factory.mktemp("remote-cards"), "[sandbox]\ntimeout = 60\n")
    worker = WorkerProcess(temporal_server.address, queue, place)
    try:
        with running_host("kernel", place, tmp_path_factory.mktemp("ipython")) as running:
            yield running
    finally:
        worker.stop()


def _last_card(host, display_id: str) -> dict:
    """Read iopub (whichever cell a message came under) until the display ``display_id``
    shows a card of a run that ended; that card."""
    deadline = time.monotonic() + PATIENCE_S
    while time.monotonic() < deadline:
        message = host.kernel.client.get_iopub_msg(timeout=PATIENCE_S)
        content = message["content"]
        if message["msg_type"] == "update_display_data" and \
                content["transient"]["display_id"] == display_id and \
                content["data"].get(PROGRESS_MIME, {}).get("state", "running") != "running":
            return content["data"][PROGRESS_MIME]
    raise AssertionError(f"the display {display_id} never showed an ended run")


def test_a_remote_run_sends_its_card_beside_the_text_until_it_ends(host, temporal_server, queue):  # noqa: F811
    for cell in ("%plan clear", "%%step fetch\nread_file(task)", "%%step size\nlen(task)"):
        assert host.run(cell).ok
    where = f"--temporal {temporal_server.address} --task-queue {queue}"
    shown = host.kernel.execute(f"%plan run notes.txt {where}")
    assert shown.reply["content"]["status"] == "ok"  # the cell is over; the run goes on
    (started,) = shown.of("display_data")
    card = _last_card(host, started["transient"]["display_id"])
    assert card["state"] == "done"
    assert [(i["name"], i["status"]) for i in card["items"]] == [("fetch", "done"),
                                                                ("size", "done")]
    assert all(i["detail"].startswith("on ") and i["ms"].endswith(" ms") for i in card["items"])
    assert (card["program_label"], card["program"]) == ("output", "17")

    failed = host.kernel.execute(f"%plan run missing.txt {where}")
    (started,) = failed.of("display_data")
    card = _last_card(host, started["transient"]["display_id"])
    assert card["state"] == "failed" and card["items"][0]["status"] == "failed"
    assert "missing.txt" in card["note"] and card["program"] == ""


def test_closing_the_notebook_stops_following_a_run_that_goes_on(temporal_server,  # noqa: F811
                                                                 tmp_path_factory):
    place = make_workspace(tmp_path_factory.mktemp("unfollowed"))
    with extension_shell(place, tmp_path_factory.mktemp("ipython")) as shell:
        shell.run_cell_magic("step", "fetch", "read_file(task)")
        shell.run_line_magic("plan", f"run notes.txt --temporal {temporal_server.address} "
                                     f"--task-queue nobody-{uuid.uuid4().hex[:8]}")
        magics = magics_of(shell)
        following = list(magics.core._following)  # no worker serves the queue: it waits
        assert following and not any(task.done() for task in following)
        magics.close()
        assert all(task.cancelled() for task in following) and not magics.core._following
