"""What a program that escaped the language could leave behind in its walled process, and
who meets it: no program of another key, and none of its own key once the process is
replaced (after a failure, or after ``[sandbox] reuse`` programs).

The escape is simulated by a kit's Python tool (``escape()``): its code runs inside the
walled process, with the walls up, where an escaped program's code would run. No hook in
the package is needed for it (none exists: no config key or environment variable makes a
program's process run code it was not given), so a built wheel has none to reach.
"""

from __future__ import annotations

import asyncio
import signal
import textwrap
import time
from pathlib import Path

import pytest

from lackpy_kernel.run import sandbox_supported
from lackpy_kernel.service import LackpyService
from lackpy_kernel.session import LackpySession
from tests.security.test_escapes import ATTACKS
from tests.support.processes import gone

pytestmark = pytest.mark.skipif(not sandbox_supported(), reason="the worker needs Linux")

TOOLS = r'''
import atexit
import builtins
import codecs
import copyreg
import functools
import gc
import os
import resource
import signal
import sys
import weakref

import lackpy_kernel.run.child._program as program
import lackpy_kernel.run.runner as runner
import lackpy_kernel.run.trace as trace
from lackpy_kernel.run import wire
from lackpy_kernel.run.child._prepared import named_kits
from lackpy_kernel.run.protocol import Reply, sealed
from lackpy_kernel.run.runner import ExecutionResult

LEFT = {}  # data left in memory
CODEC = "lackpy_escaped"  # a codec only the escape's search function knows


def _marked(function):
    def wrapper(*args, **kwargs):
        return function(*args, **kwargs)
    wrapper.lackpy_escaped = True
    return wrapper


def _hijacked(function, cache):
    """``function``, noting each call in ``LEFT``: a tool taken from ``cache`` that a later
    program calls then runs the escape's code first."""
    @functools.wraps(function)
    def hijacked(*args, **kwargs):
        LEFT.setdefault("hijacked", set()).add(cache)
        return function(*args, **kwargs)
    return hijacked


def _tracer(*args):
    return None


def _at_exit():
    return None


def _audit(event, args):
    if event == "lackpy.escape.probe":
        LEFT["audited"] = True


class _Finder:
    def find_spec(self, *args):
        return None


def _search(name):
    return codecs.lookup("utf-8") if name == CODEC else None


def _codec_registered() -> bool:
    try:
        codecs.lookup(CODEC)
    except LookupError:
        return False
    return True


class _Callbacks:
    """What ``atexit.unregister`` compares itself with: every callback registered (it
    equals none, so none is removed)."""

    def __init__(self):
        self.seen = []

    def __eq__(self, other):
        self.seen.append(other)
        return False

    __hash__ = None


def _at_exit_registered() -> bool:
    """Whether ``_at_exit`` is among this process's exit callbacks."""
    callbacks = _Callbacks()
    atexit.unregister(callbacks)
    return any(callback is _at_exit for callback in callbacks.seen)


class _Holder:
    pass


def escape() -> int:
    """Leave everything an escaped program could leave in its process."""
    builtins.lackpy_escaped = True
    sys.settrace(_tracer)
    sys.setprofile(_tracer)
    sys.addaudithook(_audit)
    sys.meta_path.insert(0, _Finder())
    codecs.register(_search)
    copyreg.pickle(range, lambda value: (range, (0,)))
    gc.callbacks.append(_tracer)
    atexit.register(_at_exit)
    LEFT["finalized"] = weakref.finalize(_Holder, _tracer)
    signal.signal(signal.SIGUSR1, _tracer)
    signal.setitimer(signal.ITIMER_REAL, 3600)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 200), hard))
    LEFT["fd"] = os.dup(2)
    LEFT["secret"] = "the earlier program's data"
    runner.RestrictedRunner.run = _marked(runner.RestrictedRunner.run)
    runner.validate = _marked(runner.validate)
    trace.make_traced = _marked(trace.make_traced)
    program.encode = _marked(program.encode)
    # the cached tool functions later programs of this kit call: the Python tools the
    # worker imported (looked up in their module for each program), and the built-in ones
    # of each kit resolved once (``NamedKits``)
    globals()["state"] = _hijacked(state, "python tool")
    for kit in named_kits:
        for alias, function in list(kit.callables.items()):
            kit.callables[alias] = _hijacked(function, "kit tool")
    return os.getpid()


def state(read=None) -> list:
    """What this process holds of an escape (empty: nothing), and its process id. ``read``:
    what the program's ``read_file`` call returned (``PROBE``), which ``LEFT`` notes when
    that call ran the escape's code."""
    hijacked = LEFT.pop("hijacked", set())
    checks = {
        "atexit": _at_exit_registered(),
        "codecs": _codec_registered(),
        "python tool": "python tool" in hijacked,
        "kit tool": "kit tool" in hijacked,
        "builtins": getattr(builtins, "lackpy_escaped", False),
        "settrace": sys.gettrace() is not None,
        "setprofile": sys.getprofile() is not None,
        "meta_path": any(type(entry).__name__ == "_Finder" for entry in sys.meta_path),
        "copyreg": range in copyreg.dispatch_table,
        "gc.callbacks": _tracer in gc.callbacks,
        "finalizer": "finalized" in LEFT,
        "signal": signal.getsignal(signal.SIGUSR1) is _tracer,
        "itimer": signal.getitimer(signal.ITIMER_REAL)[0] > 0,
        "rlimit": resource.getrlimit(resource.RLIMIT_NOFILE)[0] == 200,
        "descriptor": "fd" in LEFT,
        "memory": "secret" in LEFT,
        "runner": hasattr(runner.RestrictedRunner.run, "lackpy_escaped"),
        "validator": hasattr(runner.validate, "lackpy_escaped"),
        "tracer": hasattr(trace.make_traced, "lackpy_escaped"),
        "encoder": hasattr(program.encode, "lackpy_escaped"),
    }
    sys.audit("lackpy.escape.probe")
    checks["audit hook"] = LEFT.pop("audited", False)
    found = sorted(name for name, left in checks.items() if left)
    return [os.getpid(), found]


def plant() -> int:
    """Leave a file in this process's stage that no write told the worker of."""
    from lackpy_kernel.kit.staging import stage_folder
    folder = stage_folder(os.path.realpath(os.getcwd()), os.getpid())
    with open(os.path.join(folder, "planted.txt"), "w") as planted:
        planted.write("left for the next program")
    return os.getpid()


def stray(writes: bool) -> int:
    """Once this program replied, while its process waits for the next of its key, send
    the worker (when ``writes``) a frame nobody asked for: a second, clean-looking reply,
    sealed as this program's. Then ignore SIGUSR2, which the test reads as "done"."""
    def ring(signum, frame):
        while frame is not None and frame.f_code.co_name != "_next_request":
            frame = frame.f_back
        if frame is None:  # the reply has not gone yet
            signal.setitimer(signal.ITIMER_REAL, 0.01)
            return
        if writes:
            channel = frame.f_locals["snapshot"].channel
            forged = Reply(ExecutionResult(True, output=[os.getpid(), []]))
            wire.write_all(channel.up, wire.dumps(sealed(forged.to_frame(), channel.nonce)))
        signal.signal(signal.SIGUSR2, signal.SIG_IGN)

    signal.signal(signal.SIGALRM, ring)  # no thread: the walls refuse clone
    signal.setitimer(signal.ITIMER_REAL, 0.01)
    return os.getpid()
'''
ALL_LEFT = sorted(["atexit", "audit hook", "builtins", "codecs", "copyreg", "descriptor",
                   "encoder", "finalizer", "gc.callbacks", "itimer", "kit tool", "memory",
                   "meta_path", "python tool", "rlimit", "runner", "setprofile", "settrace",
                   "signal", "tracer", "validator"])
