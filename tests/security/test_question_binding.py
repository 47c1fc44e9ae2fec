"""Each question the kernel asks over Jupyter's stdin channel is bound to its own request
(issue 39): an answer meant for one question cannot approve another. A cell whose program
asks twice (a call of a kernel-side tool graded write, then its file changes) takes each
answer for its own question; an ``input_reply`` sent late, naming an earlier question as its
parent, is not taken as the answer to the question asked now; and a reply that arrives while
no question is pending is not kept for the next one. Over jupyter_client, against the real
kernel."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.support.kernel import Kernel, Outcome, outbox_workspace

WRITE = "%kit write_file\nwrite_file('landed.txt', 'payload\\n')"
CALL_QUESTION = "Call post? [y/N] "
WRITE_QUESTION = "Apply these changes? [y/N] "


@pytest.fixture
def kernel(installed_kernelspec, tmp_path):
    running = Kernel(outbox_workspace(tmp_path))
    yield running
    running.close()


def asks_twice(kernel: Kernel) -> str:
    """A cell that calls ``post`` (asked for first) and writes a file (asked for after)."""
    outbox = kernel.workspace / "outbox.txt"
    return (f"%kit post,write_file\npost({str(outbox)!r}, 'sent')\n"
            "write_file('landed.txt', 'payload\\n')")


def question(kernel: Kernel) -> dict[str, Any]:
    """The next input_request the kernel sends."""
    request = kernel.client.get_stdin_msg(timeout=60)
    assert request["msg_type"] == "input_request", request
    return request


def reply(kernel: Kernel, value: str, to: dict[str, Any] | None) -> None:
    """Send the input_reply ``value``, its parent the question ``to`` (as JupyterLab binds
    its answers), or none (as ``jupyter_client``'s ``input`` sends one)."""
    client = kernel.client
    client.stdin_channel.send(client.session.msg("input_reply", {"value": value}, parent=to))


def settled(kernel: Kernel) -> None:
    """Wait until what was sent on stdin has reached the kernel (a cell's round trip)."""
    time.sleep(0.5)
    assert kernel.execute("1 + 1").status == "ok"


def test_each_of_a_cells_two_questions_takes_its_own_answer(kernel: Kernel):
    msg_id = kernel.client.execute(asks_twice(kernel), allow_stdin=True, stop_on_error=False)
    first = question(kernel)
    assert first["content"]["prompt"] == CALL_QUESTION
    reply(kernel, "y", first)
    reply(kernel, "y", first)  # a double click: its second "y" is still the first question's
    second = question(kernel)
    assert second["content"]["prompt"] == WRITE_QUESTION
    assert second["header"]["msg_id"] != first["header"]["msg_id"]
    reply(kernel, "n", second)
    outcome = kernel.wait(msg_id)
    assert (kernel.workspace / "outbox.txt").read_text() == "sent\n"  # the call was let run
    assert declined(outcome)
    assert not (kernel.workspace / "landed.txt").exists()


def test_a_late_answer_to_an_earlier_question_does_not_answer_the_next(kernel: Kernel):
    msg_id = kernel.client.execute(asks_twice(kernel), allow_stdin=True, stop_on_error=False)
    first = question(kernel)
    reply(kernel, "y", first)
    second = question(kernel)
    reply(kernel, "y", first)  # arrives while the second question waits: not its answer
    time.sleep(0.5)
    reply(kernel, "n", second)
    outcome = kernel.wait(msg_id)
    assert declined(outcome)
    assert not (kernel.workspace / "landed.txt").exists()


def test_an_answer_to_an_abandoned_question_does_not_answer_the_next_cells(kernel: Kernel):
    msg_id = kernel.client.execute(WRITE, allow_stdin=True, stop_on_error=False)
    abandoned = question(kernel)
    kernel.manager.interrupt_kernel()  # the stop button, while the question waits
    assert kernel.wait(msg_id).error["ename"] == "KeyboardInterrupt"
    msg_id = kernel.client.execute(WRITE, allow_stdin=True, stop_on_error=False)
    asked = question(kernel)
    reply(kernel, "y", abandoned)  # the person's answer to the stopped cell's question
    time.sleep(0.5)
    reply(kernel, "n", asked)
    assert declined(kernel.wait(msg_id))
    assert not (kernel.workspace / "landed.txt").exists()


@pytest.mark.parametrize("bound", [False, True], ids=["unbound", "bound to no question"])
def test_a_reply_while_no_question_waits_is_not_kept_for_the_next(kernel: Kernel, bound):
    stray = {"header": {"msg_id": "no-such-question", "msg_type": "input_request"}}
    reply(kernel, "y", stray if bound else None)
    settled(kernel)
    msg_id = kernel.client.execute(WRITE, allow_stdin=True, stop_on_error=False)
    asked = question(kernel)
    reply(kernel, "n", asked)
    assert declined(kernel.wait(msg_id))
    assert not (kernel.workspace / "landed.txt").exists()


def test_an_answer_bound_to_its_question_applies_it(kernel: Kernel):
    msg_id = kernel.client.execute(WRITE, allow_stdin=True, stop_on_error=False)
    asked = question(kernel)
    assert asked["content"]["prompt"] == WRITE_QUESTION
    reply(kernel, "y", asked)
    outcome = kernel.wait(msg_id)
    assert outcome.status == "ok", outcome.reply
    assert (kernel.workspace / "landed.txt").read_text() == "payload\n"


def declined(outcome: Outcome) -> bool:
    """Whether the cell failed because its file changes were declined."""
    content = outcome.reply["content"]
    return (content["status"] == "error" and content["ename"] == "ChangeRefusedError"
            and "declined" in content["evalue"])
