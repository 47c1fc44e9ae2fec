"""Performance round 3: the kernel against ipykernel, programs against pydantic-monty, the code
tools against grep, tier 0 at scale, and the floor of a process per program.

    PYTHONPATH=. python benchmarks/bench_round3.py [--quick] [--load]
                                                   [--only kernel,monty,code,tier0,floor]

0. The kernel against ipykernel (``--only kernel``): ``bench_kernel.py``'s table, run from
   here (its docstring says what each figure is); with ``--load`` again under a CPU burner
   on each core.

1. Programs, lackpy against Monty (PyPI ``pydantic-monty``, a Rust interpreter for a Python
   subset; a benchmark-only dependency, the ``bench`` extra: ``pip install -e '.[bench]'``,
   which no extra the tests install includes). lackpy runs each program with
   ``LackpyService.run_program`` (the sandbox on: a walled child per program) or, for a
   session, ``LackpySession.run``; Monty runs it in its pooled worker
   (``Monty().checkout()`` per program, ``feed_run``; one checkout for a session), its
   tools host functions (``external_lookup``). Both have a time and memory limit set. The
   two take turns sample by sample, the order flipping each round, so that load on the
   machine falls on both alike; min / median / p90 of each, and the ratio of the medians.
   Figures: ``1 + 1`` back to back; one tool call (``read_file('a.txt')``, a host function
   for Monty); a session's programs back to back (each uses the variable the one before
   set); a 10,000-item loop; and import to first result (a fresh interpreter each time,
   from before the import to the first program's value, interpreter start-up left out).
   With ``--load`` the table is measured again with a CPU burner on each core, and each
   median's growth under load is printed.
2. The code tools at repository scale: ``find_definitions`` and ``find_callers`` (the
   built-in tools, called in this process) against ``grep -rn NAME`` on the same tree, taking
   turns: the anthropic and openai SDKs of this environment (5,278 Python files, 34 MB) when
   installed, else a generated tree of that size; and a 21,000-file tree (four copies).
   The first call (which parses the candidates) and then warm calls (each file read again,
   the parse kept); and, on the first tree, one call of the search as it was before this
   round (``tests/support/code_search_reference.py``: every file parsed, every call).
3. Tier 0 at 100,000 templates (``--templates N``): ``TemplatesProvider.generate`` for a hit
   on the last template (also in a folder whose patterns all start with the same words) and
   for a miss, ``InferenceDispatcher.generate`` end to end (sanitize
   and validate included); and a fresh process's first call without the index file (it
   reads every template, then writes ``.lackpy/templates.index``) and with it.
4. The floor of a process per program (``--only floor``): ``1 + 1`` in a process forked
   ahead from this one, which reads the program from a pipe, runs it, writes its value back
   and exits (the next one is forked, and the last reaped, outside the timing), against
   Monty's ``1 + 1`` taking turns with it: the program run by ``eval`` (the least any
   interpreter written in Python can do there) and by lackpy's ``RestrictedRunner``
   (validation, compiling, the traced run; no walls, no kit). With each, the page faults
   the process took from reading the program to writing its value; and what one
   copy-on-write fault costs on this machine (a forked process writing to pages it shares).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import pickle
import resource
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench_kernel import kernel_tables
from loadgen import load_average, under_load

from lackpy_kernel.infer import InferenceDispatcher
from lackpy_kernel.infer.tiers import TemplatesProvider, format_template
from lackpy_kernel.kit import FileToolsProvider, Workspace
from lackpy_kernel.run.runner import RestrictedRunner
from lackpy_kernel.service import LackpyService
from lackpy_kernel.session import LackpySession
from tests.support import code_search_reference as reference

LOOP = "total = 0\nfor i in range(10000):\n    total += i\ntotal"
SESSION = ["n = 1", "n = n + 1", "n * 2"]
TEXT = "alpha beta gamma\n" * 20
TIMEOUT_S, MEMORY = 120, 512 * 1024 * 1024
NAMESPACE = "read_file(path: str) -> str: read a file"
Sample = Callable[[], Awaitable[object]]


# -- measuring ---------------------------------------------------------------------------------


def summary(times: list[float]) -> tuple[float, float, float]:
    """(min, median, p90) in milliseconds."""
    ordered = sorted(times)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return ordered[0] * 1e3, statistics.median(ordered) * 1e3, p90 * 1e3


async def alternate(pair: tuple[Sample, Sample], rounds: int, gap: float = 0.0
                    ) -> tuple[list[float], list[float]]:
    """Seconds of each sample of both, taking turns, the order flipping each round; ``gap``
    seconds of quiet before each sample (not timed)."""
    times: tuple[list[float], list[float]] = ([], [])
    for side in (0, 1):  # warm up
        for _ in range(3):
            await pair[side]()
    for index in range(rounds):
        for side in ((0, 1) if index % 2 == 0 else (1, 0)):
            if gap:
                await asyncio.sleep(gap)
            started = time.perf_counter()
            await pair[side]()
            times[side].append(time.perf_counter() - started)
    return times


def row(label: str, ours: list[float], peer: list[float], names: tuple[str, str]) -> str:
    a, b = summary(ours), summary(peer)
    return (f"  {label:<36} {names[0]} {a[0]:8.3f} {a[1]:8.3f} {a[2]:8.3f}   "
            f"{names[1]} {b[0]:8.3f} {b[1]:8.3f} {b[2]:8.3f}   ratio {a[1] / b[1]:6.2f}x")


def header(names: tuple[str, str]) -> str:
    return (f"  {'(milliseconds)':<36} {names[0]} {'min':>8} {'median':>8} {'p90':>8}   "
            f"{names[1]} {'min':>8} {'median':>8} {'p90':>8}")


# -- 1. programs: lackpy against Monty ---------------------------------------------------------


def bench_programs(workspace: Path, rounds: int, imports: int, load: bool) -> None:
    try:
        import pydantic_monty
    except ImportError:
        print("programs: pydantic-monty is not installed (pip install pydantic-monty); skipped")
        return
    (workspace / "a.txt").write_text(TEXT)
    names = ("lackpy", "monty ")
    print(f"1. programs, lackpy (run_program, sandbox on) against Monty {pydantic_monty.__version__}"
          f" (pooled worker, host-function tools); {rounds} samples each")
    idle = asyncio.run(_program_table(workspace, rounds, imports, names))
    if load:
        loaded = under_load(lambda: asyncio.run(_program_table(workspace, rounds, imports, names)),
                            indent="  ")
        print("  growth of the median under load: " + ", ".join(
            f"{label}: lackpy {loaded[label][0] / idle[label][0]:.2f}x, "
            f"monty {loaded[label][1] / idle[label][1]:.2f}x" for label in idle))


async def _program_table(workspace: Path, rounds: int, imports: int, names: tuple[str, str],
                         *, gap: float = 0.0, session: str | None = None
                         ) -> dict[str, tuple[float, float]]:
    """Print the programs' rows (``gap``: quiet seconds before each sample; ``session``: the
    one-shot runs' session, within which they share a warm process); import to first result
    when ``imports``. Returns each row's medians."""
    from pydantic_monty import Monty

    medians: dict[str, tuple[float, float]] = {}
    print(header(names))

    def report(label: str, times: tuple[list[float], list[float]]) -> None:
        print(row(label, *times, names), flush=True)
        medians[label] = (statistics.median(times[0]), statistics.median(times[1]))

    def read_file(path: str) -> str:  # Monty's tool: a host function
        return (workspace / path).read_text()

    limits: Any = {"max_feed_duration_secs": TIMEOUT_S, "max_memory": MEMORY}
    with LackpyService(workspace) as service, Monty(min_processes=1) as pool:
        kit = service.resolve_kit(["read_file"])

        def ours(program: str) -> Sample:
            async def run() -> object:
                result = await service.run_program(program, kit, sandbox=True, session=session)
                assert result.success, result.error
                return result.output
            return run

        def theirs(program: str) -> Sample:
            async def run() -> object:
                with pool.checkout(limits=limits) as session:
                    return session.feed_run(program, external_lookup={"read_file": read_file})
            return run

        report("1 + 1", await alternate((ours("1 + 1"), theirs("1 + 1")), rounds, gap))
        report("one tool call (read_file)", await alternate(
            (ours("read_file('a.txt')"), theirs("read_file('a.txt')")), rounds, gap))
        lackpy_session = LackpySession(service, kit)
        try:
            with pool.checkout(limits=limits) as monty_session:
                report("a session's programs",
                       await alternate(_session_pair(lackpy_session, monty_session), rounds, gap))
        finally:
            lackpy_session.close()
        report("a 10,000-item loop", await alternate((ours(LOOP), theirs(LOOP)), rounds, gap))
    if imports:
        report("import to first result", _import_times(workspace, imports))
    return medians


