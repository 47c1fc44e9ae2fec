"""A program's file changes wait for a person's approval (``[sandbox] approve = "write"``):
the worker sends the change up before it commits, the run's approver answers; a refused
change is a failed run (nothing written, the variables as before), a run with no one to
ask refuses naming the setting, and a stop while asking refuses too."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from lackpy_kernel.errors import ChangeRefusedError
from lackpy_kernel.kit.changes import Change
from lackpy_kernel.run import Sandbox, SandboxLimits, sandbox_supported
from tests.run.test_staged_writes import KIT, WRITE_TWO, tree

pytestmark = pytest.mark.skipif(not sandbox_supported(), reason="the worker needs Linux")

LIMITS = SandboxLimits(timeout=5, memory_mb=256, max_result_mb=8)
BEFORE = {"a.txt": "old a"}
AFTER = {"a.txt": "new a", "sub/b.txt": "new b"}


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "a.txt").write_text("old a")
    return tmp_path


@pytest.fixture
def sandbox(workspace):
    with Sandbox(workspace, LIMITS) as box:
        yield box


class Person:
    """An approver that answers ``answer`` and keeps what it was shown."""

    def __init__(self, answer: bool) -> None:
        self.answer, self.shown = answer, []

    def __call__(self, change: Change) -> bool:
        self.shown.append(change)
        return self.answer


def test_an_approved_change_writes_both_files_and_keeps_the_variables(sandbox, workspace):
    person = Person(True)
    result = sandbox.run(WRITE_TWO + "kept = 1", KIT, approve=person)
    assert result.success, result.error
    assert tree(workspace) == AFTER
    assert sandbox.variable_types == {"kept": "int"}
    (change,) = person.shown
    assert [(file.path, file.status, file.added, file.removed) for file in change.files] == \
        [("a.txt", "changed", 1, 1), ("sub/b.txt", "new", 1, 0)]
    assert change.files[0].lines == ("@@ -1 +1 @@", "-old a", "+new a")


def test_a_declined_change_writes_nothing_and_keeps_the_variables_as_before(sandbox, workspace):
    assert sandbox.run("kept = 1", KIT).success
    result = sandbox.run(WRITE_TWO + "kept = 2\nnew = 3", KIT, approve=Person(False))
    assert result.error_type == "ChangeRefusedError"
    assert "changes to a.txt, sub/b.txt were not applied: they were declined" in result.error
    assert tree(workspace) == BEFORE
    assert sandbox.variable_types == {"kept": "int"}
    assert sandbox.run("kept", KIT).output == 1
    with pytest.raises(ChangeRefusedError, match="declined"):
        result.raise_for_error()


def test_with_no_one_to_ask_the_change_is_refused_naming_the_setting(sandbox, workspace):
    result = sandbox.run(WRITE_TWO, KIT)
    assert result.error_type == "ChangeRefusedError"
    assert 'no one can be asked' in result.error
    assert '[sandbox] approve = "never"' in result.error
    assert tree(workspace) == BEFORE


def test_an_approver_may_refuse_with_its_own_reason(sandbox, workspace):
    def refuse(change: Change) -> bool:
        raise ChangeRefusedError("this front end takes no input")

    result = sandbox.run(WRITE_TWO, KIT, approve=refuse)
    assert "not applied: this front end takes no input" in result.error
    assert tree(workspace) == BEFORE


def test_without_approval_the_change_lands_unasked(workspace):
    person = Person(False)
    with Sandbox(workspace, LIMITS, approve_writes=False) as box:
        assert box.run(WRITE_TWO, KIT, approve=person).success
    assert tree(workspace) == AFTER and person.shown == []


def test_nothing_is_asked_for_a_program_that_fails_or_writes_nothing(sandbox, workspace):
    person = Person(True)
    assert not sandbox.run(WRITE_TWO + "read_file('missing.txt')", KIT, approve=person).success
    assert sandbox.run("read_file('a.txt')", KIT, approve=person).success
    assert person.shown == [] and tree(workspace) == BEFORE


def test_the_time_limit_does_not_run_while_the_person_decides(workspace):
    def slow(change: Change) -> bool:
        time.sleep(2.5)  # past the program's 1 s limit
        return True

    with Sandbox(workspace, SandboxLimits(timeout=1)) as box:
        result = box.run(WRITE_TWO, KIT, approve=slow)
    assert result.success, result.error
    assert tree(workspace) == AFTER


def test_a_stop_while_asking_refuses_the_change_and_the_next_run_goes_on(sandbox, workspace):
    asked, release = threading.Event(), threading.Event()

    def waits(change: Change) -> bool:
        asked.set()
        release.wait(30)
        return True  # too late: the stop came first

    outcome = {}
    thread = threading.Thread(target=lambda: outcome.setdefault(
        "result", sandbox.run(WRITE_TWO + "kept = 1", KIT, approve=waits)))
    thread.start()
    assert asked.wait(30)
    sandbox.interrupt()
    release.set()
    thread.join(30)
    result = outcome["result"]
    assert result.error_type == "KeyboardInterrupt"
    assert "interrupted while waiting for the answer" in result.error
    assert tree(workspace) == BEFORE and sandbox.variable_types == {}
    assert sandbox.run("write_file('c.txt', 'c')", KIT, approve=Person(True)).success
    assert tree(workspace) == {**BEFORE, "c.txt": "c"}


def test_run_async_asks_without_blocking_the_loop(sandbox, workspace):
    ticks = []

    async def main() -> None:
        assert (await sandbox.run_async("1", KIT)).success  # the worker is ready

        def blocking(change: Change) -> bool:
            time.sleep(0.3)
            return True

        async def tick() -> None:
            while True:
                ticks.append(1)
                await asyncio.sleep(0.01)

        ticker = asyncio.ensure_future(tick())
        before = len(ticks)
        result = await sandbox.run_async(WRITE_TWO, KIT, approve=blocking)
        ticker.cancel()
        assert result.success, result.error
        assert len(ticks) > before + 1  # the loop ran while the approver blocked

    asyncio.run(main())
    assert tree(workspace) == AFTER


def test_an_async_approver_is_awaited_even_before_the_worker_is_ready(workspace):
    async def main() -> list[str]:
        shown: list[str] = []

        async def person(change: Change) -> bool:
            await asyncio.sleep(0)
            shown.append(change.summary())
            return True

        with Sandbox(workspace, LIMITS) as box:  # not started: run_async takes a thread
            assert (await box.run_async(WRITE_TWO, KIT, approve=person)).success
            assert (await box.run_async("write_file('c.txt', 'c')", KIT,
                                        approve=person)).success
        return shown

    assert asyncio.run(main()) == ["2 files changed: +2 -1", "1 file changed: +1 -0"]
    assert tree(workspace) == {**AFTER, "c.txt": "c"}


def test_cancelling_run_async_while_asking_writes_nothing(sandbox, workspace):
    async def main() -> None:
        assert (await sandbox.run_async("1", KIT)).success
        asked = asyncio.Event()

        async def never(change: Change) -> bool:
            asked.set()
            await asyncio.sleep(3600)
            return True

        task = asyncio.ensure_future(sandbox.run_async(WRITE_TWO + "kept = 1", KIT,
                                                       approve=never))
        await asked.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert (await sandbox.run_async("write_file('c.txt', 'c')", KIT,
                                        approve=Person(True))).success

    asyncio.run(main())
    assert tree(workspace) == {**BEFORE, "c.txt": "c"}
    assert sandbox.variable_types == {}

