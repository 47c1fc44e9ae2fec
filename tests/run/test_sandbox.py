"""The sandbox worker: limits, atomic sessions, interrupts, and surviving its own death."""

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from lackpy_kernel.run import ExecutionResult, Sandbox, SandboxLimits, sandbox_supported
from lackpy_kernel.run.protocol import Reply
from lackpy_kernel.run.worker import MAX_TWINS
from tests.support.processes import children_of, gone, gone_within, workers_of

pytestmark = pytest.mark.skipif(not sandbox_supported(), reason="the worker needs Linux")

LIMITS = SandboxLimits(timeout=3, memory_mb=256, max_result_mb=8)
# A process per program ([sandbox] reuse = 1): the spare and its twins (the default's kept
# child is tested in tests/run/test_warm_process.py)
FORKING = SandboxLimits(timeout=3, memory_mb=256, max_result_mb=8, reuse=1)
KIT = ["read_file", "write_file", "find_files"]
HOLDS = 2  # children held between programs once it is quiet: the spare and one twin, at first


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "a.txt").write_text("hello")
    return tmp_path


@pytest.fixture
def sandbox(workspace):
    with Sandbox(workspace, LIMITS, approve_writes=False) as box:
        yield box


@pytest.fixture
def forking(workspace):
    with Sandbox(workspace, FORKING, approve_writes=False) as box:
        yield box


def test_runs_a_program_with_tools_and_a_trace(sandbox):
    result = sandbox.run("x = read_file('a.txt')\nprint(len(x))\nx.upper()", KIT)
    assert result.success, result.error
    assert result.output == "HELLO"
    assert result.stdout == "5\n"
    assert [entry.tool for entry in result.trace.entries] == ["read_file"]
    assert result.trace.files_read == ["a.txt"]


def test_writes_land_in_the_workspace(sandbox, workspace):
    result = sandbox.run("write_file('b.txt', 'made')", KIT)
    assert result.success, result.error
    assert (workspace / "b.txt").read_text() == "made"
    assert result.trace.files_modified == ["b.txt"]


def test_variables_persist_across_programs(sandbox):
    assert sandbox.run("n = 20", KIT).success
    assert sandbox.run("n = n + 1", KIT).success
    assert sandbox.run("n * 2", KIT).output == 42


def test_a_failing_program_leaves_the_session_exactly_as_it_was(sandbox):
    sandbox.run("items = [1, 2]\nd = {'k': items}", KIT)
    failed = sandbox.run("items.append(3)\nd['k'].append(4)\nnew = 1\nx = 1 / 0", KIT)
    assert failed.error_type == "ZeroDivisionError"
    after = sandbox.run("[items, d, len(items)]", KIT)
    assert after.output == [[1, 2], {"k": [1, 2]}, 2]
    assert not sandbox.run("new", KIT).success


def test_aliasing_between_variables_survives(sandbox):
    sandbox.run("a = [1]\nb = {'a': a}", KIT)
    sandbox.run("b['a'].append(2)", KIT)
    assert sandbox.run("a", KIT).output == [1, 2]


# A memory bomb has time enough to reach the memory limit however busy the machine is, so
# that only the memory limit can stop it; the others run under the short time limit.
BOMB_LIMITS = {"MemoryError": SandboxLimits(timeout=30, memory_mb=256, max_result_mb=8)}
LIMIT_NAMED = {"TimeoutError": "the 3 s limit", "MemoryError": "256 MB",
               "ResultTooLarge": "the 8 MB limit"}


@pytest.mark.parametrize(
    ("bomb", "error_type"),
    [
        ("sum(range(1000000000000))", "TimeoutError"),
        ("'x' * 100000000000", "MemoryError"),
        ("[0] * 10000000000", "MemoryError"),
        ("big = 'a' * 300000000", "MemoryError"),
        ("x = []\nfor i in range(100000000):\n    x.append('abcdefgh' * 8)", "MemoryError"),
        ("total = 0\nfor i in range(100000000000):\n    total += i", "TimeoutError"),
        # squaring a big int slows down far sooner than it fills the memory
        ("x = 9\nfor i in range(64):\n    x = x * x", "TimeoutError"),
        ("'x' * 9000000", "ResultTooLarge"),  # over the 8 MB reply, under the display limit
        ("x = list(range(3000000))", "ResultTooLarge"),
    ],
)
def test_resource_bombs_are_stopped_by_their_limit_and_the_session_survives(workspace, bomb,
                                                                            error_type):
    limits = BOMB_LIMITS.get(error_type, LIMITS)
    with Sandbox(workspace, limits) as sandbox:
        sandbox.run("kept = 'still here'", KIT)
        started = time.monotonic()
        result = sandbox.run(bomb, KIT)
        assert not result.success
        assert result.error_type == error_type, result.error
        assert time.monotonic() - started < limits.timeout + 5
        assert "limit" in result.error or "memory" in result.error
        assert LIMIT_NAMED[error_type] in result.error, result.error
        assert sandbox.run("kept", KIT).output == "still here"


