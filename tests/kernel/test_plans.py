"""The kernel's plan magics through jupyter_client: %%step, %plan and its actions, live
progress, approval gates, the stop button pausing a run, and %plan resume."""

from __future__ import annotations

import json
import time

import pytest

from lackpy_kernel.engines import Store
from tests.support.kernel import Kernel, make_workspace

PLAN_STORE = ".lackpy/plans.sqlite"


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    workspace = make_workspace(tmp_path_factory.mktemp("plans"), "[sandbox]\ntimeout = 60\n")
    running = Kernel(workspace)
    yield running
    running.close()


@pytest.fixture
def fresh(kernel):
    """The kernel with an empty plan."""
    kernel.execute("%plan clear")
    return kernel


def declare_counting_plan(kernel: Kernel) -> None:
    for cell in ("%%step fetch --writes text\nread_file(task)",
                 "%%step lines --parallel\nlen(task.splitlines())",
                 "%%step chars --parallel\nlen(task)",
                 "%%step report --task from_parallel_all(lines) --context from_start\n"
                 "{'file': context, 'counts': task}"):
        assert kernel.execute(cell).status == "ok"


def status_rows(table: str) -> list[list[str]]:
    return [line.split()[:2] if "interrupted" in line else line.split()
            for line in table.splitlines()[1:]]


def texts(outcome, kind: str = "display_data") -> list[str]:
    return [content["data"]["text/plain"] for content in outcome.of(kind)]


def test_a_step_cell_shows_the_step_and_no_result(fresh):
    outcome = fresh.execute("%%step fetch --writes text\nread_file(task)")
    assert outcome.status == "ok" and not outcome.of("execute_result")
    (shown,) = texts(outcome)
    assert shown.startswith("step 1 of 1") and "Program('read_file(task)')" in shown
    assert "text" in shown.splitlines()[-1]


def test_a_step_that_does_not_validate_is_refused_and_the_plan_keeps_its_steps(fresh):
    fresh.execute("%%step fetch\nread_file(task)")
    outcome = fresh.execute("%%step count\nn = len(task)\nopen(task)")
    assert outcome.error["ename"] == "PlanCompileError"
    assert "step 'count': line 2, col 1: the name 'open' is forbidden" in outcome.error["evalue"]
    (table,) = texts(fresh.execute("%plan"))
    assert "fetch" in table and "count" not in table


def test_running_a_step_cell_again_replaces_the_step(fresh):
    fresh.execute("%%step n\nlen(task)")
    fresh.execute("%%step n\nlen(task) * 2")
    (table,) = texts(fresh.execute("%plan"))
    assert table.count("\n") == 2 and "len(task) * 2" in table
    assert fresh.execute("%plan run abc").result() == "6"


def test_plan_run_shows_progress_live_then_the_result(fresh):
    declare_counting_plan(fresh)
    outcome = fresh.execute("%plan run notes.txt")
    assert outcome.status == "ok"
    live, final = outcome.of("display_data")
    display_id = live["transient"]["display_id"]
    updates = [u for u in outcome.of("update_display_data")
               if u["transient"]["display_id"] == display_id]
    statuses = [line.split()[:2] for u in updates for line in u["data"]["text/plain"].splitlines()
                if line.startswith("fetch")]
    assert ["fetch", "running"] in statuses and ["fetch", "done"] in statuses
    assert updates[-1]["data"] == live["data"]  # the live display ends as it began
    assert [line.split()[:3] for line in final["data"]["text/plain"].splitlines()[1:]] == [
        ["fetch", "done", "1"], ["lines", "done", "1"], ["chars", "done", "1"],
        ["report", "done", "1"]]
    assert outcome.result() == "{'file': 'notes.txt', 'counts': {'lines': 3, 'chars': 17}}"


def test_a_failing_step_is_the_cells_error(fresh):
    fresh.execute("%%step fetch\nread_file(task)")
    outcome = fresh.execute("%plan run missing.txt")
    assert outcome.error["ename"] == "LackpyRuntimeError"
    assert "no file 'missing.txt'" in outcome.error["evalue"]


def test_a_gate_pauses_the_run_and_plan_resume_continues(fresh):
    fresh.execute("%%step fetch --writes text\nread_file(task)")
    fresh.execute("%plan gate review publish the text?")
    fresh.execute("%%step size\nlen(task)")
    paused = fresh.execute("%plan run notes.txt --key gated")
    assert paused.status == "ok"
    assert paused.stream("stdout") == ("paused at step 'review': publish the text?; "
                                       "%plan resume gated continues\n")
    (status,) = texts(fresh.execute("%plan status gated"))
    assert "gated" in status and "paused" in status and "review" in status
    resumed = fresh.execute("%plan resume gated")
    assert resumed.result() == "17"
    final = [row[:3] for row in status_rows(texts(resumed)[-1])]
    assert ["fetch", "done", "earlier"] in final and ["size", "done", "1"] in final


