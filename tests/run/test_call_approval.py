"""A call of a tool graded write that runs in the kernel (registered from Python, an MCP
server's, ``where = "kernel"``) acts beyond the files, so it cannot be staged: where
``[sandbox] approve = "write"`` the run's approver is asked before each call, with the
tool's name and its arguments; the program's deadline stands while the person decides; a
refusal fails that call (the tool never runs) naming the setting, and ``approve = "never"``
asks nothing."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading

import pytest

from lackpy_kernel.errors import ChangeRefusedError
from lackpy_kernel.kit import ToolSpec, builtin_toolbox
from lackpy_kernel.kit.builtin_specs import READ_GRADE
from lackpy_kernel.kit.changes import Change
from lackpy_kernel.run import Sandbox, SandboxLimits, sandbox_supported
from lackpy_kernel.run.failures import ASK_INTERRUPTED
from lackpy_kernel.run.kernel_side._approval import call_change, judge
from lackpy_kernel.service import LackpyService

pytestmark = pytest.mark.skipif(not sandbox_supported(), reason="the worker needs Linux")

TIMEOUT = 3  # seconds a program may run; the slow approvers below take longer


class World:
    """Kernel tools: ``post`` acts on the world (graded write), ``look`` only reads."""

    def __init__(self) -> None:
        self.posted: list[tuple[str, str]] = []

    def register(self, toolbox) -> None:
        toolbox.register_tool(ToolSpec("post", "custom"), self.post)
        toolbox.register_tool(ToolSpec("look", "custom", **READ_GRADE), self.look)

    def post(self, to: str, text: str = "") -> str:
        self.posted.append((to, text))
        return "sent"

    def look(self) -> int:
        return len(self.posted)


class Asked:
    """An approver that answers ``verdict`` (after ``waiting`` seconds, or once ``release``
    is set) and keeps each change it was asked about."""

    def __init__(self, verdict: bool = True, waiting: float = 0.0) -> None:
        self.verdict, self.waiting = verdict, waiting
        self.changes: list[Change] = []
        self.entered = threading.Event()
        self.release = threading.Event()
        if not waiting:
            self.release.set()

    def __call__(self, change: Change) -> bool:
        self.changes.append(change)
        self.entered.set()
        self.release.wait(self.waiting or 60)
        return self.verdict


@pytest.fixture
def world():
    return World()


def sandbox_for(workspace, world: World, *, approve_writes: bool = True) -> Sandbox:
    toolbox = builtin_toolbox(workspace)
    world.register(toolbox)
    return Sandbox(workspace, SandboxLimits(timeout=TIMEOUT, memory_mb=256), toolbox=toolbox,
                   approve_writes=approve_writes)


@pytest.fixture
def sandbox(tmp_path, world):
    box = sandbox_for(tmp_path, world)
    yield box
    box.close()


def test_yes_runs_the_call_after_showing_the_tool_and_its_arguments(sandbox, world):
    asked = Asked(True)
    result = sandbox.run("[look(), post('ops@example.org', text='deploy'), look()]",
                         ["post", "look"], approve=asked)
    assert result.success, result.error
    assert result.output == [0, "sent", 1]
    (change,) = asked.changes  # the read-only tool was not asked about
    assert change.files == () and change.call is not None
    assert change.summary() == "call post('ops@example.org', text='deploy')"
    assert "post acts beyond the workspace's files" in change.to_text()
    assert world.posted == [("ops@example.org", "deploy")]


def test_no_fails_the_call_naming_the_setting_and_the_tool_never_runs(sandbox, world):
    result = sandbox.run("n = look()\npost('ops@example.org')\nlook()", ["post", "look"],
                         approve=Asked(False))
    assert not result.success
    assert (result.error_type, result.error_line) == ("ToolCallError", 2)
    assert "post() was not run: it was declined" in result.error
    assert '[sandbox] approve = "never"' in result.error
    assert world.posted == []


def test_a_refusal_with_a_reason_is_passed_on(sandbox, world):
    def refuses(change: Change) -> bool:
        raise ChangeRefusedError("this front end takes no input")

    result = sandbox.run("post('x')", ["post"], approve=refuses)
    assert "post() was not run: this front end takes no input" in result.error
    assert world.posted == []


def test_without_an_approver_the_call_is_refused(sandbox, world):
    result = sandbox.run("post('x')", ["post"])
    assert result.error_type == "ToolCallError"
    assert "post() was not run: no one can be asked here" in result.error
    assert world.posted == []


def test_the_opt_out_asks_nothing(tmp_path, world):
    with sandbox_for(tmp_path, world, approve_writes=False) as box:
        asked = Asked(False)
        result = box.run("post('x')", ["post"], approve=asked)
    assert result.output == "sent"
    assert asked.changes == [] and world.posted == [("x", "")]


def test_the_deadline_stands_while_the_person_decides(sandbox, world):
    slow = Asked(True, waiting=TIMEOUT + 1.5)  # longer than the program may run
    result = sandbox.run("a = post('one')\nb = post('two')\n[a, b]", ["post"], approve=slow)
    assert result.success, result.error
    assert result.output == ["sent", "sent"]
    assert len(slow.changes) == 2


def test_the_deadline_stands_on_the_event_loop_too(sandbox, world):
    async def slowly(change: Change) -> bool:  # an async approver, awaited on the loop
        await asyncio.sleep(TIMEOUT + 1.5)
        return True

    async def main():
        assert sandbox.wait_ready(30)
        return await sandbox.run_async("post('one')", ["post"], approve=slowly)

    result = asyncio.run(main())
    assert result.output == "sent", result.error


def test_the_deadline_still_stops_the_program_after_the_answer(sandbox, world):
    result = sandbox.run("post('x')\nsum(range(1000000000000))", ["post"], approve=Asked(True))
    assert result.error_type == "TimeoutError"
    assert world.posted == [("x", "")]


def test_a_stop_while_asking_refuses_the_call_even_if_yes_comes_later(sandbox, world):
    late = Asked(True, waiting=60)
    outcome: list = []
    running = threading.Thread(target=lambda: outcome.append(
        sandbox.run("kept = 1\npost('x')", ["post"], approve=late)))
    running.start()
    assert late.entered.wait(60)
    sandbox.interrupt()
    running.join(60)
    (result,) = outcome
    assert result.error_type == "KeyboardInterrupt"
    late.release.set()  # the person answers yes after the stop
    assert sandbox.run("look()", ["look"]).output == 0
    assert world.posted == []


@pytest.mark.parametrize("awaited", [False, True], ids=["blocking", "async"])
@pytest.mark.parametrize("verdict", [True, False])
def test_a_program_run_without_the_sandbox_asks_before_the_call_too(tmp_path, world, verdict,
                                                                    awaited):
    """An async approver (as the MCP server's elicitation is) is awaited on the caller's
    loop, as in the sandbox: the program runs off that loop meanwhile."""
    asked = Asked(verdict)

    async def on_the_loop(change: Change) -> bool:
        await asyncio.sleep(0)  # what it awaits lives on the caller's loop
        return asked(change)

    async def main():
        with LackpyService(tmp_path) as service:
            world.register(service.toolbox)
            return await service.run_program("[post('x'), look()]", ["post", "look"],
                                             sandbox=False,
                                             approve=on_the_loop if awaited else asked)

    result = asyncio.run(main())
    assert [change.summary() for change in asked.changes] == ["call post('x')"]
    if verdict:
        assert result.output == ["sent", 1]
    else:
        assert "post() was not run: it was declined" in result.error
        assert world.posted == []


def test_a_question_cancelled_on_its_loop_is_an_abandoned_one_not_a_failure(caplog):
    # blocking() waits on a future of the loop's; a prompt cancelled meanwhile cancels it
    def cancelled(change):
        raise concurrent.futures.CancelledError

    verdict = judge(cancelled, call_change("post", ["x"], {}))
    assert verdict.apply is False and verdict.reason == ASK_INTERRUPTED
    assert not [record for record in caplog.records if record.levelname == "ERROR"]