def test_deeply_nested_values_are_errors_not_crashes(sandbox):
    result = sandbox.run("a = []\nfor i in range(200000):\n    a = [a]\na", KIT)
    assert not result.success
    assert "nested too deeply" in result.error
    assert sandbox.run("1 + 1", KIT).output == 2


def test_interrupt_stops_a_running_program(sandbox):
    sandbox.run("kept = 1", KIT)
    threading.Timer(0.3, sandbox.interrupt).start()
    started = time.monotonic()
    result = sandbox.run("sum(range(1000000000000))", KIT)
    assert result.error_type == "KeyboardInterrupt"
    assert time.monotonic() - started < 2
    assert sandbox.run("kept", KIT).output == 1


def test_a_stray_interrupt_between_programs_is_harmless(sandbox):
    sandbox.run("x = 1", KIT)
    sandbox.interrupt()
    assert sandbox.run("x + 1", KIT).output == 2


def test_a_killed_worker_is_restarted_with_the_session(sandbox):
    sandbox.run("x = {'a': [1, 2]}", KIT)
    old_pid = sandbox.worker_pid
    os.kill(old_pid, signal.SIGKILL)
    time.sleep(0.1)
    result = sandbox.run("x['a']", KIT)
    assert result.success, result.error
    assert result.output == [1, 2]
    assert sandbox.worker_pid != old_pid


def test_keep_false_neither_sees_nor_changes_the_session(sandbox):
    sandbox.run("x = 1", KIT)
    assert not sandbox.run("x", KIT, keep=False).success
    one_shot = sandbox.run("y = 2\ny", KIT, keep=False, return_variables=True)
    assert one_shot.output == 2 and one_shot.variables == {"y": 2}
    assert not sandbox.run("y", KIT).success


def test_non_plain_values_are_not_kept_and_say_so(sandbox):
    result = sandbox.run("it = enumerate([1])\nok = 1\nit", KIT)
    assert result.success
    assert any("it (enumerate)" in note for note in result.notes)
    assert isinstance(result.output, str) and "enumerate" in result.output
    assert sandbox.run("ok", KIT).output == 1


def test_params_are_plain_data(sandbox):
    assert sandbox.run("n + 1", KIT, params={"n": 1}).output == 2
    result = sandbox.run("n", KIT, params={"n": object()})
    assert not result.success and "plain data" in result.error


def test_validation_happens_in_the_sandbox_too(sandbox):
    result = sandbox.run("import os", KIT)
    assert result.error_type == "LackpyValidationError"
    assert result.issues[0].line == 1


def test_unknown_kit_is_a_clear_error(sandbox):
    result = sandbox.run("1", ["no_such_tool"])
    assert not result.success
    assert result.error_type == "KitError" and "no_such_tool" in result.error


def test_reset_forgets_variables(sandbox):
    sandbox.run("x = 1", KIT)
    sandbox.reset()
    assert not sandbox.run("x", KIT).success


def test_the_worker_describes_the_sessions_variables_until_a_reset(sandbox):
    assert sandbox.run("rows = [1, 2]\nn = 3", KIT).success
    assert sandbox.describe_variables() == "n: int = 3\nrows: list, 2 items = [1, 2]"
    assert sandbox.describe_variables(previews=False) == "n: int\nrows: list, 2 items"
    sandbox.reset()
    assert sandbox.describe_variables() == ""


def test_the_worker_ignores_sigint(sandbox):
    sandbox.run("x = 1", KIT)
    os.kill(sandbox.worker_pid, signal.SIGINT)
    time.sleep(0.1)
    assert sandbox.run("x", KIT).output == 1


