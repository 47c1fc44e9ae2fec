"""Plans on Temporal from the notebook and the shell: `%plan run --temporal` ends its cell at
once and a display follows the run, `%plan status` and `%plan resume` reach it, and
`lackpy plan run/resume/status --temporal` do the same from a shell. A `lackpy worker`
process serves one workspace, which the kernel, the IPython shell and the CLI share."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid

import pytest

from lackpy_kernel.engines import Approval, Plan, Program, Step
from lackpy_kernel.engines.plans import PlanLibrary
from lackpy_kernel.engines.temporal import TemporalRunner
from lackpy_kernel.install import install_kernelspec
from tests.support.kernel import KERNEL_NAME, Kernel, make_workspace
from tests.support.shell import extension_shell, magics_of
from tests.support.temporal import (
    ROOT,
    WorkerProcess,
    free_port,
    temporal_server,  # noqa: F401 - the module's server fixture
)

PATIENCE_S = 90.0
GATED = [Step("read_file"), Step(Approval("publish these?"), name="approve"),
         Step(Program("len(task)"), name="size")]


@pytest.fixture(scope="module")
def queue():
    return f"surfaces-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    return make_workspace(tmp_path_factory.mktemp("remote"), "[sandbox]\ntimeout = 60\n")


@pytest.fixture(scope="module")
def worker(temporal_server, queue, place):  # noqa: F811
    serving = WorkerProcess(temporal_server.address, queue, place)
    yield serving
    serving.stop()


@pytest.fixture(scope="module")
def kernel(tmp_path_factory, place, worker):
    prefix = tmp_path_factory.mktemp("jupyter-prefix")
    install_kernelspec(prefix=str(prefix), name=KERNEL_NAME, display_name="lackpy (tests)")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("JUPYTER_PATH", str(prefix / "share" / "jupyter"))
        running = Kernel(place)
        yield running
        running.close()


class Notebook:
    """Runs cells and keeps every iopub message, whichever cell it came under: a remote
    run's display is updated while other cells run, or none."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.seen: list[dict] = []

    def run(self, code: str):
        client = self.kernel.client
        msg_id = client.execute(code)
        reply = client.get_shell_msg(timeout=PATIENCE_S)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = client.get_shell_msg(timeout=PATIENCE_S)
        mine = []
        while True:
            message = client.get_iopub_msg(timeout=PATIENCE_S)
            self.seen.append(message)
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            if message["msg_type"] == "status" and \
                    message["content"]["execution_state"] == "idle":
                return reply["content"]["status"], mine
            mine.append(message)

    def shown(self, display_id: str) -> list[str]:
        """What the display ``display_id`` has shown so far, first to last."""
        return [m["content"]["data"]["text/plain"] for m in self.seen
                if m["msg_type"] in ("display_data", "update_display_data")
                and m["content"].get("transient", {}).get("display_id") == display_id]

    def wait_for(self, display_id: str, text: str) -> str:
        """Read iopub until the display ``display_id`` shows ``text``."""
        deadline = time.monotonic() + PATIENCE_S
        while not any(text in shown for shown in self.shown(display_id)):
            assert time.monotonic() < deadline, self.shown(display_id)
            self.seen.append(self.kernel.client.get_iopub_msg(timeout=PATIENCE_S))
        return next(shown for shown in self.shown(display_id) if text in shown)


def display_ids(messages) -> list[str]:
    return [m["content"]["transient"]["display_id"] for m in messages
            if m["msg_type"] == "display_data" and m["content"].get("transient")]


def test_a_remote_run_leaves_the_notebook_free_and_its_display_follows_it(
        kernel, temporal_server, queue):  # noqa: F811
    notebook = Notebook(kernel)
    for cell in ("%plan clear", "%%step fetch\nread_file(task)",
                 "%plan gate approve publish these?", "%%step size\nlen(task)"):
        assert notebook.run(cell)[0] == "ok"
    status, messages = notebook.run(f"%plan run notes.txt --temporal {temporal_server.address} "
                                     f"--task-queue {queue} --key nb1")
    assert status == "ok"  # the cell is over; the run waits at its gate meanwhile
    (following,) = display_ids(messages)

    status, messages = notebook.run("len('free')")
    assert status == "ok"
    assert [m["content"]["data"]["text/plain"] for m in messages
            if m["msg_type"] == "execute_result"] == ["4"]

    paused = notebook.wait_for(following, "paused at step 'approve': publish these?")
    assert "%plan resume nb1 continues" in paused
    status, messages = notebook.run("%plan status nb1")
    (table,) = [m["content"]["data"]["text/plain"] for m in messages
                if m["msg_type"] == "display_data"]
    assert table.startswith("nb1 on Temporal at")
    assert [line.split()[:2] for line in table.splitlines()[2:5]] == [
        ["fetch", "done"], ["approve", "paused"], ["size", "waiting"]]
    assert "read_file  {\"path\": \"notes.txt\"}" in table

    status, messages = notebook.run("%plan resume nb1")
    assert status == "ok"
    (resumed,) = display_ids(messages)
    done = notebook.wait_for(resumed, "done; output:")
    assert done.rstrip().endswith("17")
    status, messages = notebook.run("%plan status")
    (runs,) = [m["content"]["data"]["text/plain"] for m in messages
               if m["msg_type"] == "display_data"]
    assert ["nb1", "done"] == [runs.splitlines()[-1].split()[0], runs.splitlines()[-1].split()[1]]


