"""A walled process runs the programs of one key, at most ``[sandbox] reuse`` of them: the
same key's next program finds it warm; another key (another session among them), a program
nobody has seen run (a model wrote it), a one-shot run of no session, a failure, or a killed
process gets a fresh one, and the session's variables survive from the copy held outside."""

from __future__ import annotations

import os
import signal
import textwrap
import time
from dataclasses import fields, replace

import pytest

from lackpy_kernel.run import Sandbox, SandboxLimits, sandbox_supported
from lackpy_kernel.run.protocol import RunRequest
from lackpy_kernel.service import LackpyService
from lackpy_kernel.session import LackpySession
from tests.support.processes import children_of, gone, gone_within

pytestmark = pytest.mark.skipif(not sandbox_supported(), reason="the worker needs Linux")

PROBE = '''
import os


def pid() -> int:
    """The id of the process the program runs in."""
    return os.getpid()
'''


def configure(workspace, reuse: int | None, idle: float | None = None) -> None:
    """A workspace whose programs may call ``pid()`` (a Python tool, run in the walled
    process), with ``[sandbox] reuse`` and ``reuse_idle`` set when given."""
    (workspace / "tools").mkdir()
    (workspace / "tools" / "probe.py").write_text(textwrap.dedent(PROBE))
    (workspace / ".lackpy").mkdir()
    reuse_line = f"reuse = {reuse}\n" if reuse is not None else ""
    reuse_line += f"reuse_idle = {idle}\n" if idle is not None else ""
    (workspace / ".lackpy" / "config.toml").write_text(
        f'[sandbox]\napprove = "never"\n{reuse_line}\n'
        '[tools.providers.probe]\nplugin = "python"\npath = "tools/probe.py"\ngrade = "read"\n')


async def pids(service: LackpyService, count: int, **options) -> list[int]:
    """The process ids ``count`` programs back to back ran in (one-shot runs of the session
    "mine" unless ``options`` say otherwise)."""
    ran = []
    for _ in range(count):
        result = await service.run_program("pid()", kit="pid,read_file",
                                           **{"session": "mine", **options})
        assert result.success, result.error
        ran.append(result.output)
    return ran


@pytest.fixture
def service(tmp_path):
    configure(tmp_path, reuse=3)
    with LackpyService(tmp_path) as running:
        yield running


async def test_programs_of_one_key_share_a_process_up_to_reuse(service):
    first, second, third, fourth = await pids(service, 4)
    assert first == second == third
    assert fourth != third


async def test_the_default_reuse_is_ten(tmp_path):
    configure(tmp_path, reuse=None)
    with LackpyService(tmp_path) as service:
        ran = await pids(service, 11)
    assert len(set(ran[:10])) == 1
    assert ran[10] != ran[9]


async def test_a_kept_process_is_replaced_once_idle_for_reuse_idle_seconds(tmp_path):
    configure(tmp_path, reuse=10, idle=1)
    with LackpyService(tmp_path) as service:
        first, second = await pids(service, 2)
        assert gone_within(second, 30)  # let go after a second without a program
        third, fourth = await pids(service, 2)
    assert first == second
    assert third == fourth != second


async def test_reuse_one_runs_each_program_in_a_process_of_its_own(tmp_path):
    configure(tmp_path, reuse=1)
    with LackpyService(tmp_path) as service:
        ran = await pids(service, 3)
    assert len(set(ran)) == 3


@pytest.mark.parametrize("options", [{"unseen": True}, {"dry": True}])
async def test_a_program_nobody_has_seen_run_gets_a_process_of_its_own(service, options):
    """A program a model wrote (``unseen``), or a dry run of one, neither finds a process
    a program ran in before nor leaves its process to the next."""
    before = await pids(service, 1)
    unseen = await pids(service, 2, **options)
    after = await pids(service, 1)
    assert len({*before, *unseen, *after}) == 4


async def test_a_delegated_program_runs_alone_between_the_persons_cells(tmp_path):
    """A program a model wrote and ``delegate`` runs (no one has seen it run) finds neither
    the process the person's cells ran in nor leaves its own to their next one; the
    session's variables carry on across it."""
    configure(tmp_path, reuse=10)
    (tmp_path / ".lackpy" / "templates").mkdir()
    (tmp_path / ".lackpy" / "templates" / "which.tmpl").write_text(
        "---\nname: which\npattern: which process\n---\nwho = pid()\nwho\n")
    with LackpyService(tmp_path) as service:
        session = LackpySession(service, kit="pid,read_file")
        try:
            before = [(await session.run(program)).output for program in ("n = 1", "pid()")]
            delegation = await session.delegate("which process", run=True, approved=True)
            assert delegation.ran and delegation.result.success, delegation.result.error
            after = await session.run("pid() if n == 1 else 0")
        finally:
            session.close()
    assert len({before[1], delegation.result.output, after.output}) == 3
    assert after.success and after.output


