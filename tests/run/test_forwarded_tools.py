"""Tools in the sandbox: Python tools in the program's process, the rest called here for it.

A program always runs in the sandbox's child. A tool of a Python source runs
there with it; a tool that runs in the kernel (registered from Python, or a
source's ``where = "kernel"``) is called in this process, through the worker,
and its answer goes back down: under the program's deadline and tool-call
budget, with its errors, timeouts and non-plain results handled as in-process.
"""

from __future__ import annotations

import contextlib
import os
import socket
import textwrap
import threading
import time

import pytest

from lackpy_kernel.kit import ToolSpec, builtin_toolbox
from lackpy_kernel.kit.builtin_specs import READ_GRADE
from lackpy_kernel.kit.sources import ToolSources
from lackpy_kernel.run import Sandbox, SandboxLimits, sandbox_supported
from lackpy_kernel.run.walls import os_walls

pytestmark = pytest.mark.skipif(not sandbox_supported(), reason="the worker needs Linux")

LIMITS = SandboxLimits(timeout=20, memory_mb=256, max_result_mb=1, max_tool_calls=5)
MODULE = '''
import os
import time


def child_pid() -> int:
    """The process id of the process that runs this tool."""
    return os.getpid()


def nap(seconds: float) -> str:
    """Sleep, then say so."""
    time.sleep(seconds)
    return "rested"


def peek(path: str) -> str:
    """The start of any file on the machine."""
    with open(path) as stream:
        return stream.read(20)


def digest_and_version(text: str) -> list:
    """What modules linked to system libraries say (OpenSSL's sha256, SQLite's version)."""
    import hashlib
    import sqlite3

    return [hashlib.sha256(text.encode()).hexdigest(), sqlite3.sqlite_version]


def knock(port: int) -> str:
    """Open a TCP connection to a port of this machine."""
    from urllib.request import urlopen

    try:
        urlopen(f"http://127.0.0.1:{port}/", timeout=5)
    except ConnectionError:
        pass  # the listener does not speak HTTP: connecting is all this tool does
    return "connected"
'''
LOAD_FAILS_IN_WORKER = '''
import sys

if sys.flags.no_site:  # the sandbox's worker (python -S) imports it too
    raise RuntimeError("this module needs the kernel's process")


def kernel_only() -> str:
    """A tool whose module loads only in the kernel."""
    return "here"
'''


class Boom(Exception):
    """An exception class the program's process does not know."""


