"""%%step and %plan in both hosts (the lackpy kernel, a Python kernel with the extension),
through jupyter_client: %plan and its actions, live progress, approval gates, the stop
button pausing a run, %plan resume, and the drifts the two hosts once had (drop, clear,
save, --concurrency)."""

from __future__ import annotations

import json
import time

import pytest

from lackpy_kernel.engines import Store
from tests.support.hosts import Host, host_with, run_error
from tests.support.kernel import make_workspace

PLAN_STORE = ".lackpy/plans.sqlite"


host = host_with(lambda folder: make_workspace(
    folder, '[sandbox]\ntimeout = 60\napprove = "never"\n'), prefix="plans")  # no one asked


@pytest.fixture
def fresh(host):
    """The host with an empty plan."""
    host.kernel.execute("%plan clear")
    return host


def declare_counting_plan(host: Host) -> None:
    for cell in ("%%step fetch --writes text\nread_file(task)",
                 "%%step lines --parallel\nlen(task.splitlines())",
                 "%%step chars --parallel\nlen(task)",
                 "%%step report --task from_parallel_all(lines) --context from_start\n"
                 "{'file': context, 'counts': task}"):
        assert host.kernel.execute(cell).status == "ok"


def status_rows(table: str) -> list[list[str]]:
    return [line.split()[:2] if "interrupted" in line else line.split()
            for line in table.splitlines()[1:]]


def texts(outcome, kind: str = "display_data") -> list[str]:
    return [content["data"]["text/plain"] for content in outcome.of(kind)]


def test_a_step_cell_shows_the_step_and_no_result(fresh):
    outcome = fresh.kernel.execute("%%step fetch --writes text\nread_file(task)")
    assert outcome.status == "ok" and not outcome.of("execute_result")
    (shown,) = texts(outcome)
    assert shown.startswith("step 1 of 1") and "Program('read_file(task)')" in shown
    assert "text" in shown.splitlines()[-1]


def test_a_step_that_does_not_validate_is_refused_and_the_plan_keeps_its_steps(fresh):
    fresh.kernel.execute("%%step fetch\nread_file(task)")
    outcome = fresh.kernel.execute("%%step count\nn = len(task)\nopen(task)")
    assert outcome.error["ename"] == "PlanCompileError"
    assert "step 'count': line 2, col 1: the name 'open' is forbidden" in outcome.error["evalue"]
    (table,) = texts(fresh.kernel.execute("%plan"))
    assert "fetch" in table and "count" not in table


def test_a_step_cell_that_is_not_valid_lackpy_is_refused(fresh):
    outcome = fresh.kernel.execute("%%step bad\nimport os")
    assert outcome.error["ename"] == "PlanCompileError"
    assert "step 'bad': line 1, col 1: Import is not allowed" in outcome.error["evalue"]


def test_running_a_step_cell_again_replaces_the_step(fresh):
    fresh.kernel.execute("%%step n\nlen(task)")
    fresh.kernel.execute("%%step n\nlen(task) * 2")
    (table,) = texts(fresh.kernel.execute("%plan"))
    assert table.count("\n") == 2 and "len(task) * 2" in table
    assert fresh.kernel.execute("%plan run abc").result() == "6"


def test_plan_run_shows_progress_live_then_the_result(fresh):
    declare_counting_plan(fresh)
    outcome = fresh.kernel.execute("%plan run notes.txt")
    assert outcome.status == "ok"
    live, final = outcome.of("display_data")
    display_id = live["transient"]["display_id"]
    updates = [u for u in outcome.of("update_display_data")
               if u["transient"]["display_id"] == display_id]
    statuses = [line.split()[:2] for u in updates for line in u["data"]["text/plain"].splitlines()
                if line.startswith("fetch")]
    assert ["fetch", "running"] in statuses and ["fetch", "done"] in statuses
    assert len(updates) >= 4  # the updates reach the cell that ran the plan
    assert updates[-1]["data"] == live["data"]  # the live display ends as it began
    assert [line.split()[:3] for line in final["data"]["text/plain"].splitlines()[1:]] == [
        ["fetch", "done", "1"], ["lines", "done", "1"], ["chars", "done", "1"],
        ["report", "done", "1"]]
    assert outcome.result() == "{'file': 'notes.txt', 'counts': {'lines': 3, 'chars': 17}}"