async def test_a_tool_module_edited_between_programs_runs_its_new_code_in_a_new_process(
        service, tmp_path):
    first, second = await pids(service, 2)
    probe = tmp_path / "tools" / "probe.py"
    probe.write_text(probe.read_text().replace("return os.getpid()", "return -os.getpid()"))
    third, fourth = await pids(service, 2)
    assert first == second
    assert third == fourth < 0  # the new code, in one process for the new key
    assert -third != second


async def test_a_tool_module_imported_by_name_runs_its_new_code_once_edited(tmp_path,
                                                                           monkeypatch):
    name = "lackpy_probe_" + tmp_path.name.replace("-", "_")
    (tmp_path / "modules").mkdir()
    module = tmp_path / "modules" / f"{name}.py"
    module.write_text(textwrap.dedent(PROBE))
    monkeypatch.syspath_prepend(str(tmp_path / "modules"))  # found as the kernel finds it
    (tmp_path / ".lackpy").mkdir()
    (tmp_path / ".lackpy" / "config.toml").write_text(
        f'[sandbox]\napprove = "never"\nreuse = 10\n\n[tools.providers.probe]\n'
        f'plugin = "python"\nmodule = "{name}"\ngrade = "read"\n')
    with LackpyService(tmp_path) as service:
        first = await pids(service, 1)
        module.write_text(module.read_text().replace("return os.getpid()",
                                                     "return -os.getpid()"))
        edited = await pids(service, 2)
    assert edited[0] == edited[1] < 0  # the new code, in a process of the new key
    assert -edited[0] != first[0]


def cpu_limit(pid: int) -> tuple[int, int]:
    """The soft and hard RLIMIT_CPU of process ``pid``, in seconds."""
    for line in open(f"/proc/{pid}/limits").read().splitlines():
        if line.startswith("Max cpu time"):
            soft, hard = line.split()[3:5]
            return int(soft), int(hard)
    raise AssertionError("no cpu time limit")


async def test_each_program_of_a_kept_process_gets_its_own_cpu_allowance(tmp_path):
    """RLIMIT_CPU counts a process's whole life: each program of a kept process is given
    ``timeout`` + 2 seconds from what the process used before it, within a hard limit set
    for all ``reuse`` of them at its first."""
    configure(tmp_path, reuse=4)  # kept after its third program, so its limits can be read
    config = tmp_path / ".lackpy" / "config.toml"
    config.write_text(config.read_text().replace("[sandbox]\n", "[sandbox]\ntimeout = 30\n"))
    burn = "total = 0\nfor i in range(100_000_000):\n    total += i\npid()"  # seconds of CPU
    with LackpyService(tmp_path) as service:
        first = await service.run_program("pid()", kit="pid,read_file", session="mine")
        soft, hard = cpu_limit(first.output)
        burnt = await service.run_program(burn, kit="pid,read_file", session="mine")
        assert burnt.output == first.output, burnt.error
        last = await service.run_program("pid()", kit="pid,read_file", session="mine")
        assert last.output == first.output
        later_soft, later_hard = cpu_limit(last.output)
    assert soft <= 32 < hard == later_hard  # a program's 32 s, and the process's 4 x 32 s
    assert later_soft > soft  # the burnt second counts before the last program's allowance


async def test_another_key_gets_another_process(service):
    warm = await pids(service, 1)
    other = await service.run_program("pid()", kit="pid", session="mine")  # another kit
    assert other.success, other.error
    assert other.output not in warm


async def test_another_session_gets_another_process(service):
    mine = await pids(service, 2)
    theirs = await pids(service, 2, session="theirs")
    assert len(set(mine)) == len(set(theirs)) == 1
    assert set(mine).isdisjoint(theirs)


async def test_one_shot_runs_of_no_session_never_share(service):
    assert len(set(await pids(service, 3, session=None))) == 3


async def test_a_failed_program_replaces_its_process(service):
    before = await pids(service, 1)
    failed = await service.run_program("pid() / 0", kit="pid,read_file", session="mine")
    assert failed.error_type == "ZeroDivisionError"
    after = await pids(service, 1)
    assert after != before