def test_temporal_options_belong_to_run_resume_and_status(kernel):
    notebook = Notebook(kernel)
    status, messages = notebook.run("%plan save x --temporal 127.0.0.1:1")
    assert status == "error"
    (error,) = [m["content"] for m in messages if m["msg_type"] == "error"]
    assert "--temporal goes with %plan run, resume, status" in error["evalue"]


def test_an_unreachable_server_fails_the_cell_and_keeps_the_plan(kernel):
    notebook = Notebook(kernel)
    notebook.run("%plan clear")
    notebook.run("%%step fetch\nread_file(task)")
    status, messages = notebook.run(f"%plan run notes.txt --temporal 127.0.0.1:{free_port()}")
    (error,) = [m["content"] for m in messages if m["msg_type"] == "error"]
    assert status == "error" and error["ename"] == "TemporalUnreachableError"
    assert "cannot reach the Temporal server" in error["evalue"]
    status, messages = notebook.run("%plan")
    assert "fetch" in [m for m in messages if m["msg_type"] == "display_data"][0][
        "content"]["data"]["text/plain"]


# -- the IPython extension -------------------------------------------------------------------


def test_the_extension_starts_a_remote_run_and_reaches_it_by_its_key(
        place, worker, temporal_server, queue, tmp_path_factory, capsys):  # noqa: F811
    with extension_shell(place, tmp_path_factory.mktemp("ipython")) as shell:
        shell.run_cell_magic("step", "fetch", "read_file(task)")
        shell.run_line_magic("plan", "gate approve publish these?")
        shell.run_cell_magic("step", "size", "len(task)")
        key = shell.run_line_magic(
            "plan", f"run notes.txt --temporal {temporal_server.address} --task-queue {queue} "
                    f"--key ext1")
        assert key == "ext1"
        runner = TemporalRunner(temporal_server.address, task_queue=queue)
        wait_until(lambda: run_status(shell, runner, "ext1") == "paused")
        capsys.readouterr()
        shell.run_line_magic("plan", "status ext1")
        shown = capsys.readouterr().out.splitlines()
        assert [line.split()[:2] for line in shown[2:5]] == [
            ["fetch", "done"], ["approve", "paused"], ["size", "waiting"]]
        shell.run_line_magic("plan", "resume ext1")
        wait_until(lambda: run_status(shell, runner, "ext1") == "done")
        assert magics_of(shell)._call(runner.status("ext1")).envelope().payload == 17


def run_status(shell, runner, key) -> str:
    return magics_of(shell)._call(runner.status(key)).status


def wait_until(condition) -> None:
    deadline = time.monotonic() + PATIENCE_S
    while not condition():
        assert time.monotonic() < deadline, "it never happened"
        time.sleep(0.2)


# -- lackpy plan --temporal ----------------------------------------------------------------


def lackpy(*args, cwd):
    return subprocess.run([sys.executable, "-m", "lackpy_kernel", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=PATIENCE_S,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_the_shell_runs_a_saved_plan_on_temporal_and_resumes_it(
        place, worker, temporal_server, queue):  # noqa: F811
    PlanLibrary(place).save("gated", Plan(*GATED))
    remote = ["--temporal", temporal_server.address, "--task-queue", queue]
    paused = lackpy("plan", "run", "gated", "notes.txt", "--key", "cli1", *remote, cwd=place)
    assert paused.returncode == 1
    assert "read_file                done" in paused.stdout
    assert "PlanPaused: paused at step 'approve': publish these?" in paused.stderr
    assert f"`lackpy plan resume cli1 --temporal {temporal_server.address}` continues" \
        in paused.stderr

    shown = lackpy("plan", "status", "cli1", *remote, cwd=place)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0].startswith("cli1  paused  plan: gated")
    assert [line.split()[:2] for line in lines[2:5]] == [
        ["read_file", "done"], ["approve", "paused"], ["size", "waiting"]]

    done = lackpy("plan", "resume", "cli1", *remote, cwd=place)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "17"
    listed = lackpy("plan", "status", *remote, cwd=place)
    assert "cli1" in listed.stdout and "completed" in listed.stdout


def test_the_shell_says_clearly_when_the_server_cannot_be_reached(place):
    shell = lackpy("plan", "status", "--temporal", f"127.0.0.1:{free_port()}", cwd=place)
    assert shell.returncode == 1  # not a crash of the interpreter's teardown
    assert shell.stderr.startswith("lackpy: cannot reach the Temporal server at 127.0.0.1:")