def _session_pair(session: LackpySession, monty_session: Any) -> tuple[Sample, Sample]:
    turn = {"ours": 0, "theirs": 0}

    async def ours() -> object:
        program = SESSION[turn["ours"] % len(SESSION)]
        turn["ours"] += 1
        result = await session.run(program)
        assert result.success, result.error
        return result.output

    async def theirs() -> object:
        program = SESSION[turn["theirs"] % len(SESSION)]
        turn["theirs"] += 1
        return monty_session.feed_run(program)

    return ours, theirs


_FIRST_RESULT = {
    "lackpy": (
        "import asyncio, sys, time\n"
        "started = time.perf_counter()\n"
        "from lackpy_kernel.service import LackpyService\n"
        "with LackpyService(sys.argv[1]) as service:\n"
        "    result = asyncio.run(service.run_program('1 + 1', ['read_file'], sandbox=True))\n"
        "    assert result.output == 2, result.error\n"
        "    print(time.perf_counter() - started)\n"
    ),
    "monty": (
        "import sys, time\n"
        "started = time.perf_counter()\n"
        "from pydantic_monty import Monty\n"
        "with Monty(min_processes=1) as pool, pool.checkout(limits={'max_feed_duration_secs': "
        f"{TIMEOUT_S}, 'max_memory': {MEMORY}}}) as session:\n"
        "    assert session.feed_run('1 + 1') == 2\n"
        "    print(time.perf_counter() - started)\n"
    ),
}


