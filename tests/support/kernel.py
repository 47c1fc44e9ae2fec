"""A lackpy kernel started from an installed kernelspec, and a blocking client for tests."""

from __future__ import annotations

import ast
import time
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty
from typing import Any

from jupyter_client.manager import KernelManager

KERNEL_NAME = "lackpy-test"


@dataclass
class Outcome:
    """What one execute request produced: the reply and the iopub messages, by type."""

    reply: dict[str, Any]
    messages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def status(self) -> str:
        return self.reply["content"]["status"]

    def of(self, msg_type: str) -> list[dict[str, Any]]:
        return [m["content"] for m in self.messages if m["msg_type"] == msg_type]

    def stream(self, name: str) -> str:
        return "".join(c["text"] for c in self.of("stream") if c["name"] == name)

    def result(self, mime: str = "text/plain") -> Any:
        (result,) = self.of("execute_result")
        return result["data"][mime]

    def value(self) -> Any:
        """The result's value, read back from its text (lackpy's results are Python literals)."""
        return ast.literal_eval(self.result())

    @property
    def error(self) -> dict[str, Any]:
        (error,) = self.of("error")
        return error


class Kernel:
    """A running lackpy kernel and a blocking client, in a workspace folder."""

    def __init__(self, workspace: Path, kernel_name: str = KERNEL_NAME,
                 env: dict[str, str] | None = None, *, wait: bool = True, **launch: Any) -> None:
        """Start the kernel (``launch``: more of ``start_kernel``'s arguments, such as
        ``stderr``); with ``wait``, return once it answers (else at once)."""
        self.workspace = workspace
        self.manager = KernelManager(kernel_name=kernel_name)
        self.manager.start_kernel(cwd=str(workspace), **({"env": env} if env else {}), **launch)
        self.client = self.manager.client()
        self.client.start_channels()
        self._early: dict[str, list[dict[str, Any]]] = {}  # iopub seen by start()
        if wait:
            self.client.wait_for_ready(timeout=60)

    def execute(self, code: str, timeout: float = 60, **options: Any) -> Outcome:
        # A test's cell that fails on purpose must not abort the cells sent after it; no
        # one answers a question (as under nbval): a test that answers sends its own.
        options.setdefault("stop_on_error", False)
        options.setdefault("allow_stdin", False)
        msg_id = self.client.execute(code, **options)
        return self.wait(msg_id, timeout)

    def start(self, code: str, timeout: float = 60) -> str:
        """Send ``code`` and return once the kernel has begun executing it (its
        ``execute_input`` came), however loaded the machine; ``wait`` gets the outcome."""
        msg_id = self.client.execute(code, stop_on_error=False)
        seen = self._early.setdefault(msg_id, [])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = self.client.get_iopub_msg(timeout=timeout)
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            if message["msg_type"] == "execute_input":
                return msg_id
            if message["msg_type"] != "status":
                seen.append(message)
        raise TimeoutError(f"the kernel did not start executing the cell in {timeout} s")

    def wait(self, msg_id: str, timeout: float = 60) -> Outcome:
        reply = self.client.get_shell_msg(timeout=timeout)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = self.client.get_shell_msg(timeout=timeout)
        outcome = Outcome(reply, self._early.pop(msg_id, []))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                message = self.client.get_iopub_msg(timeout=timeout)
            except Empty:
                break
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            if message["msg_type"] == "status":
                if message["content"]["execution_state"] == "idle":
                    break
                continue
            outcome.messages.append(message)
        return outcome

    @property
    def pid(self) -> int:
        return self.manager.provisioner.process.pid

    def close(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


EXIT_WAIT = 60  # a hang, not a slow machine: a loaded one's shutdown has taken over 9 s


def wait_for_exit(kernel: Kernel, timeout: float = EXIT_WAIT) -> bool:
    """Whether ``kernel``'s process exits within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while kernel.manager.is_alive():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def make_workspace(folder: Path, config: str = "") -> Path:
    """A workspace with a text file, a Python file, and an optional config."""
    (folder / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    (folder / "app.py").write_text("def main():\n    helper()\n\n\ndef helper():\n    return 1\n")
    if config:
        (folder / ".lackpy").mkdir(exist_ok=True)
        (folder / ".lackpy" / "config.toml").write_text(config)
    return folder


OUTBOX_TOOL = '''
def post(path: str, text: str) -> str:
    """Append ``text`` to the file at ``path`` (anywhere: it runs in the kernel)."""
    with open(path, "a") as out:
        out.write(text + "\\n")
    return "sent"
'''
OUTBOX_PROVIDER = """
[tools.providers.outbox]
plugin = "python"
path = "tools/outbox.py"
where = "kernel"
"""


def add_outbox(workspace: Path, config: str = "") -> Path:
    """``workspace``, its kit given ``post``: a kernel-side tool graded write (the default
    for a Python tool), so each call of it is asked for; ``config`` starts its config."""
    (workspace / "tools").mkdir()
    (workspace / "tools" / "outbox.py").write_text(OUTBOX_TOOL)
    (workspace / ".lackpy").mkdir(exist_ok=True)
    (workspace / ".lackpy" / "config.toml").write_text(config + OUTBOX_PROVIDER)
    return workspace


def outbox_workspace(folder: Path) -> Path:
    """A workspace (``make_workspace``) with ``post`` (``add_outbox``)."""
    return add_outbox(make_workspace(folder), "[sandbox]\ntimeout = 10\n")
