"""``lackpy run`` and ``lackpy delegate`` show a program's file changes and ask on the
terminal before they land (``[sandbox] approve = "write"``, the default); without a
terminal they refuse, naming the setting and ``--yes``; ``--yes`` applies them."""

from __future__ import annotations

import os
import pty
import subprocess
import sys

import pytest

from lackpy_kernel.notebook.approval import QUESTION
from tests.support.kernel import add_outbox
from tests.test_cli import lackpy

WRITES = "write_file('notes.txt', 'changed\\n')\nwrite_file('sub/new.txt', 'n\\n')\n"
KIT = ("--kit", "read_file,write_file")


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "notes.txt").write_text("one\ntwo\nthree\n")
    (tmp_path / "writes.lackpy").write_text(WRITES)
    return tmp_path


def unchanged(workspace) -> bool:
    return ((workspace / "notes.txt").read_text() == "one\ntwo\nthree\n"
            and not (workspace / "sub").exists())


def test_without_a_terminal_the_change_is_refused_naming_the_setting(workspace):
    done = lackpy("run", "writes.lackpy", *KIT, cwd=workspace)
    assert done.returncode == 1
    assert "2 files changed: +2 -3" in done.stderr  # shown, then refused
    assert "there is no terminal to ask on" in done.stderr
    assert '[sandbox] approve = "never"' in done.stderr and "--yes" in done.stderr
    assert unchanged(workspace)


def test_yes_shows_the_change_and_applies_it(workspace):
    done = lackpy("run", "writes.lackpy", *KIT, "--yes", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert "--- notes.txt (changed)\n@@ -1,3 +1 @@\n-one\n-two\n-three\n+changed" in done.stderr
    assert "applied (--yes)" in done.stderr
    assert (workspace / "sub" / "new.txt").read_text() == "n\n"


def test_the_opt_out_in_the_config_applies_without_asking(workspace):
    (workspace / ".lackpy").mkdir()
    (workspace / ".lackpy" / "config.toml").write_text('[sandbox]\napprove = "never"\n')
    done = lackpy("run", "writes.lackpy", *KIT, cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert "files changed" not in done.stderr
    assert (workspace / "notes.txt").read_text() == "changed\n"


def on_a_terminal(workspace, answer: str, *args: str) -> tuple[int, str]:
    """Run ``lackpy`` with a terminal as its stdin, answer its question; the exit code and
    what the terminal showed."""
    main, terminal = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "lackpy_kernel", *args], cwd=workspace,
                               stdin=terminal, stdout=terminal, stderr=terminal,
                               start_new_session=True)
    os.close(terminal)
    shown = b""
    while b"/N] " not in shown:  # the question, whatever it asks ([y/N], [all/unseen/N])
        chunk = os.read(main, 4096)
        assert chunk, shown
        shown += chunk
    os.write(main, f"{answer}\n".encode())
    code = process.wait(timeout=60)
    try:
        while chunk := os.read(main, 4096):
            shown += chunk
    except OSError:  # the terminal closed with the process
        pass
    os.close(main)
    return code, shown.decode()


@pytest.mark.parametrize("answer, applied", [("y", True), ("n", False), ("", False)])
def test_on_a_terminal_the_person_is_asked(workspace, answer, applied):
    code, shown = on_a_terminal(workspace, answer, "run", "writes.lackpy", *KIT)
    assert "+changed" in shown and QUESTION in shown
    assert code == (0 if applied else 1), shown
    assert unchanged(workspace) is not applied
    if not applied:
        assert "were not applied: they were declined" in shown


@pytest.fixture
def posting(workspace, tmp_path_factory):
    """A workspace whose ``post`` runs in the kernel (graded write), ``posts.lackpy`` calling
    it; the file it appends to."""
    outbox = tmp_path_factory.mktemp("out") / "outbox.txt"
    add_outbox(workspace)
    (workspace / "posts.lackpy").write_text(f"post({str(outbox)!r}, 'hi\\x1b[2J')\n")
    return outbox


@pytest.mark.parametrize("answer", ["y", "n"])
def test_a_write_tools_call_is_asked_for_on_the_terminal(workspace, posting, answer):
    code, shown = on_a_terminal(workspace, answer, "run", "posts.lackpy", "--kit", "post")
    assert f"call post({str(posting)!r}, 'hi\\x1b[2J')" in shown
    assert "Call post? [y/N] " in shown and QUESTION not in shown
    assert "\x1b[2J" not in shown
    assert code == (0 if answer == "y" else 1), shown
    assert posting.exists() is (answer == "y")
    if answer == "n":
        assert "post() was not run: it was declined" in shown


def test_a_write_tools_call_without_a_terminal_is_refused_unless_yes(workspace, posting):
    done = lackpy("run", "posts.lackpy", "--kit", "post", cwd=workspace)
    assert done.returncode == 1
    assert "post() was not run: there is no terminal to ask on" in done.stderr
    assert not posting.exists()
    done = lackpy("run", "posts.lackpy", "--kit", "post", "--yes", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert posting.read_text() == "hi\x1b[2J\n"
