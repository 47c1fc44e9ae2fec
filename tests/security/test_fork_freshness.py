"""Each program's process is fresh, however the worker forks it (twins forked ahead, a
frozen worker heap). Attacks and checks: a tool's random numbers repeating from one program
to the next (a generator not reseeded after the fork), a program reaching a process another
program ran in, a tool module that starts a thread in the worker, a program in a twin
reaching what a warm-up left."""

from __future__ import annotations

import textwrap

import pytest

from lackpy_kernel.service import LackpyService
from lackpy_kernel.session import LackpySession
from tests.support.kernel import make_workspace

TOOL = '''
import os
import random
import threading

if os.environ.get("LACKPY_TEST_TOOL_THREAD"):
    threading.Thread(target=threading.Event().wait, daemon=True).start()


def draw() -> list:
    """A random number and the process that drew it."""
    return [random.random(), os.getpid()]
'''
RUN = 6


def workspace_with_tool(folder, reuse: int = 1):
    workspace = make_workspace(folder, textwrap.dedent(f"""
        [sandbox]
        approve = "never"
        timeout = 30
        reuse = {reuse}

        [tools.providers.dice]
        plugin = "python"
        path = "tools/dice.py"
        """))
    (workspace / "tools").mkdir()
    (workspace / "tools" / "dice.py").write_text(TOOL)
    return workspace


@pytest.mark.parametrize("reuse", [1, 3])
@pytest.mark.parametrize("thread", [False, True], ids=["one-thread", "tool-starts-a-thread"])
async def test_a_tools_random_numbers_and_process_are_new_for_each_program(tmp_path, monkeypatch,
                                                                         thread, reuse):
    """With ``[sandbox] reuse = 1`` each program has a process of its own; with more, a
    process runs at most that many (of one key), and never the worker's."""
    if thread:  # the worker then forks with a second thread running
        monkeypatch.setenv("LACKPY_TEST_TOOL_THREAD", "1")
    with LackpyService(workspace_with_tool(tmp_path, reuse)) as service:
        draws = []
        for _ in range(RUN):  # back to back: twin after twin
            result = await service.run_program("draw()", ["draw"], sandbox=True, session="dice")
            assert result.success, result.error
            draws.append(result.output)
        worker = service.sandbox_worker_pid
    numbers, pids = [number for number, _ in draws], [pid for _, pid in draws]
    assert len(set(numbers)) == RUN, numbers  # each child reseeded its generator
    assert len(set(pids)) == RUN // reuse and worker not in pids, (pids, worker)
    assert all(pids.count(pid) == reuse for pid in pids), pids


async def test_a_program_in_a_twin_sees_only_its_session(tmp_path):
    """Programs back to back run in twins (warmed up when there is time): the warm-up's
    tools are its own, and the session is as the program before left it."""
    with LackpyService(make_workspace(tmp_path, '[sandbox]\napprove = "never"\n')) as service:
        session = LackpySession(service, ["read_file"])
        try:
            assert (await session.run("n = 1")).success
            outputs = [(await session.run("n + 1")).output for _ in range(RUN)]
            assert outputs == [2] * RUN
            warm_up = await session.run("lackpy_warm_up(1)")
            assert not warm_up.success and "lackpy_warm_up" in (warm_up.error or "")
            reads = await session.run("[read_file('notes.txt'), n]")
            assert reads.output == ["alpha\nbeta\ngamma\n", 1]
        finally:
            session.close()
