"""The IPython extension's %%step and %plan: plans built from lackpy cells, in-process and
through a real ipykernel."""

from __future__ import annotations

import os
import sys

import pytest

from lackpy_kernel.engines import Envelope, PlanCompileError, PlanStepError, Store
from lackpy_kernel.errors import UsageError
from tests.support.shell import EXTENSION, extension_shell


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    (tmp_path / ".lackpy").mkdir()
    (tmp_path / ".lackpy" / "config.toml").write_text("[sandbox]\ntimeout = 30\n")
    return tmp_path


@pytest.fixture
def shell(workspace, tmp_path_factory):
    with extension_shell(workspace, tmp_path_factory.mktemp("ipython")) as ip:
        yield ip


def step(shell, line, cell):
    return shell.run_cell_magic("step", line, cell)


def plan(shell, line=""):
    return shell.run_line_magic("plan", line)


def test_lackpy_cells_become_steps_and_the_plan_runs(shell, capsys):
    step(shell, "fetch --writes text", "read_file(task)")
    step(shell, "lines --parallel", "len(task.splitlines())")
    step(shell, "chars --parallel", "len(task)")
    step(shell, "report --task from_parallel_all(lines)", "task")
    shown = capsys.readouterr().out
    assert "step 4 of 4" in shown and "from_parallel_all('lines')" in shown
    assert plan(shell, "run notes.txt") == {"lines": 2, "chars": 11}
    final = capsys.readouterr().out
    assert "report  done" in final


def test_a_step_cell_that_is_not_valid_lackpy_is_refused(shell):
    with pytest.raises(PlanCompileError, match="step 'bad': line 1, col 1: Import is not allowed"):
        step(shell, "bad", "import os")


def test_a_gate_pauses_and_resume_continues(shell, workspace, capsys):
    step(shell, "fetch", "read_file(task)")
    plan(shell, "gate review ok to count?")
    step(shell, "count", "len(task)")
    assert plan(shell, "run notes.txt --key g") is None
    assert "paused at step 'review': ok to count?; %plan resume g continues" in \
        capsys.readouterr().out
    assert Store(workspace / ".lackpy" / "plans.sqlite").read("g")["status"] == "paused"
    assert plan(shell, "resume g") == 11


def test_a_failed_run_raises_plan_step_error(shell):
    step(shell, "fetch", "read_file(task)")
    with pytest.raises(PlanStepError, match="no file 'missing.txt'"):
        plan(shell, "run missing.txt")


def test_run_many_over_a_python_list(shell, capsys):
    step(shell, "count", "len(read_file(task))")
    shell.user_ns["files"] = ["notes.txt", "nope.txt"]
    envelopes = plan(shell, "run-many files --concurrency 2")
    assert all(isinstance(e, Envelope) for e in envelopes)
    assert envelopes[0].payload == 11 and envelopes[1].error.type == "LackpyRuntimeError"
    shell.user_ns["word"] = "x"
    with pytest.raises(UsageError, match="takes the name of a list variable; word is str"):
        plan(shell, "run-many word")


def test_save_and_load(shell, workspace):
    step(shell, "count", "len(task)")
    plan(shell, "save counting")
    assert (workspace / ".lackpy" / "plans" / "counting.json").is_file()
    plan(shell, "clear")
    plan(shell, "load counting")
    assert plan(shell, "run abc") == 3


# -- through a real ipykernel --------------------------------------------------------


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import start_new_kernel

    spec = KernelSpecManager().get_kernel_spec("python3")
    if spec.argv[0] not in ("python", sys.executable):
        pytest.skip(f"the python3 kernelspec runs {spec.argv[0]}, not this interpreter")
    folder = tmp_path_factory.mktemp("kernel-workspace")
    (folder / "notes.txt").write_text("alpha\nbeta\n")
    env = {**os.environ, "IPYTHONDIR": str(tmp_path_factory.mktemp("kernel-ipython"))}
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(folder), env=env,
                              startup_timeout=60)
    try:
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def execute(kc, code):
    outputs = []
    reply = kc.execute_interactive(code, output_hook=outputs.append, timeout=60)
    return reply["content"], outputs


def test_progress_updates_reach_the_cell_that_ran_the_plan(kernel):
    km, kc = kernel
    assert execute(kc, f"%load_ext {EXTENSION}")[0]["status"] == "ok"
    assert execute(kc, "%%step fetch\nread_file(task)")[0]["status"] == "ok"
    assert execute(kc, "%%step size\nlen(task)")[0]["status"] == "ok"
    reply, outputs = execute(kc, "%plan run notes.txt")
    assert reply["status"] == "ok", reply
    kinds = [message["msg_type"] for message in outputs]
    updates = [m["content"] for m in outputs if m["msg_type"] == "update_display_data"]
    assert kinds.count("display_data") == 2 and len(updates) >= 4
    assert any(line.split()[:2] == ["fetch", "done"]
               for u in updates for line in u["data"]["text/plain"].splitlines())
    (result,) = [m["content"] for m in outputs if m["msg_type"] == "execute_result"]
    assert result["data"]["text/plain"] == "11"
