"""A plan's Program step and its file commit: a run killed between the commit and the
checkpoint, or before the commit, resumes without a lost or doubled write; a step's change
pauses the run until a resume approves exactly that change.

Each run is a real process (``tests.engines.commit_runner``) killed with SIGKILL; the step
appends a line to ``log.txt``, so a doubled write shows as a second line.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lackpy_kernel.config import load_config
from lackpy_kernel.engines import Plan, Program, Step, Store
from lackpy_kernel.kit import ToolSpec
from lackpy_kernel.service import LackpyService
from tests.engines.commit_runner import APPEND, APPEND_INTENT, KEY
from tests.support.hosts import HOSTS, running_host
from tests.support.kernel import make_workspace

ROOT = Path(__file__).resolve().parents[2]
PATIENCE_S = 120.0
BEFORE = "first\n"
AFTER = "first\nline\n"


@pytest.fixture
def place(tmp_path):
    """A workspace that asks before file changes, with a log of one line."""
    (tmp_path / ".lackpy").mkdir()
    (tmp_path / ".lackpy" / "config.toml").write_text('[sandbox]\napprove = "write"\n')
    (tmp_path / "log.txt").write_text(BEFORE)
    (tmp_path / "spin.txt").write_text("0")
    return tmp_path


def start(place: Path, mode: str, sandbox: bool = False, delegate: bool = False
          ) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.engines.commit_runner", str(place), mode,
         *(["--sandbox"] if sandbox else []), *(["--delegate"] if delegate else [])],
        cwd=place, env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run(place: Path, mode: str, sandbox: bool = False, delegate: bool = False
        ) -> tuple[int, dict]:
    process = start(place, mode, sandbox, delegate)
    out, err = process.communicate(timeout=PATIENCE_S)
    assert out.strip(), err
    return process.returncode, json.loads(out)


def kill_when(process: subprocess.Popen, ready) -> None:
    deadline = time.monotonic() + PATIENCE_S
    while not ready():
        assert process.poll() is None, f"the run ended before the kill point: " \
                                       f"{process.communicate()}"
        assert time.monotonic() < deadline, "the run never reached the kill point"
        time.sleep(0.005)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=PATIENCE_S)


def paused(place: Path) -> dict:
    """Run the plan: it pauses at the append step's change, nothing written."""
    code, envelope = run(place, "run")
    assert code == 1 and envelope["error"]["type"] == "PlanPaused", envelope
    assert "log.txt" in envelope["error"]["message"]
    assert (place / "log.txt").read_text() == BEFORE
    return envelope


def finished(place: Path, mode: str = "resume", delegate: bool = False) -> dict:
    code, envelope = run(place, mode, delegate=delegate)
    assert code == 0, envelope
    return envelope


def commit_records(place: Path) -> list:
    with Store(place / "plans.sqlite") as store:
        return [store.read(key) for key in store.keys(f"{KEY}:commit:")]


@pytest.mark.parametrize("sandbox", [False, True], ids=["here", "sandbox"])
def test_a_step_killed_after_its_commit_before_its_checkpoint_resumes_without_a_second_write(
        place, sandbox):
    paused(place)
    (place / "hold.txt").write_text("")  # the band's checkpoint waits on the hold step
    approving = start(place, "approve", sandbox)
    kill_when(approving, lambda: (place / "log.txt").read_text() == AFTER)
    assert [record["digest"] for record in commit_records(place)], "no commit was recorded"
    (place / "hold.txt").unlink()

    envelope = finished(place)  # no approval asked again: the change landed already

    assert (place / "log.txt").read_text() == AFTER
    history = {step["name"]: step["output"] for step in envelope["history"]}
    assert history["append"] == "appended line"
    assert envelope["payload"] == AFTER
    assert commit_records(place) == [None]  # the checkpoint cleared the record


