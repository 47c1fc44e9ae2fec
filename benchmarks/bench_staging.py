"""Staged writes: what a program's writes cost now that they land only at its end.

    python benchmarks/bench_staging.py [--quick]

1. The commit of 1,000 small files (100 bytes each, in 10 folders): the worker's
   ``commit_stage`` (every path checked, the pre-images kept for ``%undo``, a journal
   written and fsynced, each file replaced atomically) plus ``Landed.finish`` (each file
   fsynced, the journal removed), against the same files written by a plain Python loop
   (``open(path, 'w').write``) and by a loop of atomic replaces with an fsync each (what
   a careful script does), in the same run, alternating.
2. A program that writes one small file, run through ``Sandbox.run`` (staged in the
   child, committed by the worker), against one that only reads a file, the same way:
   what staging and the commit add to a writing program's round trip.

Medians (min and p90 beside them) over the rounds; ratios against the plain loop.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from lackpy_kernel.kit import Workspace
from lackpy_kernel.kit.journal import commit_stage
from lackpy_kernel.kit.staging import remove_tree
from lackpy_kernel.run import Sandbox, sandbox_supported

FILES, FOLDERS, SIZE = 1000, 10, 100


def paths() -> list[str]:
    return [f"d{n % FOLDERS}/f{n}.txt" for n in range(FILES)]


def stage_files(stage: Path, content: bytes) -> None:
    for relative in paths():
        target = stage / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)


def commit_once(root: Path, round_no: int) -> float:
    """Seconds to commit 1,000 staged files (the stage is made first, untimed)."""
    stage = root / ".lackpy" / "staging" / "bench"
    stage_files(stage, f"{round_no:08d}".encode() * (SIZE // 8))
    started = time.perf_counter()
    commit_stage(Workspace(root), str(stage), paths()).finish()
    elapsed = time.perf_counter() - started
    remove_tree(str(stage))
    return elapsed


def plain_once(root: Path, round_no: int) -> float:
    content = f"{round_no:08d}" * (SIZE // 8)
    started = time.perf_counter()
    for relative in paths():
        target = root / relative
        target.parent.mkdir(exist_ok=True)
        with open(target, "w") as out:
            out.write(content)
    return time.perf_counter() - started


def atomic_once(root: Path, round_no: int) -> float:
    content = (f"{round_no:08d}" * (SIZE // 8)).encode()
    started = time.perf_counter()
    for relative in paths():
        target = root / relative
        target.parent.mkdir(exist_ok=True)
        temporary = target.with_name(target.name + ".tmp")
        with open(temporary, "wb") as out:
            out.write(content)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, target)
    return time.perf_counter() - started


def alternate(ways: dict[str, Callable[[int], float]], rounds: int) -> dict[str, list[float]]:
    """Each way once a round, the order flipped every round."""
    samples: dict[str, list[float]] = {name: [] for name in ways}
    names = list(ways)
    for round_no in range(rounds):
        for name in names if round_no % 2 == 0 else reversed(names):
            samples[name].append(ways[name](round_no))
    return samples


def summary(values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.9))]
    return (f"median {statistics.median(ordered) * 1000:8.2f} ms  (min {ordered[0] * 1000:.2f}, "
            f"p90 {p90 * 1000:.2f})")


def report(title: str, samples: dict[str, list[float]], base: str) -> None:
    print(title)
    reference = statistics.median(samples[base])
    for name, values in samples.items():
        ratio = statistics.median(values) / reference
        print(f"  {name:<34} {summary(values)}  {ratio:5.2f}x {base}")


def bench_commit(rounds: int) -> None:
    with tempfile.TemporaryDirectory() as a, tempfile.TemporaryDirectory() as b, \
            tempfile.TemporaryDirectory() as c:
        ways = {"commit_stage + finish (journaled)": lambda n: commit_once(Path(a), n),
                "plain open().write loop": lambda n: plain_once(Path(b), n),
                "atomic replace + fsync loop": lambda n: atomic_once(Path(c), n)}
        report(f"1. committing {FILES} files of {SIZE} bytes", alternate(ways, rounds),
               "plain open().write loop")


def bench_programs(runs: int) -> None:
    if not sandbox_supported():
        print("2. skipped: no sandbox on this platform")
        return
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "a.txt").write_text("alpha beta gamma\n" * 20)
        with Sandbox(root) as sandbox:
            sandbox.wait_ready()
            counter = iter(range(10**9))

            def run(program: str) -> float:
                started = time.perf_counter()
                result = sandbox.run(program, ["read_file", "write_file"], keep=False)
                elapsed = time.perf_counter() - started
                assert result.success, result.error
                return elapsed

            ways = {"a program writing one file": lambda n: run(
                        f"write_file('out.txt', 'line {next(counter)}')"),
                    "a program reading one file": lambda n: run("len(read_file('a.txt'))")}
            alternate(ways, 5)  # warm-up
            report("2. a program's round trip through Sandbox.run", alternate(ways, runs),
                   "a program reading one file")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]} on {sys.platform}, {os.cpu_count()} cores")
    bench_commit(3 if args.quick else 15)
    bench_programs(10 if args.quick else 100)


if __name__ == "__main__":
    main()