def _import_times(workspace: Path, count: int) -> tuple[list[float], list[float]]:
    times: tuple[list[float], list[float]] = ([], [])
    for index in range(count):
        for side in ((0, 1) if index % 2 == 0 else (1, 0)):
            script = _FIRST_RESULT["lackpy" if side == 0 else "monty"]
            out = subprocess.run([sys.executable, "-c", script, str(workspace)], check=True,
                                 capture_output=True, text=True).stdout
            times[side].append(float(out.split()[-1]))
    return times


# -- 2. the code tools against grep ------------------------------------------------------------


def bench_code_tools(root: Path, rounds: int) -> None:
    tree = root / "sdk"
    described = _sdk_tree(tree)
    big = root / "big"
    for copy in range(4):
        shutil.copytree(tree, big / f"copy{copy}", symlinks=True)
    print(f"2. code tools against grep -rn; name 'APIResponse'; {rounds} warm samples each")
    for label, folder in ((described, tree), (f"{_count(big)} Python files (four copies)", big)):
        print(f"  {label}")
        tools = FileToolsProvider(folder)
        grep = ["grep", "-rn", "APIResponse", str(folder)]
        grep_first = _seconds(lambda g=grep: subprocess.run(g, capture_output=True))
        for tool in ("find_definitions", "find_callers"):
            search = getattr(tools, tool)
            first = _seconds(lambda s=search: s("APIResponse"))
            times = asyncio.run(alternate((_sync(lambda s=search: s("APIResponse")),
                                           _sync(lambda g=grep: subprocess.run(g, capture_output=True))),
                                          rounds))
            print(row(f"{tool} (first {first * 1e3:.0f} ms)", *times, ("tool", "grep")))
        print(f"    (grep's own first run: {grep_first * 1e3:.0f} ms)")
        if folder == tree:  # before: every file parsed on every call (and no answer past 10,000)
            before = _seconds(lambda f=folder: reference.find_definitions(Workspace(f), "APIResponse"))
            print(f"    before this round, find_definitions parsed every file: {before * 1e3:.0f} ms a call")


def _sdk_tree(tree: Path) -> str:
    """Fill ``tree``: the anthropic and openai SDKs when installed, else a generated tree of
    the same number of files; a line that says which."""
    site = Path(sysconfig.get_paths()["purelib"])
    sources = [site / name for name in ("anthropic", "openai") if (site / name).is_dir()]
    if len(sources) == 2:
        for source in sources:
            shutil.copytree(source, tree / source.name, ignore=shutil.ignore_patterns("__pycache__"))
        return f"the anthropic and openai SDKs: {_count(tree)} Python files"
    for index in range(5_278):
        path = tree / f"pkg{index // 100}" / f"mod{index}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        name = "APIResponse" if index % 97 == 0 else f"Thing{index}"
        path.write_text(f"class {name}:\n    def get(self):\n        return helper({index})\n" * 40)
    return f"a generated tree: {_count(tree)} Python files"


