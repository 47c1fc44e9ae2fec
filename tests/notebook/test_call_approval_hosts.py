"""Both notebook hosts (the lackpy kernel, ``%%lackpy`` in Python) ask before a call of a
tool graded write that runs in the kernel (here ``where = "kernel"``): the call is shown
(the tool, its arguments) and the person answers "Call post? [y/N]" over
Jupyter's stdin channel; "y" runs it, "n" fails that call naming the setting, and the tool
never runs."""

from __future__ import annotations

import pytest

from lackpy_kernel.notebook.bundles import CHANGES_MIME
from tests.support.hosts import Host, host_with
from tests.support.kernel import outbox_workspace

CALL_QUESTION = "Call post? [y/N] "  # the prompt says what it asks for: this call


host = host_with(outbox_workspace)


@pytest.fixture
def outbox(tmp_path):
    return tmp_path / "outbox.txt"


def posting(host: Host, outbox) -> str:
    program = f"post({str(outbox)!r}, 'hello\\x1b[2J')"
    if host.name == "kernel":
        return f"%kit post\n{program}"
    return f"%%lackpy --kit post\n{program}"


def test_yes_runs_the_call_it_showed(host: Host, outbox):
    shown = host.run(posting(host, outbox), answer="y")
    assert shown.asked == CALL_QUESTION
    call = next(d for d in shown.displays if CHANGES_MIME in d)
    assert call[CHANGES_MIME]["call"]["name"] == "post"
    assert call["text/plain"].startswith(f"call post({str(outbox)!r}, 'hello\\x1b[2J')")
    assert "\x1b" not in call["text/plain"] and "\x1b" not in call["text/html"]
    assert shown.ok, shown
    assert outbox.read_text() == "hello\x1b[2J\n"


def test_no_fails_the_call_and_the_tool_never_runs(host: Host, outbox):
    shown = host.run(posting(host, outbox), answer="n")
    assert shown.asked == CALL_QUESTION
    assert shown.status == "error"
    assert "post() was not run: it was declined" in shown.evalue
    assert '[sandbox] approve = "never"' in shown.evalue
    assert not outbox.exists()


def test_without_stdin_the_call_is_refused_naming_the_setting(host: Host, outbox):
    shown = host.run(posting(host, outbox))
    assert "post() was not run: this front end takes no input" in shown.evalue
    assert not outbox.exists()


def test_the_stop_button_while_a_call_is_asked_for_refuses_it(host: Host, outbox):
    kernel = host.kernel
    msg_id = kernel.client.execute(posting(host, outbox), allow_stdin=True, stop_on_error=False)
    assert kernel.client.get_stdin_msg(timeout=60)["content"]["prompt"] == CALL_QUESTION
    kernel.manager.interrupt_kernel()  # while the question waits for its answer
    stopped = kernel.wait(msg_id)
    assert stopped.status == "error" and stopped.error["ename"] == "KeyboardInterrupt"
    assert not outbox.exists()
    shown = host.run(posting(host, outbox), answer="y")  # the question was not left behind
    assert shown.ok, shown
    assert outbox.read_text() == "hello\x1b[2J\n"