def test_no_worker_outlives_its_parent(workspace):
    script = textwrap.dedent(f"""
        import sys, time
        from lackpy_kernel.run import Sandbox
        box = Sandbox({str(workspace)!r})
        box.run('x = 1', ['read_file'])
        print(box.worker_pid, flush=True)
        box.run('sum(range(1000000000000))', ['read_file'])
    """)
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    worker_pid = int(parent.stdout.readline())
    time.sleep(0.5)  # the long program is running in a grandchild now
    grandchildren = children_of(worker_pid)
    parent.kill()
    parent.wait()
    parent.stdout.close()
    for pid in [worker_pid, *grandchildren]:
        assert gone_within(pid, 5), f"process {pid} outlived the kernel"




def test_a_crash_in_the_program_is_named_and_the_session_survives(sandbox):
    sandbox.run("kept = 41", KIT)
    result = sandbox.run("t = ()\nfor i in range(1000000):\n    t = (t,)\nlen({t})", KIT)
    assert result.error_type == "SandboxError"
    assert "segmentation fault" in result.error and "nested too deeply" in result.error
    assert sandbox.run("kept + 1", KIT).output == 42


def test_outputs_that_cannot_be_shown_come_back_as_summaries(sandbox):
    result = sandbox.run("a = [0]\nfor i in range(60):\n    a = [a, a]\na", KIT)
    assert result.success and isinstance(result.output, str)
    assert "too large to show in full" in result.notes[0]


@pytest.mark.parametrize(
    "stopper",
    ["sum(range(1000000000000))", "x = 'a' * 20000000", "t = ()\nfor i in range(1000000):\n"
     "    t = (t,)\nlen({t})"],
)
def test_a_stopped_program_lists_the_files_it_wrote_and_leaves_none(sandbox, workspace,
                                                                    stopper):
    result = sandbox.run(f"write_file('marker.txt', 'm')\n{stopper}", KIT)
    assert not result.success
    assert not (workspace / "marker.txt").exists()  # a program is atomic for files
    assert result.trace.files_modified == ["marker.txt"]


def test_an_interrupted_program_lists_its_writes(sandbox):
    assert sandbox.wait_ready(timeout=60)  # a stop sent before the program starts is dropped
    threading.Timer(0.5, sandbox.interrupt).start()
    result = sandbox.run("write_file('a2.txt', 'x')\nsum(range(1000000000000))", KIT)
    assert result.error_type == "KeyboardInterrupt"
    assert result.trace.files_modified == ["a2.txt"]


# -- the worker holds the next child; only what a program changed comes back ----------


def test_a_program_sent_before_the_worker_is_ready_waits_for_it(workspace):
    with Sandbox(workspace, LIMITS) as box:
        box.start()
        started = box.worker_pid
        assert not box.ready  # nothing has been read from it yet
        result = box.run("1 + 1", KIT)
        assert result.output == 2
        assert box.worker_pid == started
        assert box.ready
        assert workers_of(os.getpid()) == [started]


def test_start_twice_starts_one_worker(workspace):
    with Sandbox(workspace, LIMITS) as box:
        box.start()
        box.start()
        assert box.wait_ready(timeout=60)
        assert workers_of(os.getpid()) == [box.worker_pid]


def test_each_program_runs_in_a_child_no_program_ran_in_before(forking):
    """Between programs the worker holds children forked from the session as it is: the
    spare, and its held twins, one of which becomes the spare when a program changes nothing."""
    assert forking.wait_ready(timeout=60)
    waiting = _waiting_children(forking.worker_pid, 1)
    for program in ("1 + 1", "x = 1", "1 + 1", "missing_name"):
        assert forking.run(program, KIT).success is (program != "missing_name")
        waiting = _waiting_children(forking.worker_pid, HOLDS, not_all_of=waiting)


def test_a_program_that_changes_nothing_hands_over_to_a_twin(forking):
    forking.run("x = 1", KIT)
    before = set(_waiting_children(forking.worker_pid, HOLDS))
    assert forking.run("x + 1", KIT).output == 2
    after = set(_waiting_children(forking.worker_pid, HOLDS, not_all_of=before))
    assert len(before & after) == 1  # the twin, now the spare


def test_runs_of_programs_that_change_nothing_go_from_twin_to_twin(forking):
    """Programs that change nothing, back to back: each runs in the twin forked while the
    one before ran, so none waits for a fork, and the worker holds no more children for a
    long run than for one program (the spare and ``MAX_TWINS`` twin)."""
    forking.run("x = 1", KIT)
    before = set(_settled_children(forking.worker_pid))
    assert len(before) == HOLDS == 1 + MAX_TWINS
    for _ in range(3):
        _run_back_to_back(forking, 5)
        assert len(_settled_children(forking.worker_pid)) == HOLDS
    before = set(_settled_children(forking.worker_pid))
    _run_back_to_back(forking, 1)
    after = set(_waiting_children(forking.worker_pid, HOLDS, not_all_of=before))
    assert len(before & after) == 1  # the twin, now the spare


