"""Tier 0 end to end: a template match through ``LackpyService.generate``, against the
dispatcher alone in the same run.

    python benchmarks/bench_tier0.py [--quick] [--templates N] [--profile]

A workspace with ``--templates`` (100,000) templates in ``.lackpy/templates/``. Each round
asks ``LackpyService.generate(intent, kit)`` (the kit resolved, the dispatcher built, the
ratchet's intent log and usage record kept) and ``InferenceDispatcher([templates]).generate``
(the same templates provider, the kit resolved once) for the same intent, taking turns, so
that both see the same machine. Prints min, median and p90 in ms of each and the ratio of
the medians (the issue's goal: the service's median at most 1 ms). ``--profile`` then
profiles the service's calls with cProfile and prints where their time goes.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import os
import pstats
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path

from lackpy_kernel.infer import InferenceDispatcher
from lackpy_kernel.infer.tiers import TemplatesProvider, format_template
from lackpy_kernel.service import LackpyService
from lackpy_kernel.telemetry import flush_writes

KIT = ["read_file"]
BODY = "content = read_file('{path}')\ncontent"


def write_workspace(root: Path, count: int) -> Path:
    """A workspace whose ``.lackpy/templates`` holds ``count`` templates, ``task N reads
    {path}``, the folder's time set a minute back (settled, as a user's folder would be)."""
    folder = root / ".lackpy" / "templates"
    folder.mkdir(parents=True)
    for index in range(count):
        name = f"t{index:06d}"
        (folder / f"{name}.tmpl").write_text(format_template(name, f"task {index} reads {{path}}", BODY))
    past = time.time_ns() - 60 * 10**9
    os.utime(folder, ns=(past, past))
    return root


def intents(count: int) -> list[str]:
    """Intents that each hit a template, spread over the folder's name order."""
    return [f"task {index} reads notes{index % 7}.txt" for index in range(count - 1, 0, -max(1, count // 9))]


async def take_turns(subjects: Mapping[str, Callable[[str], Awaitable[object]]], asks: list[str],
                     rounds: int) -> dict[str, list[float]]:
    """Seconds per call of each subject, the subjects taking turns (their order swapped every
    round) over the same intents."""
    times: dict[str, list[float]] = {name: [] for name in subjects}
    order = list(subjects)
    for number in range(rounds):
        intent = asks[number % len(asks)]
        for name in order if number % 2 else reversed(order):
            started = time.perf_counter()
            await subjects[name](intent)
            times[name].append(time.perf_counter() - started)
    return times


def figures(seconds: list[float]) -> str:
    """Min, median and p90 of ``seconds``, in ms."""
    ms = sorted(value * 1e3 for value in seconds)
    p90 = ms[min(len(ms) - 1, int(len(ms) * 0.9))]
    return f"min {ms[0]:7.3f}   median {statistics.median(ms):7.3f}   p90 {p90:7.3f} ms"


async def profile(generate: Callable[[str], Awaitable[object]], asks: list[str], calls: int) -> str:
    """cProfile's table of ``calls`` service generations, by own time and by cumulative time."""
    profiler = cProfile.Profile()
    for number in range(calls):
        profiler.enable()
        await generate(asks[number % len(asks)])
        profiler.disable()
    out = io.StringIO()
    table = pstats.Stats(profiler, stream=out)
    table.sort_stats("tottime").print_stats(25)
    table.sort_stats("cumulative").print_stats(45)
    return out.getvalue()


async def measure(workspace: Path, count: int, rounds: int, profiled: bool) -> None:
    with LackpyService(workspace) as service:
        resolved = service.resolve_kit(KIT)
        dispatcher = InferenceDispatcher([TemplatesProvider(workspace / ".lackpy" / "templates")])

        async def alone(intent: str) -> object:
            return await dispatcher.generate(intent, resolved.description, resolved.callables,
                                             tool_names=sorted(resolved.callables))

        async def end_to_end(intent: str) -> object:
            return await service.generate(intent, KIT)

        asks = intents(count)
        started = time.perf_counter()
        await end_to_end(asks[0])  # indexes the folder and writes the index file
        print(f"first call (the folder indexed) {time.perf_counter() - started:.2f} s")
        subjects = {"LackpyService.generate": end_to_end, "InferenceDispatcher.generate": alone}
        await take_turns(subjects, asks, 20)  # warm
        times = await take_turns(subjects, asks, rounds)
        print(f"tier 0 at {count} templates, {rounds} rounds each, taking turns:")
        for name, seconds in times.items():
            print(f"  {name:<30} {figures(seconds)}")
        service_ms, alone_ms = (statistics.median(times[name]) for name in subjects)
        print(f"  service / dispatcher alone (medians): {service_ms / alone_ms:5.2f}x;  "
              f"the service's median {'meets' if service_ms <= 1e-3 else 'misses'} the 1 ms goal")
        if profiled:
            print(await profile(end_to_end, asks, rounds))
    flush_writes()  # the usage rows and intents still pending, before the workspace goes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--templates", type=int, default=100_000, help="templates in the workspace")
    parser.add_argument("--profile", action="store_true", help="then profile the service's calls")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        workspace = write_workspace(Path(folder), args.templates)
        print(f"{args.templates} templates written in {time.perf_counter() - started:.1f} s")
        asyncio.run(measure(workspace, args.templates, 200 if args.quick else 2_000, args.profile))


if __name__ == "__main__":
    main()
