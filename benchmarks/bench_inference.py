"""Inference benchmarks, each against a peer measured in the same run.

    python benchmarks/bench_inference.py [--quick]

1. Tier-0 latency (TemplatesProvider.generate) with 10, 1,000 and 10,000
   templates, for a hit on the last template and a miss; ratios against 10.
2. A full ``delegate`` through the rules tier, against ``run_program`` of the
   same program (so the ratio is the cost of generating it), in process and
   in the sandbox.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from lackpy_kernel.infer.templates import TemplatesProvider, format_template
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
        cold_started = time.perf_counter()
        asyncio.run(provider.generate("warm up", NAMESPACE))
        cold = time.perf_counter() - cold_started
        hit = median_seconds(lambda p=provider, c=count: p.generate(
            f"task {c - 1} reads a.txt", NAMESPACE), repeat)
        miss = median_seconds(lambda p=provider: p.generate("nothing matches", NAMESPACE), repeat)
        baseline = baseline or hit
        print(f"tier 0, {count:>6} templates   hit {hit * 1e3:8.3f} ms   miss {miss * 1e3:8.3f} ms"
              f"   first call (parse all) {cold * 1e3:8.1f} ms   hit vs 10: {hit / baseline:6.1f}x")


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