def test_a_program_of_another_kind_lets_the_twin_go(forking):
    """The twin held for programs with another kit is let go, and one for the new kind of
    programs is held instead."""
    forking.run("x = 1", KIT)
    for _ in range(2):
        before = set(_settled_children(forking.worker_pid))
        assert forking.run("x + 2", ["read_file"]).output == 3
        after = set(_settled_children(forking.worker_pid))
        assert len(after) == HOLDS and not before & after, (before, after)
        assert forking.run("x + 1", KIT).output == 2


def test_a_waiting_child_holds_no_pipe_of_another_child(forking):
    """Through one a program's process could give a held twin its go, with limits of its
    own, or read what another child sends."""
    forking.run("x = 1", KIT)
    children = _settled_children(forking.worker_pid)
    assert len(children) == HOLDS
    shared = _pipes(forking.worker_pid, (0, 1))  # the requests and the replies
    own = [_pipes(child) - shared for child in children]
    assert all(len(pipes) == 2 for pipes in own), own
    assert len(set().union(*own)) == 2 * len(children)


def test_a_program_that_changes_the_session_lets_the_twins_go(forking):
    forking.run("x = 1", KIT)
    before = set(_waiting_children(forking.worker_pid, HOLDS))
    assert forking.run("x = 2", KIT).success
    after = set(_waiting_children(forking.worker_pid, HOLDS, not_all_of=before))
    assert not before & after
    assert forking.run("x", KIT).output == 2


@pytest.mark.parametrize("which", ["all", "one"])
def test_waiting_children_that_die_are_replaced(forking, which):
    forking.run("kept = [1]", KIT)
    waiting = _waiting_children(forking.worker_pid, HOLDS)
    for pid in waiting if which == "all" else waiting[:1]:
        os.kill(pid, signal.SIGKILL)
        assert gone_within(pid, 5)
    for _ in range(3):
        assert forking.run("kept", KIT).output == [1]


def test_a_session_holding_a_large_value_does_not_send_it_again(workspace):
    limits = SandboxLimits(timeout=30, memory_mb=1024, max_result_mb=100)
    with Sandbox(workspace, limits) as box:
        assert box.run("big = 'x' * 50000000\nsmall = [1]", KIT).success
        written = _bytes_written(box.worker_pid)
        for _ in range(3):
            assert box.run("1 + 1", KIT).output == 2
            assert box.run("small.append(len(big))", KIT).success
        assert _bytes_written(box.worker_pid) - written < 1_000_000
        assert box.run("[len(big), small]", KIT).output == [50000000, [1] + [50000000] * 3]


def test_a_change_through_a_shared_value_reaches_every_variable_that_shares_it(sandbox):
    sandbox.run("a = [1]\nb = {'a': a}\nn = 5", KIT)
    sandbox.run("c = 'unrelated'", KIT)
    sandbox.run("b['a'].append(2)", KIT)  # names b only; a shares the list
    assert sandbox.run("[a, b, a is b['a']]", KIT).output == [[1, 2], {"a": [1, 2]}, True]
    sandbox.run("d = [b]", KIT)  # d shares b, made in another program
    sandbox.run("d[0]['a'].append(3)", KIT)
    assert sandbox.run("[a, b['a'], d[0]['a']]", KIT).output == [[1, 2, 3]] * 3


def test_sharing_survives_a_worker_restart(sandbox):
    sandbox.run("a = [1]\nb = {'a': a}", KIT)
    sandbox.run("s = 'text'\nb['a'].append(2)", KIT)
    os.kill(sandbox.worker_pid, signal.SIGKILL)
    time.sleep(0.1)
    sandbox.run("a.append(3)", KIT)
    assert sandbox.run("[a, b, s]", KIT).output == [[1, 2, 3], {"a": [1, 2, 3]}, "text"]


def test_a_name_written_in_another_form_still_counts_as_named(sandbox):
    sandbox.run("x = [1]", KIT)
    sandbox.run("ｘ.append(2)", KIT)  # NFKC: the same name as x
    assert sandbox.run("x", KIT).output == [1, 2]