@pytest.mark.parametrize("sandbox", [False, True], ids=["here", "sandbox"])
def test_unasked_a_step_killed_after_its_commit_before_its_checkpoint_writes_once(
        place, sandbox):
    """Under ``approve = "never"`` nothing pauses, and the step's commit is still recorded
    before it lands, so the resume neither loses nor doubles the write."""
    (place / ".lackpy" / "config.toml").write_text('[sandbox]\napprove = "never"\n')
    (place / "hold.txt").write_text("")
    running = start(place, "run", sandbox)
    kill_when(running, lambda: (place / "log.txt").read_text() == AFTER)
    assert [record["digest"] for record in commit_records(place)], "no commit was recorded"
    (place / "hold.txt").unlink()

    envelope = finished(place)

    assert (place / "log.txt").read_text() == AFTER
    assert {step["name"]: step["output"] for step in envelope["history"]}["append"] == \
        "appended line"
    assert envelope["payload"] == AFTER
    assert commit_records(place) == [None]


@pytest.mark.parametrize("sandbox", [False, True], ids=["here", "sandbox"])
def test_unasked_a_delegate_step_killed_after_its_commit_before_its_checkpoint_writes_once(
        place, sandbox):
    """As a Program step's: under ``approve = "never"`` a Delegate step's commit is recorded
    (with the program it ran) before it lands, and the resume runs that program again dry."""
    (place / ".lackpy" / "config.toml").write_text('[sandbox]\napprove = "never"\n')
    (place / ".lackpy" / "templates").mkdir()
    (place / ".lackpy" / "templates" / "append.tmpl").write_text(
        f"---\nname: append\npattern: {APPEND_INTENT}\n---\n{APPEND}\n")
    (place / "hold.txt").write_text("")
    running = start(place, "run", sandbox, delegate=True)
    kill_when(running, lambda: (place / "log.txt").read_text() == AFTER)
    assert [record["digest"] for record in commit_records(place)], "no commit was recorded"
    (place / "hold.txt").unlink()

    envelope = finished(place, delegate=True)

    assert (place / "log.txt").read_text() == AFTER
    appended = {step["name"]: step for step in envelope["history"]}["append"]
    assert appended["output"] == "appended line" and appended["program"] == APPEND
    assert envelope["payload"] == AFTER
    assert commit_records(place) == [None]


def test_a_step_killed_before_its_commit_writes_once_on_resume(place):
    paused(place)
    (place / "spin.txt").write_text("100000000")  # the step spins before its commit
    approving = start(place, "approve")
    kill_when(approving, lambda: any(place.glob(".lackpy/staging/*/log.txt")))
    assert (place / "log.txt").read_text() == BEFORE
    (place / "spin.txt").write_text("0")

    code, envelope = run(place, "resume")  # the approval died with its run: asked again
    assert code == 1 and envelope["error"]["type"] == "PlanPaused", envelope
    assert (place / "log.txt").read_text() == BEFORE

    envelope = finished(place, "approve")
    assert (place / "log.txt").read_text() == AFTER
    assert envelope["payload"] == AFTER


def test_a_resume_without_approval_pauses_again_and_a_changed_change_is_not_approved(place):
    first = paused(place)
    code, again = run(place, "resume")
    assert code == 1 and again["error"] == first["error"]  # the same change, unapproved
    assert (place / "log.txt").read_text() == BEFORE

    (place / "log.txt").write_text("other\n")  # the change the step makes now differs
    code, changed = run(place, "approve")
    assert code == 1 and changed["error"]["type"] == "PlanPaused", changed
    assert changed["error"]["message"] != first["error"]["message"]
    assert (place / "log.txt").read_text() == "other\n"

    envelope = finished(place, "approve")  # this change is the one approved now
    assert (place / "log.txt").read_text() == "other\nline\n"
    assert envelope["payload"] == "other\nline\n"


