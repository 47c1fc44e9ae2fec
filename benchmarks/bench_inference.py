"""Inference benchmarks, each against a peer measured in the same run.

    python benchmarks/bench_inference.py [--quick]

1. Tier-0 latency (TemplatesProvider.generate) with 10, 1,000 and 10,000
   templates: the median (p50) of a hit on the last template and of a miss,
   the first call (which indexes the folder), and a hit right after a count
   update (which rewrites a template file); ratios against 10 templates.
   The peer is the other index design, one combined regex with a named
   alternative per template (its compile time is its first call).
2. A full ``delegate`` through the rules tier, against ``run_program`` of the
   same program (so the ratio is the cost of generating it), in process and
   in the sandbox.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from lackpy_kernel.infer.tiers import TemplatesProvider, format_template, update_counts
from lackpy_kernel.service import LackpyService

NAMESPACE = "read_file(path: str) -> str: read a file"


def median_seconds(make: Callable[[], Awaitable[object]], repeat: int) -> float:
    async def measure() -> list[float]:
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            await make()
            times.append(time.perf_counter() - started)
        return times

    return statistics.median(asyncio.run(measure()))


def write_templates(folder: Path, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for index in range(count):
        text = format_template(f"t{index:05d}", f"task {index} reads {{path}}",
                               "content = read_file('{path}')\ncontent")
        (folder / f"t{index:05d}.tmpl").write_text(text)


def bench_templates(root: Path, repeat: int) -> None:
    baseline = None
    for count in (10, 1_000, 10_000):
        folder = root / f"templates-{count}"
        write_templates(folder, count)
        provider = TemplatesProvider(folder)
        cold_started, cold_cpu_started = time.perf_counter(), time.process_time()
        asyncio.run(provider.generate("warm up", NAMESPACE))
        cold, cold_cpu = time.perf_counter() - cold_started, time.process_time() - cold_cpu_started
        time.sleep(0.1)  # past the folder's racy window, as a user's next intent would be
        hit_intent = f"task {count - 1} reads a.txt"
        hit = median_seconds(lambda p=provider, i=hit_intent: p.generate(i, NAMESPACE), repeat)
        miss = median_seconds(lambda p=provider: p.generate("nothing matches", NAMESPACE), repeat)
        found = median_seconds(lambda p=provider, i=hit_intent: find(p, i), repeat)
        counted = hit_after_count_update(provider, hit_intent, repeat)
        baseline = baseline or hit
        print(f"tier 0, {count:>6} templates   hit p50 {hit * 1e3:6.3f} ms   miss p50 "
              f"{miss * 1e3:6.3f} ms   first call {cold * 1e3:6.1f} ms (cpu {cold_cpu * 1e3:5.1f} ms)"
              f"   hit after a count update {counted * 1e3:6.3f} ms   hit vs 10: {hit / baseline:4.1f}x")
        peer_cold, peer_found = bench_combined_regex(count, hit_intent, repeat)
        print(f"  matching only: index {found * 1e3:7.3f} ms, peer (one combined regex) "
              f"{peer_found * 1e3:7.3f} ms: {peer_found / found:8.2f}x;  first call: peer "
              f"{peer_cold * 1e3:6.1f} ms: {peer_cold / cold:4.1f}x")


async def find(provider: TemplatesProvider, intent: str) -> None:
    assert provider.find(intent) is not None


def hit_after_count_update(provider: TemplatesProvider, intent: str, repeat: int) -> float:
    """The median hit right after ``update_counts`` rewrote the matching template's file."""
    async def measure() -> list[float]:
        times = []
        for _ in range(repeat):
            program = await provider.generate(intent, NAMESPACE)
            update_counts(Path(program.source), success=True)
            started = time.perf_counter()
            await provider.generate(intent, NAMESPACE)
            times.append(time.perf_counter() - started)
        return times

    return statistics.median(asyncio.run(measure()))


def bench_combined_regex(count: int, intent: str, repeat: int) -> tuple[float, float]:
    """The other design: every pattern in one regex, ``(?P<t0>...)|(?P<t1>...)|...``."""
    started = time.perf_counter()
    alternatives = []
    for index in range(count):
        literal = rf"task\s+{index}\s+reads\s+"
        alternatives.append(f"(?P<t{index}>{literal}(?P<t{index}_path>.+?))")
    combined = re.compile("|".join(alternatives), re.IGNORECASE | re.DOTALL)
    combined.fullmatch("warm up")
    cold = time.perf_counter() - started

    async def hit() -> None:
        found = combined.fullmatch(intent.strip())
        assert found is not None and found.lastgroup is not None

    return cold, median_seconds(hit, repeat)


def bench_delegate(root: Path, repeat: int) -> None:
    workspace = root / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("alpha\nbeta\n" * 100)
    program = "content = read_file('notes.txt')\ncontent"
    with LackpyService(workspace) as service:
        for sandbox in (False, True):
            where = "sandbox" if sandbox else "in-process"
            asyncio.run(service.delegate("read the file notes.txt", "read_file", sandbox=sandbox))
            run = median_seconds(
                lambda s=sandbox: service.run_program(program, "read_file", sandbox=s), repeat)
            delegate = median_seconds(
                lambda s=sandbox: service.delegate("read the file notes.txt", "read_file",
                                                   sandbox=s), repeat)
            print(f"delegate via rules ({where:10})   run_program {run * 1e3:7.3f} ms   "
                  f"delegate {delegate * 1e3:7.3f} ms   ratio {delegate / run:5.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args()
    repeat = 5 if args.quick else 25
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        bench_templates(root, repeat)
        bench_delegate(root, repeat)


if __name__ == "__main__":
    main()
