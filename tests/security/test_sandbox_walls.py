"""The OS wall around a program's process: with the Python-level checks bypassed, the
Linux kernel itself refuses what a program must not do.

Each test forks a child, puts up the walls exactly as the sandbox worker does for a
program (``child.wall_plan(...).put_up()``), then calls the raw operation (``open``, the file
tool's body without its path check, ``socket``, ``execv``, ``kill``). A wall this
machine's kernel lacks is skipped, and says so.
"""

from __future__ import annotations

import ast
import json
import os
import signal
import socket
import sys
import time
from pathlib import Path

import pytest

from lackpy_kernel.kit import Workspace
from lackpy_kernel.kit.atomic import atomic_write_text
from lackpy_kernel.kit.builtin_tools import _read_text, _write_text
from lackpy_kernel.kit.staging import Stage, stage_folder, staging
from lackpy_kernel.run import Sandbox, SandboxLimits
from lackpy_kernel.run.walls import os_walls
from tests.support.processes import children_of, gone
from tests.support.walls import UP, in_walled_child, needs

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux walls")
SECRET = "TOP-SECRET-walls"


@pytest.fixture
def arena(tmp_path):
    workspace, outside = tmp_path / "ws", tmp_path / "outside"
    workspace.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    (workspace / "mine.txt").write_text("mine")
    return workspace, outside


def test_the_walls_the_diagnostic_reports_are_the_walls_a_child_gets(arena):
    workspace, _ = arena
    outcome = in_walled_child(workspace, lambda: None)
    assert set(outcome["up"]) == UP
    assert all(wall.detail for wall in os_walls())


@needs("landlock filesystem")
def test_the_os_refuses_to_read_outside_the_workspace(arena):
    workspace, outside = arena
    outcome = in_walled_child(workspace, lambda: open(outside / "secret.txt").read())
    assert outcome.get("error") == "PermissionError", outcome
    assert SECRET not in json.dumps(outcome)


@needs("landlock filesystem")
def test_the_read_tool_without_its_path_check_is_refused_by_the_os(arena):
    workspace, outside = arena
    tool_workspace = Workspace(workspace)
    outcome = in_walled_child(workspace, lambda: _read_text(
        tool_workspace, outside / "secret.txt", "secret.txt"))
    assert outcome.get("error") == "PermissionError", outcome


@needs("landlock filesystem")
def test_the_write_tools_atomic_write_without_path_checks_is_refused_by_the_os(arena):
    workspace, outside = arena
    outcome = in_walled_child(workspace, lambda: atomic_write_text(outside / "planted.txt", "x"))
    assert outcome.get("error") == "PermissionError", outcome
    assert list(outside.iterdir()) == [outside / "secret.txt"]


@needs("landlock filesystem")
def test_the_os_refuses_to_list_or_make_folders_outside(arena):
    workspace, outside = arena
    assert in_walled_child(workspace, lambda: os.listdir(outside))["error"] == "PermissionError"
    assert in_walled_child(workspace, lambda: os.mkdir(outside / "new"))["error"] == "PermissionError"
    assert not (outside / "new").exists()


@needs("landlock filesystem")
def test_inside_the_workspace_the_walls_let_the_tools_work_through_the_stage(arena):
    workspace, _ = arena
    tool_workspace = Workspace(workspace)
    root = str(tool_workspace.root)

    def read_write_and_list():
        with staging(Stage(root, stage_folder(root, os.getpid()), made=True)):
            _write_text(tool_workspace, workspace / "sub" / "new.txt", "sub/new.txt", "made")
        return (_read_text(tool_workspace, workspace / "mine.txt", "mine.txt"),
                sorted(os.listdir(workspace)), os.getpid())

    outcome = in_walled_child(workspace, read_write_and_list)
    assert "error" not in outcome, outcome
    child = ast.literal_eval(outcome["value"])[2]
    assert Path(stage_folder(root, child), "sub", "new.txt").read_text() == "made"
    assert not (workspace / "sub").exists()


@needs("seccomp")
def test_the_os_refuses_new_sockets(arena):
    workspace, _ = arena
    outcome = in_walled_child(workspace, lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
    assert (outcome.get("error"), outcome.get("errno")) == ("PermissionError", 1), outcome
    unix = in_walled_child(workspace, lambda: socket.socketpair())
    assert unix.get("error") == "PermissionError", unix


@needs("seccomp")
def test_the_os_refuses_to_run_another_program(arena):
    workspace, _ = arena
    outcome = in_walled_child(workspace, lambda: os.execv("/bin/true", ["true"]))
    assert outcome.get("error") == "PermissionError", outcome


@needs("seccomp")
def test_the_os_refuses_new_processes(arena):
    workspace, _ = arena
    outcome = in_walled_child(workspace, os.fork)
    assert outcome.get("error") == "PermissionError", outcome


@needs("seccomp")
def test_the_os_refuses_to_signal_the_kernel(arena):
    workspace, _ = arena
    parent = os.getpid()
    outcome = in_walled_child(workspace, lambda: os.kill(parent, signal.SIGTERM))
    assert outcome.get("error") == "PermissionError", outcome


@needs("landlock network")
def test_tcp_is_refused_even_on_an_open_socket(arena):
    # seccomp refuses socket(); Landlock refuses connect on a socket made before the walls
    workspace, _ = arena
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    made_before = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        outcome = in_walled_child(workspace, lambda: made_before.connect(("127.0.0.1", port)))
        assert outcome.get("error") == "PermissionError", outcome
    finally:
        made_before.close()
        listener.close()


@pytest.mark.parametrize(("reuse", "waiting"), [(1, 2), (10, 1)])
def test_the_sandbox_workers_children_run_behind_the_walls(tmp_path, reuse, waiting):
    """With a process per program the spare and its twin wait; with more, the kept one."""
    with Sandbox(tmp_path, SandboxLimits(timeout=10, reuse=reuse)) as box:
        assert box.run("1 + 1", ["read_file"]).output == 2
        statuses = _waiting_statuses(box.worker_pid, waiting)
    for status in statuses:
        if "no_new_privs" in UP:
            assert "NoNewPrivs:\t1" in status
        if "seccomp" in UP:
            assert "Seccomp:\t2" in status


def _status(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:  # reaped since it was listed
        return ""


def _waiting_statuses(worker: int, count: int) -> list[str]:
    """/proc status of the worker's ``count`` waiting children, once all are walled."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        children = [pid for pid in children_of(worker) if not gone(pid)]  # no zombie
        statuses = [_status(pid) for pid in children]
        if len(children) == count and all(statuses) and ("seccomp" not in UP
                                   or all("Seccomp:\t2" in status for status in statuses)):
            return statuses
        time.sleep(0.02)
    raise AssertionError(f"the worker holds no {count} walled children")
