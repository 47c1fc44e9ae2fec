"""The progress cards (``PROGRESS_MIME``) the Lab extension draws for ``%delegate``, a plan's
run and an agent's, sent beside the text every front end shows: the text reads as before,
the card says the same as data (tiers, steps or turns, their status, the tier that
answered, the program). In both hosts (the lackpy kernel, a Python kernel with the
extension), through jupyter_client."""

from __future__ import annotations

import time

from lackpy_kernel.infer import (
    CorrectionStep,
    GenerationResult,
    ProgramStreaming,
    ProviderFailed,
    ProviderTried,
    ProviderUnavailable,
)
from lackpy_kernel.lang import Grade
from lackpy_kernel.notebook.bundles import (
    PROGRESS_MIME,
    GenerationProgress,
    generation_progress,
    progress_bundle,
    table_bundle,
    turns_bundle,
)
from lackpy_kernel.service import Delegation
from tests.support.hosts import host_with
from tests.support.kernel import make_workspace

TITLE = "delegating: count the notes ..."
EVENTS = [ProviderUnavailable("templates", "no templates yet"), ProviderTried("local", "model"),
          ProgramStreaming("local", "generate", "len(read_fi"),
          CorrectionStep("local", "cleanup", "removed a fence", False),
          ProviderFailed("local", "still invalid after 2 tries"), ProviderTried("rules", "rules")]


def _items(card):
    return [(item["name"], item["status"]) for item in card["items"]]


def test_a_delegate_card_follows_the_tiers_each_on_one_line_with_its_latest_status():
    progress = GenerationProgress(TITLE)
    shown = [progress.add(event) for event in EVENTS]
    assert [bundle["text/plain"] for bundle in shown] == [
        f"{TITLE}\n{generation_progress(EVENTS[:n])}" for n in range(1, len(EVENTS) + 1)]
    streaming = shown[2][PROGRESS_MIME]
    assert (streaming["program_label"], streaming["program"]) == ("local is writing (generate)",
                                                                  "len(read_fi")
    card = shown[-1][PROGRESS_MIME]
    assert card["kind"] == "delegate" and card["state"] == "running" and card["title"] == TITLE
    assert _items(card) == [("templates", "unavailable"), ("local", "no program"),
                            ("local: cleanup", "still invalid"), ("rules", "trying")]
    assert card["items"][1]["detail"] == "still invalid after 2 tries"
    assert card["program"] == ""  # the streamed text went with the next step


def test_a_delegate_card_ends_with_the_tier_that_answered_its_program_and_grade():
    progress = GenerationProgress(TITLE)
    for event in EVENTS:
        progress.add(event)
    program = "len(read_file('notes.txt').splitlines())"
    delegation = Delegation("count the notes", GenerationResult(program, "rules", 1.5, kind="rules"),
                            Grade(1, 1))
    last = progress.last_bundle("done", delegation)
    assert last["text/plain"] == TITLE  # the text ends as it began
    card = last[PROGRESS_MIME]
    assert (card["state"], card["badge"], card["program"]) == ("done", "rules", program)
    assert _items(card)[-1] == ("rules", "answered") and card["items"][-1]["ms"] == "1.5 ms"
    assert card["note"] == "grade w=1 d=1"  # "written by rules in 1.5 ms" is the text below
    stopped = GenerationProgress(TITLE)
    for event in EVENTS[:3]:  # stopped while a model streams
        stopped.add(event)
    card = stopped.last_bundle("interrupted")[PROGRESS_MIME]
    assert (card["state"], card["program"], card["program_label"]) == ("interrupted", "", "")
    assert _items(card) == [("templates", "unavailable"), ("local", "trying")]


def test_plan_and_agent_cards_carry_their_rows_and_the_text_is_the_table():
    rows = [["fetch", "done", "1", "3.5 ms"], ["lines", "running", "2", ""]]
    plan = progress_bundle("plan on 'x'", rows, "running")
    assert plan["text/plain"] == "plan on 'x'\n" + table_bundle(["step", "status", "runs", "ms"],
                                                               rows)["text/plain"]
    assert [(i["name"], i["status"], i["detail"], i["ms"]) for i in plan[PROGRESS_MIME]["items"]] == [
        ("fetch", "done", "", "3.5 ms"), ("lines", "running", "ran 2 times", "")]
    turns = turns_bundle("", [["1", "read_file(path='a')", "ok", "2.0 ms"]], "round", "failed")
    card = turns[PROGRESS_MIME]
    assert (card["kind"], card["state"]) == ("replan", "failed")
    assert [(i["name"], i["detail"]) for i in card["items"]] == [("round 1", "read_file(path='a')")]
    assert turns_bundle("agent: x", [])["text/plain"] == "agent: x"


host = host_with(lambda folder: make_workspace(folder, '[sandbox]\ntimeout = 60\napprove = "never"\n'),
                 prefix="cards")