def test_a_failing_step_is_the_cells_error(fresh):
    fresh.kernel.execute("%%step fetch\nread_file(task)")
    outcome = fresh.kernel.execute("%plan run missing.txt")
    assert outcome.error["ename"] == run_error(fresh, "LackpyRuntimeError")
    assert "no file 'missing.txt'" in outcome.error["evalue"]


def test_a_gate_pauses_the_run_and_plan_resume_continues(fresh):
    fresh.kernel.execute("%%step fetch --writes text\nread_file(task)")
    fresh.kernel.execute("%plan gate review publish the text")  # IPython reads a last ? as help
    fresh.kernel.execute("%%step size\nlen(task)")
    paused = fresh.kernel.execute("%plan run notes.txt --key gated")
    assert paused.status == "ok"
    assert paused.stream("stdout") == ("paused at step 'review': publish the text; "
                                       "%plan resume gated continues\n")
    assert not paused.of("execute_result")
    assert Store(fresh.kernel.workspace / PLAN_STORE).read("gated")["status"] == "paused"
    (status,) = texts(fresh.kernel.execute("%plan status gated"))
    assert "gated" in status and "paused" in status and "review" in status
    resumed = fresh.kernel.execute("%plan resume gated")
    assert resumed.result() == "17"
    final = [row[:3] for row in status_rows(texts(resumed)[-1])]
    assert ["fetch", "done", "earlier"] in final and ["size", "done", "1"] in final


def test_the_stop_button_pauses_the_run_and_plan_resume_continues(fresh):
    workspace = fresh.kernel.workspace
    (workspace / "spin.txt").write_text("100000000000")
    fresh.kernel.execute("%%step first --writes first\nlen(task)")
    fresh.kernel.execute("%%step spin --kit read_file,write_file\n"
                  "rounds = int(read_file('spin.txt'))\nwrite_file('inside.txt', 'x')\n"
                  "sum(range(rounds)) + task")
    msg_id = fresh.kernel.client.execute("%plan run abc --key stop", stop_on_error=False)
    deadline = time.monotonic() + 60
    while not any(workspace.glob(".lackpy/staging/*/inside.txt")):  # staged: it runs
        assert time.monotonic() < deadline, "the step never started"
        time.sleep(0.02)
    fresh.kernel.manager.interrupt_kernel()
    stopped = fresh.kernel.wait(msg_id)
    assert stopped.error["ename"] == "KeyboardInterrupt"
    assert "paused with a checkpoint: %plan resume stop continues" in stopped.error["evalue"]
    assert ["spin", "interrupted"] in status_rows(texts(stopped)[-1])
    saved = Store(workspace / PLAN_STORE).read("stop")
    assert (saved["status"], saved["next_step"]) == ("paused", "spin")
    assert Store(workspace / PLAN_STORE).read("first") == 3

    (workspace / "spin.txt").write_text("0")
    resumed = fresh.kernel.execute("%plan resume stop")
    assert resumed.result() == "3"
    assert ["first", "done", "earlier"] in [row[:3] for row in status_rows(texts(resumed)[-1])]
    assert fresh.kernel.execute("1 + 1").result() == "2"  # the host is fine


def test_run_many_fans_out_over_a_list_variable(fresh):
    fresh.kernel.execute("files = ['notes.txt', 'app.py', 'missing.txt']")
    fresh.kernel.execute("%%step size\nlen(read_file(task))")
    outcome = fresh.kernel.execute("%plan run-many files --concurrency 2 --key batch")
    live, table = texts(outcome)
    assert live == "plan on 3 tasks, keys batch:..."  # the live display, back to its title
    rows = table.splitlines()[1:]
    assert [row.split()[:3] for row in rows[:2]] == [["'notes.txt'", "done", "17"],
                                                     ["'app.py'", "done", "54"]]
    assert rows[2].split()[1:3] == ["failed", "LackpyRuntimeError:"]
    assert all(row.endswith(" ms") for row in rows)
    runs = Store(fresh.kernel.workspace / PLAN_STORE).keys("batch:")
    assert len(runs) == 3


