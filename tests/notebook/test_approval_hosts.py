"""Both notebook hosts (the lackpy kernel, ``%%lackpy`` in Python) show a program's file
changes and ask "Apply these changes? [y/N]" over Jupyter's stdin channel before they
land (``[sandbox] approve = "write"``, the default): "y" writes every file, "n" none and
the variables stay as they were; without stdin the change is refused naming the setting;
``%undo`` takes an applied change back."""

from __future__ import annotations

from lackpy_kernel.notebook.approval import QUESTION
from lackpy_kernel.notebook.bundles import CHANGES_MIME
from tests.support.hosts import Host, host_with
from tests.support.kernel import make_workspace

WRITES = "write_file('notes.txt', 'changed\\n')\nwrite_file('sub/new.txt', 'n\\n')"
BEFORE = ("alpha\nbeta\ngamma\n", False)


host = host_with(lambda folder: make_workspace(folder, "[sandbox]\ntimeout = 10\n"),
                 first="kept = 1")


def writing_cell(host: Host) -> str:
    """A cell whose program writes two files and sets ``kept`` to 2 (on success)."""
    if host.name == "kernel":
        return f"%kit read_file,write_file\nkept = 2\n{WRITES}"
    return f"%%lackpy --kit read_file,write_file --out kept\n{WRITES}\n2"


def files(host: Host) -> tuple[str, bool]:
    workspace = host.kernel.workspace
    return (workspace / "notes.txt").read_text(), (workspace / "sub" / "new.txt").exists()


def kept(host: Host) -> str | None:
    return host.run("kept").result


def test_no_writes_nothing_and_keeps_the_variables(host: Host):
    shown = host.run(writing_cell(host), answer="n")
    assert shown.asked == QUESTION
    change = next(d for d in shown.displays if CHANGES_MIME in d)
    assert change["text/plain"].splitlines()[0] == "2 files changed: +2 -3"
    assert "<code>sub/new.txt</code>" in change["text/html"]
    assert shown.status == "error" and shown.ename == "ChangeRefusedError"
    assert "not applied: they were declined" in shown.evalue
    assert files(host) == BEFORE
    assert kept(host) == "1"


def test_yes_writes_both_and_undo_restores_them(host: Host):
    shown = host.run(writing_cell(host), answer="y")
    assert shown.ok, shown
    assert files(host) == ("changed\n", True)
    assert kept(host) == "2"
    assert host.run("%undo").ok
    assert files(host) == BEFORE


def test_without_stdin_the_change_is_refused_naming_the_setting(host: Host):
    shown = host.program("write_file('notes.txt', 'x')", kit="read_file,write_file")
    assert shown.ename == "ChangeRefusedError", shown
    assert "this front end takes no input" in shown.evalue
    assert '[sandbox] approve = "never"' in shown.evalue
    assert files(host) == BEFORE


def test_the_stop_button_while_asking_writes_nothing_and_the_next_question_is_asked(
        host: Host):
    kernel = host.kernel
    before = kept(host)
    msg_id = kernel.client.execute(writing_cell(host), allow_stdin=True, stop_on_error=False)
    request = kernel.client.get_stdin_msg(timeout=60)
    assert request["content"]["prompt"] == QUESTION
    kernel.manager.interrupt_kernel()  # while input() waits for the answer
    stopped = kernel.wait(msg_id)
    assert stopped.status == "error"
    assert stopped.error["ename"] == "KeyboardInterrupt", stopped.error
    assert files(host) == BEFORE
    assert kept(host) == before
    shown = host.run(writing_cell(host), answer="y")  # the question was not left behind
    assert shown.asked == QUESTION and shown.ok, shown
    assert files(host) == ("changed\n", True)
    assert host.run("%undo").ok
    assert files(host) == BEFORE