def test_delegate_sends_its_card_beside_the_text_and_ends_with_the_tier_that_answered(host):
    shown = host.run("%delegate read the file notes.txt")
    assert shown.status == "ok", shown.evalue
    title = "delegating: read the file notes.txt ..."
    assert shown.displays == [{"text/plain": title}]
    last = shown.updates[-1]
    assert last["text/plain"] == title
    card = last[PROGRESS_MIME]
    assert (card["state"], card["badge"]) == ("done", "rules")
    assert ("rules", "answered") in _items(card)
    assert card["program"] in shown.next_input["text"]
    assert all(update[PROGRESS_MIME]["state"] == "running" for update in shown.updates[:-1])


def test_a_plan_runs_card_follows_its_steps_and_ends_in_the_final_table(host):
    host.run("%plan clear")
    host.run("%%step fetch\nread_file(task)")
    host.run("%%step lines\nlen(task.splitlines())")
    shown = host.run("%plan run notes.txt")
    assert shown.status == "ok", shown.evalue
    live, final = shown.displays
    assert live == {"text/plain": "plan on 'notes.txt'"}
    assert any(("fetch", "running") in _items(u[PROGRESS_MIME]) for u in shown.updates
               if PROGRESS_MIME in u)
    assert final[PROGRESS_MIME]["state"] == "done"
    assert _items(final[PROGRESS_MIME]) == [("fetch", "done"), ("lines", "done")]
    failed = host.run("%plan run missing.txt")
    assert failed.status == "error"
    assert failed.displays[-1][PROGRESS_MIME]["state"] == "failed"
    assert _items(failed.displays[-1][PROGRESS_MIME])[0] == ("fetch", "failed")


def test_a_run_manys_card_lists_each_task_with_its_status_outcome_and_time(host):
    host.run("%plan clear")
    host.run("%%step size\nlen(read_file(task))")
    host.run("files = ['notes.txt', 'missing.txt']")  # lackpy in the kernel, Python in IPython
    shown = host.run("%plan run-many files --concurrency 1")
    assert shown.ok, shown.evalue
    live, final = shown.displays
    assert live == {"text/plain": "plan on 2 tasks"}
    running = [_items(u[PROGRESS_MIME]) for u in shown.updates if PROGRESS_MIME in u]
    assert [("'notes.txt'", "running"), ("'missing.txt'", "waiting")] in running  # one at a time
    card = final[PROGRESS_MIME]
    assert (card["kind"], card["state"]) == ("many", "failed")
    assert _items(card) == [("'notes.txt'", "done"), ("'missing.txt'", "failed")]
    assert card["items"][0]["detail"] == "17" and card["items"][1]["detail"].startswith(
        "LackpyRuntimeError: ")
    assert all(item["ms"].endswith(" ms") for item in card["items"])
    assert final["text/plain"].splitlines()[0].split() == ["task", "status", "output", "/",
                                                           "error", "ms"]


def test_the_stop_button_ends_a_run_manys_card_as_interrupted(host):
    workspace = host.kernel.workspace
    (workspace / "spin.txt").write_text("100000000000")
    host.run("%plan clear")
    host.run("%%step spin --kit read_file,write_file\nrounds = int(read_file('spin.txt'))\n"
             "write_file('inside.txt', 'x')\nsum(range(rounds)) + task")
    host.run("numbers = [1, 2]")
    msg_id = host.kernel.client.execute("%plan run-many numbers --concurrency 1",
                                        stop_on_error=False)
    deadline = time.monotonic() + 60
    while not any(workspace.glob(".lackpy/staging/*/inside.txt")):  # staged: task 1 runs
        assert time.monotonic() < deadline, "the first task never started"
        time.sleep(0.02)
    host.kernel.manager.interrupt_kernel()
    stopped = host.kernel.wait(msg_id)
    assert stopped.error["ename"] == "KeyboardInterrupt"
    assert stopped.error["evalue"].endswith("interrupted: 0 of 2 tasks had ended")
    card = stopped.of("display_data")[-1]["data"][PROGRESS_MIME]
    assert card["state"] == "interrupted"
    assert _items(card) == [("1", "interrupted"), ("2", "waiting")]
    (workspace / "spin.txt").write_text("0")
    assert host.run("1 + 1").ok  # the host is fine


def test_a_run_many_of_many_tasks_redraws_its_table_less_often_than_tasks_start_and_end(host):
    host.run("%plan clear")
    host.run("%%step next\ntask + 1")
    host.run("numbers = list(range(20))")
    shown = host.run("%plan run-many numbers")
    assert shown.ok, shown.evalue
    # All 20 start in one turn of the loop: one redraw shows the first, the next one all
    # of them; each end may have its own. Without the limit there would be 40.
    assert len(shown.updates) <= 20 + 1 + 1  # ... and the display's return to its title
    card = shown.displays[-1][PROGRESS_MIME]
    assert card["state"] == "done" and [item["detail"] for item in card["items"]] == [
        str(n + 1) for n in range(20)]