def test_run_many_needs_a_list(fresh):
    fresh.kernel.execute("%%step size\nlen(task)")
    fresh.kernel.execute("word = 'abc'")
    assert "takes a list; word is a str" in fresh.kernel.execute("%plan run-many word").error["evalue"]
    assert "no variable 'nothing'" in fresh.kernel.execute("%plan run-many nothing").error["evalue"]


def test_save_load_restart_and_the_shell_sees_the_saved_plan(fresh):
    fresh.kernel.execute("%%step size\nlen(read_file(task))")
    fresh.kernel.execute("%plan save sizes")
    data = json.loads((fresh.kernel.workspace / ".lackpy" / "plans" / "sizes.json").read_text())
    assert data["name"] == "sizes" and data["steps"][0]["target"]["kind"] == "program"
    fresh.kernel.execute("%plan clear")
    (shown,) = texts(fresh.kernel.execute("%plan load sizes"))
    assert shown.startswith("plan sizes") and "size" in shown
    assert fresh.kernel.execute("%plan run notes.txt").result() == "17"
    fresh.kernel.execute("%plan run notes.txt --key again")
    assert fresh.kernel.execute("%plan restart again").result() == "17"


def test_drop_removes_a_step_unless_another_needs_it(fresh):
    fresh.kernel.execute("%%step fetch\nread_file(task)")
    fresh.kernel.execute("%%step size\nlen(task)")
    fresh.kernel.execute("%%step again --task from_step(size)\ntask")
    refused = fresh.kernel.execute("%plan drop size")
    assert "task=from_step('size') names no step" in refused.error["evalue"]
    fresh.kernel.execute("%plan drop again")
    (table,) = texts(fresh.kernel.execute("%plan drop size"))
    assert "fetch" in table and "size" not in table
    assert fresh.kernel.execute("%plan drop nope").error["evalue"] == (
        "no step 'nope' in the plan; its steps: fetch")
    fresh.kernel.execute("%plan clear")
    assert fresh.kernel.execute("%plan drop fetch").error["evalue"] == (
        "no step 'fetch' in the plan; it has no steps")


# -- the drifts: each host once answered these differently ----------------------------


def test_drop_shows_the_plan_that_is_left(fresh):
    fresh.kernel.execute("%%step fetch\nread_file(task)")
    fresh.kernel.execute("%%step size\nlen(task)")
    outcome = fresh.kernel.execute("%plan drop size")
    assert outcome.status == "ok" and not outcome.of("execute_result")
    (table,) = texts(outcome)
    assert table.startswith("plan\n") and "fetch" in table and "size" not in table


def test_clear_says_the_plan_is_empty(fresh):
    fresh.kernel.execute("%%step fetch\nread_file(task)")
    outcome = fresh.kernel.execute("%plan clear")
    assert texts(outcome) == ["the plan has no steps now"]
    assert not outcome.of("execute_result") and not outcome.of("stream")


def test_save_says_where_the_plan_went_and_how_to_run_it_from_a_shell(fresh):
    fresh.kernel.execute("%%step size\nlen(read_file(task))")
    saved = fresh.kernel.execute("%plan save sizes")
    assert texts(saved) == ["saved .lackpy/plans/sizes.json; `lackpy plan run sizes TASK` runs "
                            "it from a shell"]
    assert not saved.of("stream") and not saved.of("execute_result")


@pytest.mark.parametrize("text", ["0", "x", "-1"])
def test_concurrency_takes_a_whole_number(fresh, text):
    fresh.kernel.execute("%%step n\nlen(task)")
    fresh.kernel.execute("files = ['a']")
    outcome = fresh.kernel.execute(f"%plan run-many files --concurrency {text}")
    assert outcome.error["ename"] == "UsageError"
    assert f"--concurrency takes a whole number of at least 1, not '{text}'" in \
        outcome.error["evalue"]


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
    fresh.kernel.execute("%%step n\nlen(task)")
    outcome = fresh.kernel.execute(line)
    assert outcome.status == "error" and said in outcome.error["evalue"]


def test_an_empty_plan_says_how_to_start(fresh):
    assert texts(fresh.kernel.execute("%plan")) == [
        "the plan has no steps yet: declare one with a %%step NAME cell"]
    assert "declare one with a %%step NAME cell" in fresh.kernel.execute("%plan run x").error["evalue"]
