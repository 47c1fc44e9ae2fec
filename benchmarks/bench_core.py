"""Core benchmarks, each against a peer measured in the same run.

    python benchmarks/bench_core.py [--quick]

1. validate() throughput on a corpus of programs, against the published
   lackpy-lang validator (``pip install lackpy-lang``), with and without the
   kit's tools as protected names.
2. validate() on hostile programs of about 1 MB (the size limit), against
   ``ast.parse`` of the same text: the worst is what a caller can be made to
   spend validating one program.
3. A traced tool call (tracing + plain-data checks) against a direct call.
4. The per-program cost of the in-process runner and of the sandbox worker,
   against a bare ``exec`` of the same compiled program; in the sandbox both for
   a program that sets variables and for one that changes nothing (whose next
   program the worker's held twin can take at once), each sent back to back.
"""

from __future__ import annotations

import argparse
import ast
import gc
import math
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from lackpy_kernel.kit import builtin_toolbox, resolve_kit
from lackpy_kernel.lang import validate
from lackpy_kernel.lang.grammar import MAX_PROGRAM_CHARS
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


def fastest(fns: dict[str, Callable[[], object]], rounds: int) -> dict[str, float]:
    """Fewest seconds of each of ``fns``, run in turn ``rounds`` times (a busy machine
    slows some runs; the fastest is the code's own cost)."""
    return fastest_and_last(fns, rounds)[0]


def fastest_and_last(fns: dict[str, Callable[[], object]], rounds: int
                     ) -> tuple[dict[str, float], dict[str, object]]:
    """``fastest``, and what each function returned the last time (each round starts with
    the next function, so none always runs after the same one)."""
    best, last = dict.fromkeys(fns, math.inf), {}
    order = list(fns.items())
    for round_ in range(rounds):
        shift = round_ % len(order)
        for name, fn in order[shift:] + order[:shift]:
            started = time.perf_counter()
            last[name] = fn()
            best[name] = min(best[name], time.perf_counter() - started)
    return best, last


def bench_validate(rounds: int) -> None:
    try:
        from lackpy.lang import validate as peer_validate
    except ImportError:
        print("validate: lackpy-lang is not installed; pip install lackpy-lang to compare")
        return
    names = {"read_file", "find_files", "find_definitions", "find_callers"}

    def corpus(check: Callable[[str], object]) -> Callable[[], None]:
        def run() -> None:
            for program in CORPUS:
                check(program)
        return run

    best = fastest({
        "plain": corpus(lambda program: validate(program, names)),
        "protected": corpus(lambda program: validate(program, names, protected_names=names)),
        "peer": corpus(lambda program: peer_validate(program, names)),
    }, rounds)
    per = {name: seconds / len(CORPUS) * 1e6 for name, seconds in best.items()}
    print(f"validate ({len(CORPUS)} programs)   ours {per['plain']:6.1f} us   with protected names "
          f"{per['protected']:6.1f} us   lackpy-lang {per['peer']:6.1f} us")
    print(f"  protected names / none       {best['protected'] / best['plain']:5.2f}x time   "
          "(at most 1.1x)")
    print(f"  ours (protected) / lackpy-lang {best['protected'] / best['peer']:5.2f}x time   "
          f"= {best['peer'] / best['protected']:.1f}x faster (at least 3x)")


def _lines(line_of: Callable[[int], str], size: int) -> str:
    lines, total = [], 0
    for index in range(size):
        line = line_of(index)
        if total + len(line) + 1 > size:
            break
        lines.append(line)
        total += len(line) + 1
    return "\n".join(lines)


def _items(prefix: str, item_of: Callable[[int], str], suffix: str, size: int) -> str:
    items, total = [], len(prefix) + len(suffix)
    for index in range(size):
        item = item_of(index)
        if total + len(item) + 2 > size:
            break
        items.append(item)
        total += len(item) + 2
    return prefix + ", ".join(items) + suffix