def test_a_variable_replaced_by_something_not_plain_is_dropped(sandbox):
    sandbox.run("it = [1]\nkept = 1", KIT)
    result = sandbox.run("it = enumerate([1])", KIT)
    assert any("it (enumerate)" in note for note in result.notes)
    assert not sandbox.run("it", KIT).success
    assert "it" not in sandbox.variable_types
    assert sandbox.variable_types == {"kept": "int"}


def test_the_session_as_a_whole_stays_under_the_reply_limit(sandbox):
    # max_result_mb is 8: each value fits, together they do not
    assert sandbox.run("a = 'a' * 5000000", KIT).success
    result = sandbox.run("b = 'b' * 5000000", KIT)
    assert result.error_type == "ResultTooLarge"
    assert "session's variables" in result.error
    assert "b" not in sandbox.variable_types
    assert sandbox.run("len(a)", KIT).output == 5000000
    assert sandbox.run("a = None\nb = 'b' * 5000000", KIT).success


def test_variable_types_follow_each_program(sandbox):
    sandbox.run("a = 1\nb = [1]", KIT)
    sandbox.run("a = 'one'", KIT)
    assert sandbox.variable_types == {"a": "str", "b": "list"}


# -- shutting down ---------------------------------------------------------------------


def test_closing_leaves_no_process(workspace):
    box = Sandbox(workspace, FORKING)
    box.run("x = 1", KIT)
    worker = box.worker_pid
    processes = [worker, *_waiting_children(worker, HOLDS)]
    box.close()
    for pid in processes:
        assert gone(pid), f"process {pid} outlived close()"


def test_closing_during_a_program_leaves_no_process(workspace):
    box = Sandbox(workspace, LIMITS)
    box.run("x = 1", KIT)
    worker = box.worker_pid
    running = threading.Thread(target=box.run, args=("sum(range(1000000000000))", KIT))
    running.start()
    time.sleep(0.5)
    processes = [worker, *children_of(worker)]
    box.close()
    running.join(10)
    for pid in processes:
        assert gone(pid), f"process {pid} outlived close()"


def test_closing_a_worker_that_is_still_starting_leaves_no_process(workspace):
    box = Sandbox(workspace, LIMITS)
    box.start()
    worker = box.worker_pid
    box.close()
    assert gone(worker)