def _count(folder: Path) -> int:
    return sum(1 for _ in folder.rglob("*.py"))


def _seconds(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def _sync(call: Callable[[], object]) -> Sample:
    async def run() -> object:
        return call()
    return run


# -- 3. tier 0 at scale ------------------------------------------------------------------------


def bench_tier0(root: Path, count: int, rounds: int) -> None:
    folder = root / "ws" / ".lackpy" / "templates"
    folder.mkdir(parents=True)
    started = time.perf_counter()
    for index in range(count):
        (folder / f"t{index:06d}.tmpl").write_text(format_template(
            f"t{index:06d}", f"task {index} reads {{path}}", "content = read_file('{path}')\ncontent"))
    past = time.time_ns() - 60 * 10**9  # made a minute ago, as a user's folder would be
    os.utime(folder, ns=(past, past))
    print(f"3. tier 0 at {count:,} templates (written in {time.perf_counter() - started:.0f} s)")
    hit = f"task {count - 1} reads a.txt"
    cold = _first_call(folder, hit)
    warm = [_first_call(folder, hit) for _ in range(3)]
    print(f"  a fresh process's first call: without the index file {cold * 1e3:8.1f} ms;"
          f" with it {min(warm) * 1e3:6.1f} ms (min of 3), {statistics.median(warm) * 1e3:6.1f} ms (median)")
    provider = TemplatesProvider(folder)
    dispatcher = InferenceDispatcher([provider])

    async def measure(make: Callable[[], Awaitable[object]]) -> list[float]:
        times = []
        for _ in range(rounds):
            started = time.perf_counter()
            await make()
            times.append(time.perf_counter() - started)
        return times

    shared = root / "ws2" / ".lackpy" / "templates"  # every pattern starts "show {x} of"
    shared.mkdir(parents=True)
    for index in range(count):
        (shared / f"s{index:06d}.tmpl").write_text(format_template(
            f"s{index:06d}", f"show {{what}} of report {index}", "read_file('{what}')"))
    sharing = TemplatesProvider(shared)
    shared_hit = f"show a.txt of report {count - 1}"
    for label, make in (
        ("TemplatesProvider.generate, hit", lambda: provider.generate(hit, NAMESPACE)),
        ("... hit, all patterns 'show {x} of ...'", lambda: sharing.generate(shared_hit, NAMESPACE)),
        ("TemplatesProvider.generate, miss", lambda: provider.generate("no such task", NAMESPACE)),
        ("InferenceDispatcher.generate, hit", lambda: dispatcher.generate(hit, NAMESPACE, {"read_file"})),
    ):
        low, median, p90 = summary(asyncio.run(measure(make)))
        print(f"  {label:<40} min {low:7.3f} ms  median {median:7.3f} ms  p90 {p90:7.3f} ms")


def _first_call(folder: Path, intent: str) -> float:
    script = (
        "import asyncio, sys, time\n"
        "from lackpy_kernel.infer.tiers import TemplatesProvider\n"
        "started = time.perf_counter()\n"
        "program = asyncio.run(TemplatesProvider(sys.argv[1]).generate(sys.argv[2], ''))\n"
        "assert program is not None\n"
        "print(time.perf_counter() - started)\n"
    )
    out = subprocess.run([sys.executable, "-c", script, str(folder), intent], check=True,
                         capture_output=True, text=True).stdout
    return float(out.split()[-1])


# -- 4. the floor of a process per program ----------------------------------------------------

FLOOR_PAGES = 2_000  # pages a forked process writes to time one copy-on-write fault


def bench_floor(rounds: int) -> None:
    try:
        from pydantic_monty import Monty
    except ImportError:
        print("floor: pydantic-monty is not installed (pip install pydantic-monty); skipped")
        return
    print(f"4. the floor of a process per program: 1 + 1 in a process forked ahead, against "
          f"Monty; {rounds} samples each")
    print(header(("fresh ", "monty ")) + "   faults")
    limits: Any = {"max_feed_duration_secs": TIMEOUT_S, "max_memory": MEMORY}
    runner = RestrictedRunner()
    with Monty(min_processes=1) as pool:
        def monty() -> float:
            started = time.perf_counter()
            with pool.checkout(limits=limits) as session:
                assert session.feed_run("1 + 1") == 2
            return time.perf_counter() - started

        for label, run in (("eval", lambda program: eval(compile(program, "<program>", "eval"),
                                                         {"__builtins__": {}})),
                           ("lackpy's RestrictedRunner", lambda program: runner.run(program, {}).output)):
            ours, theirs, faults = _fresh_process_times(run, monty, rounds)
            print(row(label, ours, theirs, ("fresh ", "monty ")) + f"   {statistics.median(faults):6.0f}")
    print(f"  one copy-on-write fault here: {_fault_microseconds():.2f} us "
          f"(a forked process writing one byte to each of {FLOOR_PAGES:,} pages it shares)")


def _fresh_process_times(run: Callable[[str], object], peer: Callable[[], float], rounds: int
                         ) -> tuple[list[float], list[float], list[int]]:
    """Seconds of each ``1 + 1`` in a fresh forked process running it with ``run``, and of
    ``peer``, taking turns; and the page faults each process took."""
    ours: list[float] = []
    theirs: list[float] = []
    faults: list[int] = []
    run("1 + 1")  # what is made on first use (caches, lazy imports) is made before the forks
    child = _fork_runner(run)
    for index in range(rounds + 3):
        for side in ((0, 1) if index % 2 == 0 else (1, 0)):
            if side == 1:
                theirs.append(peer())
                continue
            pid, down, up = child
            started = time.perf_counter()
            os.write(down, b"1 + 1")
            value, taken = pickle.loads(os.read(up, 1 << 16))
            ours.append(time.perf_counter() - started)
            assert value == 2, value
            faults.append(taken)
            for fd in (down, up):
                os.close(fd)
            os.waitpid(pid, 0)
            child = _fork_runner(run)
            time.sleep(0.002)  # forked ahead: it is waiting for its program when it comes
    os.close(child[1])
    os.waitpid(child[0], 0)
    return ours[3:], theirs[3:], faults[3:]


def _fork_runner(run: Callable[[str], object]) -> tuple[int, int, int]:
    """A forked process that runs one program from its pipe with ``run`` and writes back its
    value and the page faults it took; its pid, and the two pipes' ends here."""
    down_read, down_write = os.pipe()
    up_read, up_write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(down_write)
            os.close(up_read)
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            program = os.read(down_read, 1 << 16).decode()
            if program:
                value = run(program)
                taken = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
                os.write(up_write, pickle.dumps((value, taken)))
        finally:
            os._exit(0)
    os.close(down_read)
    os.close(up_write)
    return pid, down_write, up_read


def _fault_microseconds() -> float:
    """Microseconds a forked process takes to write to one page it shares with its parent."""
    shared = bytearray(FLOOR_PAGES * resource.getpagesize())  # written: its pages are its own
    shared[::resource.getpagesize()] = b"x" * FLOOR_PAGES
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        started = time.perf_counter()
        shared[::resource.getpagesize()] = b"y" * FLOOR_PAGES
        os.write(write, pickle.dumps(time.perf_counter() - started))
        os._exit(0)
    seconds = pickle.loads(os.read(read, 1 << 16))
    os.waitpid(pid, 0)
    for fd in (read, write):
        os.close(fd)
    return float(seconds) / FLOOR_PAGES * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples, 10,000 templates")
    parser.add_argument("--load", action="store_true",
                        help="the kernel table and the programs again under a CPU burner per core")
    parser.add_argument("--only", default="kernel,monty,code,tier0,floor",
                        help="which parts, comma-separated")
    parser.add_argument("--templates", type=int, default=None, help="how many templates (100,000)")
    args = parser.parse_args()
    parts = set(args.only.split(","))
    rounds = 30 if args.quick else 200
    print(f"python {sys.version.split()[0]}; {load_average()}")
    if "kernel" in parts:
        print("0. the kernel against ipykernel")
        kernel_tables(args.quick, args.load)
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        if "monty" in parts:
            workspace = root / "programs"
            workspace.mkdir()
            bench_programs(workspace, rounds, 3 if args.quick else 10, args.load)
        if "code" in parts:
            bench_code_tools(root, 3 if args.quick else 10)
        if "tier0" in parts:
            bench_tier0(root, args.templates or (10_000 if args.quick else 100_000), rounds)
    if "floor" in parts:
        bench_floor(rounds)
    print(f"done; {load_average()}")


if __name__ == "__main__":
    main()
