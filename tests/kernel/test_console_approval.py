"""``jupyter console`` asks too: in a terminal (tmux), a writing cell shows the change and
the stdin question; "n" writes nothing, "y" writes the file."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lackpy_kernel.notebook.approval import QUESTION
from tests.support.kernel import KERNEL_NAME

TMUX = shutil.which("tmux")
MISSING = ("no tmux (apt-get install tmux)" if TMUX is None else
           "no jupyter-console (pip install jupyter-console)"
           if importlib.util.find_spec("jupyter_console") is None else None)
pytestmark = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")

WAIT_S = 120  # the longest a step may take on a busy machine
WRITE = "write_file('notes.txt', 'ALPHA\\n')"
REFUSED = "ChangeRefusedError: the program's changes to notes.txt were not applied"


class Console:
    """``jupyter console --kernel`` in a tmux session on a socket of its own, in ``workspace``."""

    def __init__(self, workspace: Path, state: Path) -> None:
        self.tmux = [TMUX or "tmux", "-S", str(state / "tmux.sock")]
        env = {**os.environ, "IPYTHONDIR": str(state / "ipython"),
               "JUPYTER_RUNTIME_DIR": str(state / "runtime")}
        console = [sys.executable, "-m", "jupyter_console", "--kernel", KERNEL_NAME,
                   "--no-confirm-exit"]
        subprocess.run([*self.tmux, "new-session", "-d", "-s", "console", "-x", "160", "-y", "50",
                        "-c", str(workspace), subprocess.list2cmdline(console)],
                       env=env, check=True, timeout=30)

    def screen(self) -> str:
        """What the terminal shows, its scrollback included, wrapped lines joined."""
        return subprocess.run([*self.tmux, "capture-pane", "-p", "-J", "-S", "-", "-t", "console"],
                              capture_output=True, text=True, check=True, timeout=30).stdout

    def wait_for(self, text: str, count: int = 1) -> str:
        """The screen once ``text`` shows on it ``count`` times; AssertionError after WAIT_S."""
        deadline = time.monotonic() + WAIT_S
        while (screen := self.screen()).count(text) < count:
            assert time.monotonic() < deadline, f"{text!r} not shown {count}x:\n{screen}"
            time.sleep(0.2)
        return screen

    def type(self, line: str) -> None:
        """Type ``line`` and press Enter."""
        subprocess.run([*self.tmux, "send-keys", "-t", "console", "-l", line], check=True, timeout=30)
        subprocess.run([*self.tmux, "send-keys", "-t", "console", "Enter"], check=True, timeout=30)

    def close(self) -> None:
        """Leave the console (Ctrl-D: it shuts its kernel down), then the tmux server."""
        subprocess.run([*self.tmux, "send-keys", "-t", "console", "C-d"], timeout=30)
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline and subprocess.run(
                [*self.tmux, "has-session", "-t", "console"], capture_output=True,
                timeout=30).returncode == 0:
            time.sleep(0.2)
        subprocess.run([*self.tmux, "kill-server"], capture_output=True, timeout=30)


@pytest.fixture
def console(installed_kernelspec, tmp_path):
    workspace = tmp_path / "workspace"  # the default config: approve = "write"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("alpha\n")
    (tmp_path / "state").mkdir()
    running = Console(workspace, tmp_path / "state")
    try:
        running.wait_for("In [1]:")
        running.type("%kit read_file,write_file")
        running.wait_for("In [2]:")
        yield running, workspace / "notes.txt"
    finally:
        running.close()


def test_jupyter_console_shows_the_change_and_asks_no_writes_nothing_yes_writes(console):
    terminal, notes = console
    terminal.type(WRITE)
    screen = terminal.wait_for(QUESTION.rstrip())
    asked = screen[screen.index(WRITE):]
    assert [line.rstrip() for line in asked.splitlines()[1:8]] == [
        "1 file changed: +1 -1", "  changed  notes.txt  +1 -1", "--- notes.txt (changed)",
        "@@ -1 +1 @@", "-alpha", "+ALPHA", QUESTION.rstrip()]
    terminal.type("n")
    terminal.wait_for(REFUSED)
    assert notes.read_text() == "alpha\n"

    terminal.type(WRITE)
    terminal.wait_for(QUESTION.rstrip(), count=2)
    terminal.type("y")
    screen = terminal.wait_for("In [4]:")
    assert screen.count(REFUSED) == 1
    assert notes.read_text() == "ALPHA\n"