def _waiting_children(worker, count, not_all_of=(), within=10):
    """The ``count`` children the worker holds between programs, once they are there and
    at least one of ``not_all_of`` (those it held before a program ran) is gone: the worker
    has exactly ``count`` children, each asleep on its pipe (not one still warming up, nor
    one that was let go and is dying, nor a zombie). AssertionError after ``within`` s."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        children = children_of(worker)
        left = set(not_all_of) - set(children)
        asleep = set(_states(children).values()) == {"S"}
        if len(children) == count and asleep and (left or not not_all_of):
            return children
        time.sleep(0.01)
    raise AssertionError(f"the worker holds {children}, not {count} children without "
                         f"one of {list(not_all_of)}")


def _run_back_to_back(sandbox, count):
    """Run ``count`` programs that change nothing, one right after another."""
    for number in range(count):
        assert sandbox.run(f"x + {number}", KIT).output == 1 + number


def _settled_children(worker, steady=0.5):
    """The children the worker holds once it is quiet: the same ones, each asleep on its
    pipe, for ``steady`` seconds."""
    deadline = time.monotonic() + 20
    seen, since = None, time.monotonic()
    while time.monotonic() < deadline:
        children = sorted(children_of(worker))
        asleep = set(_states(children).values()) == {"S"}
        if children != seen or not asleep:
            seen, since = children, time.monotonic()
        elif time.monotonic() - since >= steady:
            return children
        time.sleep(0.02)
    raise AssertionError(f"the worker's children did not settle: {_states(children)}")


def _pipes(pid, fds=None):
    """The pipes ``pid`` holds open (those of ``fds`` only, when given)."""
    folder = Path(f"/proc/{pid}/fd")
    names = [str(fd) for fd in fds] if fds is not None else [p.name for p in folder.iterdir()]
    links = {os.readlink(folder / name) for name in names}
    return {link for link in links if link.startswith("pipe:")}


def _bytes_written(pid):
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError("no wchar in /proc/PID/io")


def test_a_kits_folder_outside_the_workspace_is_readable_to_programs(tmp_path):
    workspace, kits = tmp_path / "ws", tmp_path / "kits"
    workspace.mkdir()
    kits.mkdir()
    (workspace / "a.txt").write_text("hello")
    (kits / "mine.kit").write_text("read_file\n")
    with Sandbox(workspace, LIMITS, kits_dir=kits) as box:
        assert box.run("read_file('a.txt')", "mine").output == "hello"
        assert box.run("read_file('a.txt')", "mine").output == "hello"


# -- run_async: the reply awaited on the event loop -------------------------------------


async def test_run_async_runs_in_the_session(sandbox):
    assert sandbox.wait_ready(timeout=60)
    assert (await sandbox.run_async("n = 20", KIT)).success
    assert (await sandbox.run_async("n + 1", KIT)).output == 21
    assert sandbox.run("n", KIT).output == 20  # the same session as run()


async def test_run_async_before_the_worker_is_ready_waits_for_it(workspace):
    with Sandbox(workspace, LIMITS) as box:
        box.start()
        assert (await box.run_async("1 + 1", KIT)).output == 2
        assert workers_of(os.getpid()) == [box.worker_pid]


async def test_cancelling_run_async_stops_the_program_and_keeps_the_session(sandbox):
    assert sandbox.wait_ready(timeout=60)
    await sandbox.run_async("kept = 1", KIT)
    task = asyncio.ensure_future(sandbox.run_async("sum(range(1000000000000))", KIT))
    await asyncio.sleep(0.5)
    task.cancel()
    started = time.monotonic()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert time.monotonic() - started < LIMITS.timeout
    assert (await sandbox.run_async("kept + 1", KIT)).output == 2


@pytest.mark.parametrize(("result", "stands"), [
    ({"success": True, "output": 2}, True),  # it ended well first: what it changed landed
    ({"success": False, "error_type": "ToolCallError", "error": "post() was not run: the run was "
      "interrupted while waiting for the answer"}, False),  # the stop's own failure
])
async def test_a_reply_that_comes_while_a_cancelled_run_stops_stands_only_when_it_ended_well(
        workspace, result, stands):
    with Sandbox(workspace, LIMITS) as box:  # not started: the stop has no worker to tell
        reply = asyncio.get_running_loop().create_future()
        task = asyncio.ensure_future(box._await_reply(reply, 30))
        await asyncio.sleep(0)
        task.cancel()
        await asyncio.sleep(0)  # the cancelled wait now gives the reply its grace
        outcome = Reply(ExecutionResult.from_dict(result))
        reply.set_result(outcome)
        if stands:
            assert await task is outcome
        else:
            with pytest.raises(asyncio.CancelledError):
                await task


async def test_run_async_survives_a_killed_worker(sandbox):
    assert sandbox.wait_ready(timeout=60)
    await sandbox.run_async("x = [1]", KIT)
    old_pid = sandbox.worker_pid
    os.kill(old_pid, signal.SIGKILL)
    first = await sandbox.run_async("x", KIT)  # either it finds the worker gone and restarts
    if not first.success:  # it, or the worker dies under it and the next program restarts it
        assert first.error_type == "SandboxError" and "restarted" in first.error
        first = await sandbox.run_async("x", KIT)
    assert first.output == [1]
    assert sandbox.worker_pid != old_pid


def test_the_children_of_programs_run_back_to_back_are_reaped(sandbox):
    """After each program the worker kills its child at once and reaps it when it can:
    cells sent back to back leave no pile of zombies, and once they stop only the
    spare and its twins are left."""
    assert sandbox.wait_ready(timeout=60)
    for _ in range(40):
        assert sandbox.run("1 + 1", KIT).output == 2
    children = children_of(sandbox.worker_pid)
    assert len(children) < 20, _states(children)
    children = _settled_children(sandbox.worker_pid)  # a pause can have added a twin
    assert HOLDS <= len(children) <= 1 + MAX_TWINS, children


def _states(pids):
    """Each process's state letter, as /proc shows it (Z: a zombie not yet reaped), or
    "dying" for one killed that has not run since (it still shows the state it slept in)."""
    states = {}
    for pid in pids:
        try:
            states[pid] = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            status = Path(f"/proc/{pid}/status").read_text()
        except (FileNotFoundError, ProcessLookupError):  # reaped meanwhile
            states[pid] = "gone"
            continue
        pending = (int(line.split()[1], 16) for line in status.splitlines()
                   if line.startswith(("SigPnd:", "ShdPnd:")))
        if any(mask >> (signal.SIGKILL - 1) & 1 for mask in pending):
            states[pid] = "dying"
    return states