def test_the_stop_button_pauses_the_run_and_plan_resume_continues(fresh):
    workspace = fresh.workspace
    (workspace / "spin.txt").write_text("100000000000")
    fresh.execute("%%step first --writes first\nlen(task)")
    fresh.execute("%%step spin --kit read_file,write_file\n"
                  "rounds = int(read_file('spin.txt'))\nwrite_file('inside.txt', 'x')\n"
                  "sum(range(rounds)) + task")
    msg_id = fresh.client.execute("%plan run abc --key stop", stop_on_error=False)
    deadline = time.monotonic() + 60
    while not any(workspace.glob(".lackpy/staging/*/inside.txt")):  # staged: it runs
        assert time.monotonic() < deadline, "the step never started"
        time.sleep(0.02)
    fresh.manager.interrupt_kernel()
    stopped = fresh.wait(msg_id)
    assert stopped.error["ename"] == "KeyboardInterrupt"
    assert "paused with a checkpoint: %plan resume stop continues" in stopped.error["evalue"]
    assert ["spin", "interrupted"] in status_rows(texts(stopped)[-1])
    saved = Store(workspace / PLAN_STORE).read("stop")
    assert (saved["status"], saved["next_step"]) == ("paused", "spin")
    assert Store(workspace / PLAN_STORE).read("first") == 3

    (workspace / "spin.txt").write_text("0")
    resumed = fresh.execute("%plan resume stop")
    assert resumed.result() == "3"
    assert ["first", "done", "earlier"] in [row[:3] for row in status_rows(texts(resumed)[-1])]
    assert fresh.execute("1 + 1").result() == "2"  # the kernel is fine


def test_run_many_fans_out_over_a_list_variable(fresh):
    fresh.execute("files = ['notes.txt', 'app.py', 'missing.txt']")
    fresh.execute("%%step size\nlen(read_file(task))")
    outcome = fresh.execute("%plan run-many files --concurrency 2 --key batch")
    (table,) = texts(outcome)
    rows = table.splitlines()[1:]
    assert [row.split()[:3] for row in rows[:2]] == [["'notes.txt'", "done", "17"],
                                                     ["'app.py'", "done", "54"]]
    assert rows[2].split()[1] == "LackpyRuntimeError"
    runs = Store(fresh.workspace / PLAN_STORE).keys("batch:")
    assert len(runs) == 3


def test_run_many_needs_a_list(fresh):
    fresh.execute("%%step size\nlen(task)")
    fresh.execute("word = 'abc'")
    assert "takes a list; word is a str" in fresh.execute("%plan run-many word").error["evalue"]
    assert "no variable 'nothing'" in fresh.execute("%plan run-many nothing").error["evalue"]


def test_save_load_restart_and_the_shell_sees_the_saved_plan(fresh):
    fresh.execute("%%step size\nlen(read_file(task))")
    saved = fresh.execute("%plan save sizes")
    assert texts(saved) == ["saved .lackpy/plans/sizes.json; `lackpy plan run sizes TASK` runs "
                            "it from a shell"]
    data = json.loads((fresh.workspace / ".lackpy" / "plans" / "sizes.json").read_text())
    assert data["name"] == "sizes" and data["steps"][0]["target"]["kind"] == "program"
    fresh.execute("%plan clear")
    (shown,) = texts(fresh.execute("%plan load sizes"))
    assert shown.startswith("plan sizes") and "size" in shown
    fresh.execute("%plan run notes.txt --key again")
    assert fresh.execute("%plan restart again").result() == "17"


def test_drop_removes_a_step_unless_another_needs_it(fresh):
    fresh.execute("%%step fetch\nread_file(task)")
    fresh.execute("%%step size\nlen(task)")
    fresh.execute("%%step again --task from_step(size)\ntask")
    refused = fresh.execute("%plan drop size")
    assert "task=from_step('size') names no step" in refused.error["evalue"]
    fresh.execute("%plan drop again")
    (table,) = texts(fresh.execute("%plan drop size"))
    assert "fetch" in table and "size" not in table
    assert "no step 'nope' in the plan" in fresh.execute("%plan drop nope").error["evalue"]


@pytest.mark.parametrize(("line", "said"), [
    ("%plan fly", "unknown %plan action 'fly'"),
    ("%plan run", "%plan run needs TASK"),
    ("%plan run a b", "quote a value that holds spaces"),
    ("%plan resume never", "no plan run under the key 'never'"),
    ("%plan run x --concurrency", "--concurrency needs a value"),
    ("%%step\nlen(task)", "name the step"),
    ("%plan load nothing", "no saved plan 'nothing'"),
])
def test_plan_magics_say_what_was_wrong(fresh, line, said):
    fresh.execute("%%step n\nlen(task)")
    outcome = fresh.execute(line)
    assert outcome.status == "error" and said in outcome.error["evalue"]


def test_an_empty_plan_says_how_to_start(fresh):
    assert texts(fresh.execute("%plan")) == [
        "the plan has no steps yet: declare one with a %%step NAME cell"]
    assert "declare one with a %%step NAME cell" in fresh.execute("%plan run x").error["evalue"]
