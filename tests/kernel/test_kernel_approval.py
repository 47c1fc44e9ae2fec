"""A kernel cell's file changes wait for the person (``[sandbox] approve = "write"``, the
default): the cell shows the change, then asks over Jupyter's stdin channel; "y" writes
every file, "n" writes none and keeps the variables as they were; a front end without
stdin (nbval, papermill) refuses naming the setting; ``%undo`` takes an applied change
back."""

from __future__ import annotations

from typing import Any

import pytest

from lackpy_kernel.notebook.approval import QUESTION
from lackpy_kernel.notebook.bundles import CHANGES_MIME, TRACE_MIME
from tests.support.kernel import Kernel, Outcome, make_workspace

WRITE_TWO = "kept = 2\nwrite_file('notes.txt', 'changed\\n')\nwrite_file('sub/new.txt', 'n\\n')"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    return make_workspace(tmp_path_factory.mktemp("ws"), "[sandbox]\ntimeout = 10\n")


@pytest.fixture(scope="module")
def kernel(workspace):
    running = Kernel(workspace)
    assert running.execute("%kit read_file,write_file").status == "ok"
    assert running.execute("kept = 1").status == "ok"
    yield running
    running.close()


def answered(kernel: Kernel, code: str, answer: str) -> tuple[Outcome, dict[str, Any]]:
    """Run ``code`` with stdin allowed, answer its one input request with ``answer``; the
    outcome and the request."""
    msg_id = kernel.client.execute(code, allow_stdin=True, stop_on_error=False)
    request = kernel.client.get_stdin_msg(timeout=60)
    assert request["msg_type"] == "input_request"
    kernel.client.input(answer)
    return kernel.wait(msg_id), request["content"]


def files(workspace) -> tuple[str, bool]:
    return (workspace / "notes.txt").read_text(), (workspace / "sub" / "new.txt").exists()


def test_no_leaves_both_files_and_the_variables_as_they_were(kernel, workspace):
    assert kernel.execute("kept = 1").status == "ok"  # whatever the module's tests before set
    outcome, request = answered(kernel, WRITE_TWO, "n")
    assert request["prompt"] == QUESTION
    # the change, before the question; then the trace of the calls that ran (the refused
    # run's, as in this process)
    shown, trace = outcome.of("display_data")
    assert shown["data"]["text/plain"].startswith("2 files changed: +2 -3")
    assert "<code>notes.txt</code>" in shown["data"]["text/html"]
    assert [f["path"] for f in shown["data"][CHANGES_MIME]["files"]] == ["notes.txt",
                                                                        "sub/new.txt"]
    assert [row[1] for row in trace["data"][TRACE_MIME]["rows"]] == ["write_file"] * 2
    assert outcome.status == "error"
    assert outcome.error["ename"] == "ChangeRefusedError"
    assert "were not applied: they were declined" in outcome.error["evalue"]
    assert files(workspace) == ("alpha\nbeta\ngamma\n", False)
    assert kernel.execute("kept").value() == 1


def test_yes_writes_both_files_and_undo_restores_them(kernel, workspace):
    outcome, _ = answered(kernel, WRITE_TWO, "y")
    assert outcome.status == "ok", outcome.reply
    assert files(workspace) == ("changed\n", True)
    assert kernel.execute("kept").value() == 2
    undone = kernel.execute("%undo")
    assert undone.status == "ok"
    assert files(workspace) == ("alpha\nbeta\ngamma\n", False)


def test_without_stdin_the_change_is_refused_naming_the_setting(kernel, workspace):
    outcome = kernel.execute("write_file('notes.txt', 'x')", allow_stdin=False)
    assert outcome.error["ename"] == "ChangeRefusedError"
    assert "this front end takes no input" in outcome.error["evalue"]
    assert '[sandbox] approve = "never"' in outcome.error["evalue"]
    assert files(workspace) == ("alpha\nbeta\ngamma\n", False)


def test_the_opt_out_writes_without_asking(tmp_path):
    workspace = make_workspace(tmp_path, '[sandbox]\napprove = "never"\n')
    kernel = Kernel(workspace)
    try:
        assert kernel.execute("%kit read_file,write_file").status == "ok"
        outcome = kernel.execute("write_file('notes.txt', 'x')", allow_stdin=False)
        assert outcome.status == "ok"
        assert not any(CHANGES_MIME in shown["data"] for shown in outcome.of("display_data"))
        assert (workspace / "notes.txt").read_text() == "x"
    finally:
        kernel.close()


def test_the_stop_button_while_asking_writes_nothing_and_the_next_question_is_asked(
        kernel, workspace):
    msg_id = kernel.client.execute(WRITE_TWO, allow_stdin=True, stop_on_error=False)
    assert kernel.client.get_stdin_msg(timeout=60)["msg_type"] == "input_request"
    kernel.manager.interrupt_kernel()
    stopped = kernel.wait(msg_id)
    assert stopped.error["ename"] == "KeyboardInterrupt"
    assert files(workspace) == ("alpha\nbeta\ngamma\n", False)
    outcome, request = answered(kernel, WRITE_TWO, "y")  # the question was not left behind
    assert request["prompt"] == QUESTION and outcome.status == "ok", outcome.reply
    assert files(workspace) == ("changed\n", True)
    assert kernel.execute("%undo").status == "ok"