@pytest.fixture(params=HOSTS)
def asking_host(request, installed_kernelspec, tmp_path):
    """A host (the lackpy kernel, IPython with the extension) whose workspace asks before
    file changes."""
    (tmp_path / "work").mkdir()
    workspace = make_workspace(tmp_path / "work", '[sandbox]\ntimeout = 60\napprove = "write"\n')
    with running_host(request.param, workspace, tmp_path / "ipython") as running:
        yield running


def test_plan_magic_pauses_at_a_change_shows_its_diff_and_resume_approve_writes_it(asking_host):
    kernel = asking_host.kernel
    notes = kernel.workspace / "notes.txt"
    before = notes.read_text()
    declared = kernel.execute("%%step add --task from_start --kit read_file,write_file\n"
                              "write_file('notes.txt', read_file('notes.txt') + task + '\\n')\n"
                              "'added'")
    assert declared.status == "ok", declared.error
    paused = kernel.execute("%plan run delta --key adding")
    assert paused.status == "ok" and notes.read_text() == before, paused.error
    (shown,) = [content["data"] for content in paused.of("display_data")
                if "text/html" in content["data"] and "lackpy-changes" in content["data"]
                ["text/html"]]
    assert "notes.txt" in shown["text/plain"] and "+delta" in shown["text/plain"]
    assert "%plan resume adding --approve" in paused.stream("stdout")

    status = kernel.execute("%plan status adding")
    assert any("+delta" in content["data"]["text/plain"] for content in status.of("display_data"))
    again = kernel.execute("%plan resume adding")
    assert "%plan resume adding --approve" in again.stream("stdout")
    assert notes.read_text() == before

    approved = kernel.execute("%plan resume adding --approve")
    assert approved.result().strip("'") == "added"  # the kernel shows text unquoted
    assert notes.read_text() == before + "delta\n"
    refused = kernel.execute("%plan run x --approve")
    assert "--approve goes with %plan resume K" in refused.error["evalue"]


def test_a_plan_without_a_checkpoint_refuses_the_change_naming_the_config(place):
    config = load_config(place)
    config.sandbox_enabled = False
    with LackpyService(place, config) as service:
        envelope = Plan(Step(Program("write_file('log.txt', 'x')"), name="write"),
                        kit=["write_file"], service=service).run("")
    assert envelope.error.type != "PlanPaused"  # nothing could resume it
    assert '[sandbox] approve = "never"' in envelope.error.message
    assert (place / "log.txt").read_text() == BEFORE


def test_a_steps_call_of_a_write_tool_pauses_and_once_approved_is_not_asked_again(place):
    """A step that calls a kernel tool graded write, then changes a file: the run pauses
    on the call, then on the file change; after both approvals the call was made once
    per run of the step it was approved for, and never asked for twice."""
    posted: list[str] = []
    config = load_config(place)
    config.sandbox_enabled = False
    with LackpyService(place, config) as service:
        service.toolbox.register_tool(ToolSpec("post", "custom"),
                                      lambda text: posted.append(text) or "sent")
        store = Store(place / "plans.sqlite")

        def run(**options):
            return Plan(Step(Program("post(task)\nwrite_file('log.txt', task)\n'done'"),
                             name="send"), kit=["post", "write_file"], store=store,
                        checkpoint_key="sending", service=service, **options).run(
                "hi" if not options else None, approve="resume" in options)

        first = run()
        assert first.error.type == "PlanPaused"
        assert "step 'send' would call post('hi')" in first.error.message
        assert posted == [] and (place / "log.txt").read_text() == BEFORE

        second = run(resume=True)  # approving the call: it runs, then the file pauses
        assert "would change files" in second.error.message, second.error
        assert posted == ["hi"] and (place / "log.txt").read_text() == BEFORE

        done = run(resume=True)  # approving the file: the call is not asked for again
        assert done.error is None, done.error
        assert done.payload == "done"
        assert posted == ["hi", "hi"]  # the step ran again: its call acts again
        assert (place / "log.txt").read_text() == "hi"
        store.close()