def hostile_programs(size: int = MAX_PROGRAM_CHARS - 1000) -> list[tuple[str, str, set[str]]]:
    """(what, program, allowed names): programs of about ``size`` characters, each aimed at
    a cost the validator once had (issue 9) or could have."""
    letters = "".join(chr(0x4E00 + i) for i in range(6000))  # 6,000 distinct identifier letters
    whiles = "".join(" " * depth + "while x:\n" for depth in range(98))
    return [
        ("100k names unpacked", _items("", lambda i: f"v{i}", " = x", size), {"x"}),
        ("assignments", _lines(lambda i: f"v{i} = {i}", size), set()),
        ("errors on one long line", _items("é = 1; x = [", lambda i: f"q.__a{i}", "]", size), {"q"}),
        ("long line, late errors",
         "x = ['" + "é" * (size // 2) + "', " + _items("", lambda i: f"x.__a{i}", "]", size // 2),
         {"x"}),
        ("6,000-letter names", _lines(lambda i: letters[i + 1:] + letters[:i + 1] + "()", size),
         {letters}),
        ("unknown functions", _lines(lambda i: f"read_fil{i}('a')", size), {"read_file"}),
        ("unknown names", _items("y = [", lambda i: f"w{i}", "]", size), set()),
        ("nesting at the limit", _lines(lambda i: "x = " + "[" * 190 + "]" * 190, size), set()),
        ("nesting over the limit", _lines(lambda i: "x = " + "-" * 300 + "1", size), set()),
        ("dunder strings", _items("x = [", lambda i: "'__'", "]", size), set()),
        ("wide dict", _items("d = {", lambda i: f"{i}: {i}", "}", size), set()),
        ("forbidden in forbidden",
         whiles + _lines(lambda i: " " * 98 + "pass", size - len(whiles)), {"x"}),
        ("binary chains", _lines(lambda i: "x = " + " + ".join(["x"] * 180), size), {"x"}),
        ("key lambdas", _lines(lambda i: "sorted(x, key=lambda r: r)", size), {"x"}),
        ("tool rebinding", _lines(lambda i: f"read_file = {i}", size), {"read_file"}),
    ]


def bench_hostile(rounds: int, only: Iterable[str] | None = None) -> None:
    """Each hostile program's validation, as the runner does it (the kit's tools protected),
    beside ``ast.parse`` alone with the garbage collector paused, as validate parses."""
    wanted = set(only or ())
    worst = ("", 0.0)
    print(f"hostile programs (about {MAX_PROGRAM_CHARS:,} characters; best of {rounds})")
    for label, program, names in hostile_programs():
        if wanted and label not in wanted:
            continue
        best, last = fastest_and_last({
            "parse": lambda program=program: _parse_paused(program),
            "validate": lambda program=program, names=names: validate(
                program, names, protected_names=names & {"read_file"}),
        }, rounds)
        verdict = last["validate"]
        outcome = "valid" if verdict.valid else f"{len(verdict.issues)} issues"
        print(f"  {label:26} {len(program):9,} chars   validate {best['validate']:6.2f} s   "
              f"ast.parse alone {best['parse']:6.2f} s   {outcome}")
        worst = max(worst, (label, best["validate"]), key=lambda pair: pair[1])
    print(f"  worst: {worst[0]}, {worst[1]:.2f} s")


def _parse_paused(program: str) -> None:
    gc.disable()
    try:
        ast.parse(program)
    except (SyntaxError, RecursionError, MemoryError):
        pass
    finally:
        gc.enable()


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


UNCHANGING = "len(read_file('a.txt').split())"


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
        expression = best_of(lambda: box.run(UNCHANGING, ["read_file"]), runs)
    print(f"program (sandbox)       runner {runner * 1e3:7.3f} ms   sandbox {sandboxed * 1e3:7.3f} ms   "
          f"ratio {sandboxed / runner:6.1f}x   (worker start {cold * 1e3:.0f} ms)")
    print(f"  changing nothing      {UNCHANGING!r} in the sandbox {expression * 1e3:7.3f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--hostile", nargs="*", metavar="WHAT",
                        help="only the hostile programs (those named, or all)")
    args = parser.parse_args()
    scale = 1 if args.quick else 5
    print(f"python {sys.version.split()[0]} on {sys.platform}")
    if args.hostile is not None:
        bench_hostile(rounds=scale, only=args.hostile)
        return
    bench_validate(rounds=100 * scale)
    bench_hostile(rounds=1 if args.quick else 3)
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        (workspace / "a.txt").write_text("alpha beta gamma\n" * 20)
        read_file = resolve_kit(["read_file"], builtin_toolbox(workspace)).callables["read_file"]
        bench_traced_call("no-op tool", echo, calls=20_000 * scale, repeat=5)
        bench_traced_call("read_file", read_file, calls=2_000 * scale, repeat=5)
        bench_programs(workspace, runs=20 * scale)


if __name__ == "__main__":
    main()