class KernelTools:
    """Tools registered from Python (they run in this process), and what they saw."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.release = threading.Event()
        self.entered = threading.Event()
        self.finished = threading.Event()

    def register(self, toolbox) -> None:
        for name in ("kernel_pid", "echo", "fail", "give_function", "huge", "wait_here"):
            toolbox.register_tool(ToolSpec(name, "custom", **READ_GRADE), getattr(self, name))

    def kernel_pid(self) -> int:
        self.calls.append("kernel_pid")
        return os.getpid()

    def echo(self, value, *, twice=False):
        self.calls.append("echo")
        return [value, value] if twice else value

    def fail(self, kind: str):
        errors = {"value": ValueError("the value is wrong"), "key": KeyError("missing"),
                  "boom": Boom("a class of its own")}
        raise errors[kind]

    def give_function(self):
        return os.getpid

    def huge(self) -> str:
        return "x" * 2_000_000

    def wait_here(self) -> str:
        self.entered.set()
        self.release.wait(60)
        self.finished.set()
        return "late"


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "mine.py").write_text(textwrap.dedent(MODULE))
    (tmp_path / "tools" / "kernel_only.py").write_text(textwrap.dedent(LOAD_FAILS_IN_WORKER))
    return tmp_path


@pytest.fixture
def kernel_tools():
    tools = KernelTools()
    yield tools
    tools.release.set()


@pytest.fixture
def sandbox(workspace, kernel_tools):
    toolbox = builtin_toolbox(workspace)
    kernel_tools.register(toolbox)
    sources = ToolSources({
        "mine": {"plugin": "python", "path": "tools/mine.py", "overrides": {
            "nap": {"timeout": 0.5}}},
        "here": {"plugin": "python", "path": "tools/mine.py", "where": "kernel",
                 "functions": ["nap"], "grade": "read", "overrides": {"nap": {"timeout": 0.5}}},
        "loadless": {"plugin": "python", "path": "tools/kernel_only.py"},
    }, workspace)
    sources.attach(toolbox)
    box = Sandbox(workspace, LIMITS, toolbox=toolbox)
    yield box
    box.close()
    sources.close()


def test_a_kernel_tool_is_called_here_and_a_python_tool_runs_in_the_programs_process(sandbox):
    result = sandbox.run("[kernel_pid(), child_pid()]", ["kernel_pid", "child_pid"])
    assert result.success, result.error
    kernel, child = result.output
    assert kernel == os.getpid()
    assert child not in (os.getpid(), sandbox.worker_pid)


def test_each_call_is_traced_with_its_tools_source(sandbox):
    result = sandbox.run("x = read_file('tools/mine.py')\n[echo(1, twice=True), child_pid() > 0]",
                         ["read_file", "echo", "child_pid"])
    assert result.output == [[1, 1], True]
    assert [(entry.tool, entry.args, entry.source) for entry in result.trace.entries] == [
        ("read_file", {"path": "tools/mine.py"}, "builtin"),
        ("echo", {"arg0": 1, "twice": True}, "custom"),
        ("child_pid", {}, "mine (python: tools/mine.py)"),
    ]


@pytest.mark.parametrize(("kind", "error_type", "message"), [
    ("value", "ValueError", "ValueError: the value is wrong"),
    ("key", "KeyError", "KeyError: 'missing'"),
    ("boom", "ToolCallError", "ToolCallError: Boom: a class of its own"),
])
def test_what_a_kernel_tool_raises_reaches_the_program_as_itself(sandbox, kind, error_type,
                                                                 message):
    result = sandbox.run(f"n = 1\nfail({kind!r})", ["fail"])
    assert (result.error_type, result.error_line) == (error_type, 2)
    assert result.error.startswith(message)
    assert result.trace.entries[0].success is False


def test_a_kernel_tool_that_returns_what_is_not_plain_data_fails_its_call(sandbox):
    result = sandbox.run("f = give_function()", ["give_function"])
    assert result.error_type == "ToolCallError"
    assert ("tool 'give_function' from custom returned a builtin_function_or_method, which is "
            "not plain data") in result.error


def test_a_failed_program_with_kernel_tools_leaves_the_session_as_it_was(sandbox):
    assert sandbox.run("items = [echo(1)]", ["echo"]).success
    failed = sandbox.run("items.append(echo(2))\nfail('value')", ["echo", "fail"])
    assert not failed.success
    assert sandbox.run("items", ["echo"]).output == [1]


def test_forwarded_calls_count_against_the_tool_call_budget(sandbox, kernel_tools):
    result = sandbox.run("[echo(i) for i in range(10)]", ["echo"])
    assert result.error_type == "ToolCallBudgetError"
    assert kernel_tools.calls == ["echo"] * LIMITS.max_tool_calls


def test_arguments_over_the_reply_limit_are_not_sent(sandbox, kernel_tools):
    result = sandbox.run("echo('x' * 2000000)", ["echo"])
    assert result.error_type == "ToolCallError"
    assert "the arguments of echo() are 2,000," in result.error
    assert "over the 1,000,000 a call may send" in result.error
    assert kernel_tools.calls == []


def test_a_result_over_the_reply_limit_fails_the_call(sandbox):
    result = sandbox.run("h = huge()", ["huge"])
    assert result.error_type == "ToolCallError"
    assert "over the 1,000,000 a program may take in" in result.error


@pytest.mark.parametrize("kit", [["nap"], {"nap": "nap"}])
def test_a_python_tools_timeout_stops_its_call_in_the_programs_process(sandbox, kit):
    result = sandbox.run("n = 1\nnap(60)", kit)
    assert result.error_type == "ToolCallTimeoutError"
    assert "tool 'nap' from mine (python: tools/mine.py) took longer than its 0.5 s timeout" \
        in result.error


def test_a_kernel_tools_timeout_answers_the_program_while_the_tool_runs_on(workspace,
                                                                            kernel_tools):
    toolbox = builtin_toolbox(workspace)
    sources = ToolSources({"here": {"plugin": "python", "path": "tools/mine.py",
                                    "where": "kernel", "grade": "read", "timeout": 0.5}},
                          workspace)
    sources.attach(toolbox)
    with Sandbox(workspace, LIMITS, toolbox=toolbox) as box:
        result = box.run("nap(60)", ["nap"])
        assert result.error_type == "ToolCallTimeoutError"
        assert "took longer than its 0.5 s timeout" in result.error
        assert box.run("child_pid() > 0", ["child_pid"]).output is True
    sources.close()


def test_the_deadline_stops_a_program_waiting_on_a_kernel_tool_and_its_late_answer_is_dropped(
        workspace, kernel_tools):
    toolbox = builtin_toolbox(workspace)
    kernel_tools.register(toolbox)
    with Sandbox(workspace, SandboxLimits(timeout=2), toolbox=toolbox) as box:
        assert box.run("n = 1", ["echo"]).success
        stopped = box.run("n = 2\nwait_here()", ["wait_here"])
        assert stopped.error_type == "TimeoutError"
        kernel_tools.release.set()
        assert kernel_tools.finished.wait(30)
        time.sleep(0.2)  # the late answer would reach the worker now, were it sent
        after = box.run("[n, echo('fresh')]", ["echo"])
        assert after.output == [1, "fresh"], after.error


def test_an_interrupt_during_a_kernel_tools_call_leaves_the_session_as_it_was(workspace,
                                                                              kernel_tools):
    toolbox = builtin_toolbox(workspace)
    kernel_tools.register(toolbox)
    with Sandbox(workspace, LIMITS, toolbox=toolbox) as box:
        assert box.run("n = 1", ["echo"]).success
        outcome = {}
        running = threading.Thread(target=lambda: outcome.update(
            result=box.run("n = 2\nwait_here()", ["wait_here"])))
        running.start()
        assert kernel_tools.entered.wait(30)
        box.interrupt()
        running.join(30)
        assert outcome["result"].error_type == "KeyboardInterrupt"
        kernel_tools.release.set()
        assert box.run("[n, echo(3)]", ["echo"]).output == [1, 3]


async def test_run_async_answers_forwarded_calls_on_the_event_loop(sandbox):
    assert sandbox.wait_ready(60)
    result = await sandbox.run_async("[kernel_pid(), echo('a'), child_pid() > 0]",
                                     ["kernel_pid", "echo", "child_pid"])
    assert result.output == [os.getpid(), "a", True]


def test_a_python_tool_the_walls_stop_says_to_run_it_in_the_kernel(sandbox, tmp_path_factory):
    walls = {wall.name: wall.up for wall in os_walls()}
    if not walls.get("landlock filesystem"):
        pytest.skip("this kernel has no Landlock")
    outside = tmp_path_factory.mktemp("outside") / "secret.txt"
    outside.write_text("the secret")
    result = sandbox.run(f"peek({str(outside)!r})", ["peek"])
    assert result.error_type == "ToolCallError"
    assert "tool 'peek' from mine (python: tools/mine.py) was stopped by the sandbox's walls " \
           "(Permission denied)" in result.error
    assert 'set where = "kernel" in [tools.providers.mine] (or overrides.peek.where)' \
        in result.error
    assert "the secret" not in result.error


@pytest.fixture
def listener():
    """A port on 127.0.0.1 whose server hangs up on every connection."""
    server = socket.create_server(("127.0.0.1", 0))

    def hang_up() -> None:
        with contextlib.suppress(OSError):
            while True:
                server.accept()[0].close()

    threading.Thread(target=hang_up, daemon=True).start()
    yield server.getsockname()[1]
    server.close()


def test_a_python_tool_that_opens_a_socket_is_stopped_by_the_walls_through_urllib(sandbox,
                                                                                  listener):
    if not {wall.name: wall.up for wall in os_walls()}.get("seccomp"):
        pytest.skip("this kernel has no seccomp filters")
    result = sandbox.run(f"knock({listener})", ["knock"])
    assert result.error_type == "ToolCallError"
    assert "was stopped by the sandbox's walls (Operation not permitted)" in result.error
    assert "(or overrides.knock.where)" in result.error


def test_a_python_tool_may_import_modules_that_load_system_libraries(sandbox):
    """hashlib (OpenSSL) and sqlite3 load shared libraries from the system's folders when
    first imported: the walls let them be read."""
    import hashlib
    import sqlite3

    result = sandbox.run("digest_and_version('lackpy')", ["digest_and_version"])
    assert result.success, result.error
    assert result.output == [hashlib.sha256(b"lackpy").hexdigest(), sqlite3.sqlite_version]


def test_a_python_tool_declared_for_the_kernel_runs_outside_the_walls(workspace, listener,
                                                                      tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside") / "notes.txt"
    outside.write_text("kept elsewhere")
    toolbox = builtin_toolbox(workspace)
    sources = ToolSources({"here": {"plugin": "python", "path": "tools/mine.py",
                                    "where": "kernel"}}, workspace)
    sources.attach(toolbox)
    with Sandbox(workspace, LIMITS, toolbox=toolbox) as box:
        result = box.run(f"[peek({str(outside)!r}), knock({listener})]", ["peek", "knock"],
                         approve=lambda change: True)  # graded write: each call is asked for
    sources.close()
    assert result.output == ["kept elsewhere", "connected"], result.error


def test_a_module_the_worker_cannot_load_fails_the_kit_saying_where_to_run_it(sandbox):
    result = sandbox.run("kernel_only()", ["kernel_only"])
    assert result.error_type == "KitError"
    assert "this module needs the kernel's process" in result.error
    assert 'should say where = "kernel" in its [tools.providers.loadless] table' in result.error
    assert sandbox.run("echo(1)", ["echo"]).output == 1


def test_a_kit_with_an_unknown_tool_fails_before_anything_runs(sandbox):
    result = sandbox.run("x = 1", ["read_file", "no_such_tool"])
    assert result.error_type == "KitError" and "unknown tool 'no_such_tool'" in result.error