@pytest.fixture
def session_box(tmp_path):
    with Sandbox(tmp_path, SandboxLimits(timeout=10, reuse=10), approve_writes=False) as box:
        yield box


def kept_child(box: Sandbox) -> int:
    """The worker's one child while a kept process waits for the next program (a child let
    go is killed at once but reaped when the worker is next idle: it is not counted)."""
    deadline = time.monotonic() + 60
    while len(children := [child for child in children_of(box.worker_pid)
                           if not gone(child)]) != 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(children) == 1, children
    return children[0]


def test_variables_carry_on_in_the_kept_process_and_after_it_is_killed(session_box):
    """The session's copy outside the walled process restores a replacement: killing the
    kept process loses nothing of the last good program."""
    box = session_box
    assert box.run("items = [1]\nn = 1", ["read_file"]).success
    assert box.run("items.append(2)\nn = n + 1", ["read_file"]).success
    child = kept_child(box)
    os.kill(child, signal.SIGKILL)
    assert gone_within(child, 10)
    result = box.run("[items, n]", ["read_file"])
    assert result.success, result.error
    assert result.output == [[1, 2], 2]


def test_a_failed_program_leaves_the_kept_session_as_it_was(session_box):
    box = session_box
    assert box.run("items = [1]", ["read_file"]).success
    failed = box.run("items.append(2)\n1 / 0", ["read_file"])
    assert failed.error_type == "ZeroDivisionError"
    assert box.run("items", ["read_file"]).output == [1]


def test_a_reset_session_is_not_run_in_the_process_that_held_it(session_box):
    box = session_box
    assert box.run("secret = 'kept'", ["read_file"]).success
    child = kept_child(box)
    box.reset()
    assert box.run("n = 1", ["read_file"]).success
    assert kept_child(box) != child
    assert gone_within(child, 10)
    assert box.run("n", ["read_file"]).output == 1


def test_a_staged_write_lands_once_and_the_stage_is_empty_for_the_next(session_box, tmp_path):
    box = session_box
    assert box.run("write_file('a.txt', 'one')", ["write_file", "read_file"]).success
    assert box.run("read_file('a.txt')", ["write_file", "read_file"]).output == "one"
    assert box.run("write_file('b.txt', 'two')", ["write_file", "read_file"]).success
    assert (tmp_path / "a.txt").read_text() == "one"
    assert (tmp_path / "b.txt").read_text() == "two"


def test_a_process_whose_memory_grew_past_its_share_is_replaced(tmp_path):
    """A quarter of ``memory_mb`` (128 MB of 512) is as much as a kept process may grow
    since its first program: what a program left in memory does not stay for long."""
    with Sandbox(tmp_path, SandboxLimits(timeout=30, memory_mb=512, reuse=10),
                 approve_writes=False) as box:
        assert box.run("n = 1", ["read_file"]).success
        small = kept_child(box)
        assert box.run("n = n + 1", ["read_file"]).success
        assert kept_child(box) == small  # a program that grew nothing keeps it
        grown = box.run("big = list(range(4000000))\nlen(big)", ["read_file"])
        assert grown.output == 4000000, grown.error
        # the next program finds ``big`` in its session: the process now holds it
        assert box.run("[len(big), n]", ["read_file"]).output == [4000000, 2]
        assert gone_within(small, 10)
        assert box.run("n", ["read_file"]).output == 2


def test_every_field_of_a_request_but_its_program_and_values_is_in_its_key():
    """A field added to ``RunRequest`` joins the key unless it is the program's own (or the
    commit's path guard, which the worker applies and the program's process never sees):
    two requests that differ in it never share a walled process."""
    base = RunRequest(program="1 + 1", workspace="/w", reuse=10)
    changed = {"program": "2 + 2", "params": {"a": 1}, "return_variables": True,
               "workspace": "/v", "kit": ["read_file"], "tools": {"t": None},
               "import_path": ["/p"], "protected": ["x"], "keep": False, "kits_dir": "/k",
               "timeout": 1.0, "memory_mb": 1, "max_result_bytes": 1, "max_tool_calls": 1,
               "dry": True, "approve": True, "reuse": 2, "reuse_idle": 1.0, "session": "s",
               "path_guard": {"writable": ["*"]}}
    assert set(changed) == {each.name for each in fields(RunRequest)}
    for name, value in changed.items():
        other = replace(base, **{name: value})
        apart = {"program", "params", "return_variables", "path_guard"}
        assert base.same_key(other) == (name in apart), name
        if name != "path_guard":  # which the worker reads from what the child took
            assert base.same_key(other) == (base.without_program() == other.without_program())