ESCAPING = "escape,state,plant,stray,read_file"
# the probe: a call of a built-in tool of the kit, then of the Python tool that reports
PROBE = 'state(read_file("probe.txt"))'


def configure(workspace, reuse: int) -> None:
    (workspace / "probe.txt").write_text("probe")
    (workspace / "tools").mkdir()
    (workspace / "tools" / "escaping.py").write_text(textwrap.dedent(TOOLS))
    (workspace / ".lackpy").mkdir()
    (workspace / ".lackpy" / "config.toml").write_text(
        f'[sandbox]\napprove = "never"\nreuse = {reuse}\n\n'
        '[tools.providers.escaping]\nplugin = "python"\npath = "tools/escaping.py"\n'
        'grade = "read"\n')


@pytest.fixture
def service(tmp_path):
    configure(tmp_path, reuse=2)
    with LackpyService(tmp_path) as running:
        yield running


async def run(service: LackpyService, program: str, kit: str = ESCAPING):
    result = await service.run_program(program, kit=kit, session="person")
    assert result.success, result.error
    return result.output


async def test_the_simulated_escape_leaves_everything_in_its_own_process(service):
    """The attack works where it ran: the same key's next program, in the same process (the
    bound ``reuse`` sets), meets all of it."""
    escaped = await run(service, "escape()")
    pid, left = await run(service, PROBE)
    assert pid == escaped
    assert left == ALL_LEFT


