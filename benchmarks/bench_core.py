"""Core benchmarks, each against a peer measured in the same run.

    python benchmarks/bench_core.py [--quick]

1. validate() throughput on a corpus of programs, against the published
   lackpy-lang validator (``pip install lackpy-lang``).
2. A traced tool call (tracing + plain-data checks) against a direct call.
3. The per-program cost of the in-process runner and of the sandbox worker,
   against a bare ``exec`` of the same compiled program.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from lackpy_kernel.kit import builtin_toolbox, resolve_kit
from lackpy_kernel.lang import validate
from lackpy_kernel.run import RestrictedRunner, Sandbox, Trace, sandbox_supported
from lackpy_kernel.run.runner import plain_tool

CORPUS = [
    "content = read_file('README.md')\ncontent",
    "files = find_files('**/*.py')\nlen(files)",
    "files = find_files('**/*.py')\n[f for f in files if 'test' in f]",
    "defs = find_definitions('main')\nsort_by(defs, 'line')",
    "callers = find_callers('validate')\n[c['file'] for c in callers]",
    "total = 0\nfor f in find_files('*.txt'):\n    total += len(read_file(f))\ntotal",
    "rows = [{'n': i, 'sq': i * i} for i in range(10)]\nsorted(rows, key=lambda r: -r['sq'])",
    "text = read_file('a.txt')\nlines = text.splitlines()\n{i: line for i, line in enumerate(lines)}",
    "x = read_file('a.txt')\nif len(x) > 10:\n    print(x[:10])\nelse:\n    print(x)",
    "counts = {}\nfor w in read_file('a.txt').split():\n    counts[w] = counts.get(w, 0) + 1\ncounts",
    "import os\nos.listdir('.')",
    "().__class__.__bases__[0].__subclasses__()",
    "while True:\n    x = 1",
    "f = lambda x: x\nf(1)",
    "'{0.__class__}'.format(1)",
    "open('x').read()",
] * 4


def best_of(fn: Callable[[], None], repeat: int) -> float:
    """Median seconds of ``repeat`` calls of ``fn``."""
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def bench_validate(repeat: int) -> None:
    try:
        from lackpy.lang import validate as peer_validate
    except ImportError:
        print("validate: lackpy-lang is not installed; pip install lackpy-lang to compare")
        return
    names = {"read_file", "find_files", "find_definitions", "find_callers"}

    def ours() -> None:
        for program in CORPUS:
            validate(program, names)

    def peer() -> None:
        for program in CORPUS:
            peer_validate(program, names)

    mine, theirs = best_of(ours, repeat), best_of(peer, repeat)
    n = len(CORPUS)
    print(f"validate ({n} programs)   ours {n / mine:9.0f} prog/s   lackpy-lang {n / theirs:9.0f} "
          f"prog/s   ours/peer time {mine / theirs:5.2f}x")


def bench_traced_call(label: str, tool: Callable[[str], object], calls: int, repeat: int) -> None:
    traced = plain_tool(label, tool, Trace())

    def direct() -> None:
        for _ in range(calls):
            tool("a.txt")

    def wrapped() -> None:
        for _ in range(calls):
            traced("a.txt")

    a, b = best_of(direct, repeat), best_of(wrapped, repeat)
    print(f"{label + ' call':22}  direct {a / calls * 1e6:7.3f} us   traced {b / calls * 1e6:7.3f}"
          f" us   ratio {b / a:6.2f}x")


def echo(value: str) -> str:
    return value


def bench_programs(workspace: Path, runs: int) -> None:
    program = "text = read_file('a.txt')\nwords = text.split()\nlen(words)"
    kit = resolve_kit(["read_file"], builtin_toolbox(workspace))
    code = compile(program, "<bench>", "exec")

    def bare() -> None:
        exec(code, {"read_file": kit.callables["read_file"]})

    def in_process() -> None:
        RestrictedRunner().run(program, kit.callables)

    base = best_of(bare, runs)
    runner = best_of(in_process, runs)
    print(f"program (in-process)    bare exec {base * 1e3:7.3f} ms   runner {runner * 1e3:7.3f} ms   "
          f"ratio {runner / base:6.1f}x")
    if not sandbox_supported():
        print("program (sandbox)       skipped: the worker needs Linux")
        return
    with Sandbox(workspace) as box:
        started = time.perf_counter()
        box.run("1", ["read_file"])
        cold = time.perf_counter() - started
        sandboxed = best_of(lambda: box.run(program, ["read_file"]), runs)
    print(f"program (sandbox)       runner {runner * 1e3:7.3f} ms   sandbox {sandboxed * 1e3:7.3f} ms   "
          f"ratio {sandboxed / runner:6.1f}x   (worker start {cold * 1e3:.0f} ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    scale = 1 if args.quick else 5
    print(f"python {sys.version.split()[0]} on {sys.platform}")
    bench_validate(repeat=5 * scale)
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        (workspace / "a.txt").write_text("alpha beta gamma\n" * 20)
        read_file = resolve_kit(["read_file"], builtin_toolbox(workspace)).callables["read_file"]
        bench_traced_call("no-op tool", echo, calls=20_000 * scale, repeat=5)
        bench_traced_call("read_file", read_file, calls=2_000 * scale, repeat=5)
        bench_programs(workspace, runs=20 * scale)


if __name__ == "__main__":
    main()
