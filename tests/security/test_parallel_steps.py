"""Programs side by side (a plan's parallel band, ``run_many``, one service's concurrent
``run_program``) stay apart: while one program holds uncommitted file changes and
variables, another running at the same time cannot read its staged files (through the
file tools, by path or by pattern), cannot name its variables, cannot read its process
(``/proc``) or signal it, and each runs under its own time, memory and tool-call limits:
one hitting a limit stops alone. Issue 31.

Order, not time, makes the programs overlap: the first waits in a kernel-side tool until
the test (or another program) lets it go."""

from __future__ import annotations

import asyncio
import threading

import pytest

from lackpy_kernel.config import LackpyConfig
from lackpy_kernel.engines import Plan, Program, Step
from lackpy_kernel.kit import ToolSpec
from lackpy_kernel.kit.builtin_specs import READ_GRADE
from lackpy_kernel.run import sandbox_supported
from lackpy_kernel.service import LackpyService

pytestmark = pytest.mark.skipif(not sandbox_supported(), reason="the worker needs Linux")

WAIT = 60.0  # seconds a held program waits to be let go: far past any busy machine's pace
SPY = '''
import os


def my_pid() -> int:
    """The process id of the program's process."""
    return os.getpid()


def peek(pid: int) -> dict:
    """What reading another process's /proc entries and signalling it give."""
    seen = {}
    for entry in ("environ", "mem", "maps", "cmdline"):
        try:
            with open(f"/proc/{pid}/{entry}", "rb") as stream:
                seen[entry] = stream.read(64).hex()
        except OSError as exc:
            seen[entry] = type(exc).__name__
    try:
        os.kill(pid, 0)
        seen["signal"] = "sent"
    except OSError as exc:
        seen["signal"] = type(exc).__name__
    return seen
'''


class Hall:
    """Kernel-side tools: ``hold(name, value)`` waits until ``let_go(name)``; ``seen(name)``
    waits until ``name`` is held and returns its value; ``count()`` counts."""

    def __init__(self) -> None:
        self.values: dict[str, object] = {}
        self.held = {name: threading.Event() for name in ("A", "B", "C", "D")}
        self.free = {name: threading.Event() for name in ("A", "B", "C", "D")}
        self.barrier = threading.Barrier(4, timeout=WAIT)

    def register(self, service: LackpyService) -> None:
        for name in ("hold", "seen", "let_go", "meet", "count"):
            service.toolbox.register_tool(ToolSpec(name, "custom", **READ_GRADE),
                                          getattr(self, name))

    def hold(self, name, value=None):
        self.values[name] = value
        self.held[name].set()
        return self.free[name].wait(WAIT)

    def seen(self, name):
        self.held[name].wait(WAIT)
        return self.values[name]

    def let_go(self, name):
        self.free[name].set()
        return name

    def meet(self):
        return self.barrier.wait()

    def count(self):
        return 1

    def release_all(self) -> None:
        for event in self.free.values():
            event.set()


@pytest.fixture
def arena(tmp_path):
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "spy.py").write_text(SPY)
    (tmp_path / "shared.txt").write_text("original")
    hall = Hall()
    yield tmp_path, hall
    hall.release_all()


def service_for(workspace, hall: Hall, **limits) -> LackpyService:
    config = {"sandbox_timeout": WAIT + 30, "sandbox_approve": "never", "tool_providers": {
        "spy": {"plugin": "python", "path": "tools/spy.py", "grade": "read"}}, **limits}
    service = LackpyService(workspace, LackpyConfig(**config))
    hall.register(service)
    return service


KIT = ["hold", "seen", "let_go", "meet", "count", "read_file", "write_file", "find_files",
       "my_pid", "peek"]
WRITER = ("secret = 'A-' + 'secret'\nwrite_file('shared.txt', 'from A')\n"
          "write_file('mine.txt', 'staged by A')\nhold('A', my_pid())\nsecret")


def test_a_parallel_step_reads_the_workspace_not_the_staged_files_of_the_step_beside_it(
        arena):
    workspace, hall = arena
    with service_for(workspace, hall) as service:
        reader = ("seen('A')\nfound = {'shared': read_file('shared.txt'), "
                  "'txt': find_files('**/*.txt'), 'stages': find_files('.lackpy/staging/**')}\n"
                  "let_go('A')\nfound")
        plan = Plan(Step(Program(WRITER), name="writer", parallel=True),
                    Step(Program(reader), name="reader", parallel=True),
                    kit=KIT, service=service)
        envelope = plan.run(None)
        assert envelope.error is None
        outputs = {result.name: result.output for result in envelope.history}
        assert outputs["reader"] == {"shared": "original", "txt": ["shared.txt"], "stages": []}
        assert outputs["writer"] == "A-secret"
        assert (workspace / "shared.txt").read_text() == "from A"  # then it landed, whole
        assert (workspace / "mine.txt").read_text() == "staged by A"


async def test_a_program_beside_another_cannot_read_its_stage_name_its_variables_or_reach_its_process(
        arena):
    workspace, hall = arena
    with service_for(workspace, hall) as service:
        writer = asyncio.ensure_future(service.run_program(WRITER, KIT))
        pid = await asyncio.to_thread(hall.seen, "A")  # A runs, its changes staged
        by_path = await service.run_program(
            "read_file('.lackpy/staging/' + str(pid) + '/mine.txt')", KIT, {"pid": pid})
        by_name = await service.run_program("secret", KIT)
        peeked = await service.run_program("peek(pid)", KIT, {"pid": pid})
        hall.let_go("A")
        written = await writer
    assert written.output == "A-secret"
    assert by_path.error_type == "WorkspaceError"
    assert "inside the workspace's .lackpy/staging/ folder" in by_path.error
    assert "staged by A" not in by_path.error
    assert by_name.error_type == "LackpyValidationError" and "secret" in by_name.error
    assert peeked.success, peeked.error
    assert peeked.output == {"environ": "PermissionError", "mem": "PermissionError",
                             "maps": "PermissionError", "cmdline": "PermissionError",
                             "signal": "PermissionError"}


async def test_programs_side_by_side_each_run_under_their_own_limits(arena):
    workspace, hall = arena
    with service_for(workspace, hall, sandbox_timeout=5, sandbox_memory_mb=256,
                     sandbox_max_tool_calls=3) as service:
        await asyncio.gather(*(service.run_program("1", []) for _ in range(4)))  # 4 workers up
        spin, hog, calm, over = await asyncio.gather(*(service.run_program(program, KIT) for program in (
            "meet()\nsum(range(1000000000000))",
            "meet()\n[0] * 10000000000",
            "[meet(), count(), count()]",  # three calls: its own budget, whatever the others made
            "[meet(), count(), count(), count()]",
        )))
    assert spin.error_type == "TimeoutError" and "5 s limit" in spin.error, spin.error
    assert hog.error_type == "MemoryError", hog.error
    assert calm.success and calm.output[1:] == [1, 1], calm.error
    assert over.error_type == "ToolCallBudgetError", over.error