async def test_a_program_of_another_key_meets_none_of_it(service):
    escaped = await run(service, "escape()")
    pid, left = await run(service, PROBE, kit="state,read_file")
    assert pid != escaped
    assert left == []


@pytest.mark.parametrize("options", [{"session": "another"}, {"session": None},
                                     {"session": "person", "unseen": True}])
async def test_another_session_or_a_model_s_program_meets_none_of_it(service, options):
    escaped = await run(service, "escape()")
    result = await service.run_program(PROBE, kit=ESCAPING, **options)
    assert result.success, result.error
    pid, left = result.output
    assert pid != escaped
    assert left == []


async def test_the_same_key_meets_none_of_it_after_reuse_programs(service):
    escaped = await run(service, "escape()")
    await run(service, PROBE)  # the second and last of this process (reuse = 2)
    pid, left = await run(service, PROBE)
    assert pid != escaped
    assert left == []


async def test_the_same_key_meets_none_of_it_after_a_failure(service):
    escaped = await run(service, "escape()")
    failed = await service.run_program("state() / 0", kit=ESCAPING, session="person")
    assert failed.error_type == "TypeError"
    pid, left = await run(service, PROBE)
    assert pid != escaped
    assert left == []


def _done_or_gone(pid: int) -> bool:
    """Whether the process ``pid`` ignores SIGUSR2 (``stray`` is done), or is gone."""
    if gone(pid):
        return True
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:  # gone since
        return True
    ignored = next(int(line.split(":", 1)[1], 16) for line in status.splitlines()
                   if line.startswith("SigIgn:"))
    return bool(ignored & 1 << (signal.SIGUSR2 - 1))


@pytest.mark.parametrize("writes", [True, False])
async def test_a_frame_sent_between_programs_replaces_the_process(service, writes):
    """A frame the process sends after its reply, while it waits for its key's next program
    (here a forged second reply), is the answer to no request: the worker kills and replaces
    that process, and the next program runs in a fresh one and gets its own reply. (Without
    the frame, the same process runs it: the control.)"""
    strayed = await run(service, f"stray({writes})")
    deadline = time.monotonic() + 30
    while not _done_or_gone(strayed) and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    pid, left = await run(service, PROBE)
    assert (pid != strayed) is writes
    assert left == []


async def test_a_file_left_in_the_stage_never_reaches_the_next_program(service, tmp_path):
    planted = await run(service, "plant()")
    pid, left = await run(service, PROBE)
    assert pid != planted
    assert left == []
    assert not (tmp_path / "planted.txt").exists()
    # its stage goes with it, once the worker reaps it in a quiet moment
    deadline = time.monotonic() + 30
    while list(tmp_path.rglob("planted.txt")) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not list(tmp_path.rglob("planted.txt"))


@pytest.mark.parametrize("reuse", [1, 10])
async def test_with_reuse_one_no_program_shares(tmp_path, reuse):
    """``reuse = 1`` is a process per program; the default shares within its bound only."""
    configure(tmp_path, reuse=reuse)
    with LackpyService(tmp_path) as service:
        escaped = await run(service, "escape()")
        pid, left = await run(service, PROBE)
    assert (pid == escaped) is (reuse > 1)
    assert left == ([] if reuse == 1 else ALL_LEFT)


@pytest.mark.parametrize("reuse", [1, 10])
async def test_the_escape_corpus_run_in_one_session_leaves_its_process_clean(tmp_path, reuse):
    """Every attack of ``test_escapes`` through one session's worker, back to back (each is
    refused or fails, and a failure replaces the process), then a program of the same session
    and key: its process holds nothing of them, and the session's variable is intact; with
    the default bound and with a process per program."""
    configure(tmp_path, reuse=reuse)
    with LackpyService(tmp_path) as service:
        session = LackpySession(service, ESCAPING)
        try:
            assert (await session.run("kept = [1, 2]")).success
            for program in ATTACKS:
                result = await session.run(program)
                assert not result.success, f"{program!r} succeeded with {result.output!r}"
            checked = await session.run(f"[{PROBE}, kept]")
        finally:
            session.close()
    assert checked.success, checked.error
    (_, left), kept = checked.output
    assert left == [] and kept == [1, 2]
