"""What a Plan costs per step, against running the same programs one by one; and
whether steps that wait run side by side.

    python benchmarks/bench_plan.py [--quick] [--steps N] [--waiting N]

For N small lackpy programs (read a file, count its words), measured in the same run:

- one by one: ``await service.run_program(...)`` for each, in turn (the peer);
- a Plan of N Program steps, without a Store;
- the same Plan checkpointing after every step into a SQLite Store on disk
  (``Store(db=...)``, WAL), which is what ``lackpy plan run --key`` does;

first with programs run in this process (where the engine's own cost shows most), then in
the sandbox worker (the default). A last line gives the engine's floor: N no-op Python
callables as a plan, against calling them in a loop. Plans are built once, outside the
timing (their construction validates every program; that cost is printed on its own).

Then side by side, in the sandbox: ``--waiting`` N programs that each wait 200 ms in a
tool call (a kernel-side tool, as an MCP server's call waits), run by ``run_many`` at
concurrency 1 and N, and as N steps in a row against one ``parallel=True`` band; the
ratio says how much of N steps' time one step's wait is (1/N: fully side by side).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from lackpy_kernel.config import LackpyConfig
from lackpy_kernel.engines import Plan, Program, Step, Store, from_start
from lackpy_kernel.kit import ToolSpec
from lackpy_kernel.kit.builtin_specs import READ_GRADE
from lackpy_kernel.service import LackpyService

PROGRAM = "text = read_file(task)\nwords = text.split()\nlen(words) + {n}"


def median_seconds(runs: list[Callable[[], Awaitable[object]]], repeat: int) -> list[float]:
    """Median wall time of ``repeat`` awaits of each of ``runs``, after one warm-up each.

    The runs take turns, so a busy moment of the machine falls on all of them alike.
    """

    async def timed() -> list[list[float]]:
        times: list[list[float]] = [[] for _ in runs]
        for run in runs:
            await run()
        for _ in range(repeat):
            for run, kept in zip(runs, times, strict=True):
                started = time.perf_counter()
                await run()
                kept.append(time.perf_counter() - started)
        return times

    return [statistics.median(kept) for kept in asyncio.run(timed())]


def programs(steps: int) -> list[str]:
    return [PROGRAM.format(n=n) for n in range(steps)]


def build_plan(service: LackpyService, steps: int, store: Store | None) -> tuple[Plan, float]:
    started = time.perf_counter()
    plan = Plan(*(Step(Program(source), name=f"s{n}", task=from_start, writes=f"w{n}")
                  for n, source in enumerate(programs(steps))),
                kit=["read_file"], service=service, store=store,
                checkpoint_key="bench" if store is not None else None)
    return plan, time.perf_counter() - started


def bench_programs(label: str, service: LackpyService, folder: Path, steps: int,
                   repeat: int) -> None:
    sources = programs(steps)

    async def one_by_one() -> None:
        for source in sources:
            result = await service.run_program(source, ["read_file"], {"task": "a.txt"})
            assert result.success, result.error

    plain, built = build_plan(service, steps, None)
    stored, _ = build_plan(service, steps, Store(folder / f"{label}.sqlite"))

    async def run(plan: Plan) -> None:
        envelope = await plan.arun("a.txt")
        assert envelope.ok, envelope.error

    peer, bare, disk = (seconds / steps for seconds in median_seconds(
        [one_by_one, lambda: run(plain), lambda: run(stored)], repeat))
    print(f"{label:11} one by one {peer * 1e3:7.3f} ms/step   "
          f"plan {bare * 1e3:7.3f} ms/step (+{(bare - peer) * 1e3:6.3f} ms, {bare / peer:5.2f}x)   "
          f"plan+sqlite {disk * 1e3:7.3f} ms/step (+{(disk - peer) * 1e3:6.3f} ms, "
          f"{disk / peer:5.2f}x)   build {built / steps * 1e3:.3f} ms/step")


def bench_floor(steps: int, repeat: int) -> None:
    def noop(task: object) -> object:
        return task

    async def loop() -> None:
        for _ in range(steps):
            await asyncio.to_thread(noop, 1)  # a plan runs a sync callable in a thread too

    plan = Plan(*(Step(noop, name=f"s{n}") for n in range(steps)))

    async def run() -> None:
        await plan.arun(1)

    peer, ours = (seconds / steps for seconds in median_seconds([loop, run], repeat))
    print(f"{'callables':11} one by one {peer * 1e3:7.3f} ms/step   "
          f"plan {ours * 1e3:7.3f} ms/step (+{(ours - peer) * 1e3:6.3f} ms, {ours / peer:5.2f}x)")


WAIT_SECONDS = 0.2  # what each waiting step's tool call takes


def wait_a_moment(task: object) -> object:
    """A kernel-side tool that waits, as a call to an MCP server or a slow read does."""
    time.sleep(WAIT_SECONDS)
    return task


def bench_waiting(folder: Path, count: int, repeat: int) -> None:
    config = LackpyConfig(sandbox_workers=count, sandbox_approve="never")
    with LackpyService(folder, config) as service:
        service.toolbox.register_tool(ToolSpec("wait_a_moment", "custom", **READ_GRADE),
                                      wait_a_moment)
        one = Plan(Step(Program("wait_a_moment(task)")), kit=["wait_a_moment"], service=service)
        steps = [Step(Program(f"wait_a_moment({n})"), name=f"s{n}") for n in range(count)]
        in_a_row = Plan(*steps, kit=["wait_a_moment"], service=service)
        band = Plan(*(Step(step.target, name=step.name, parallel=True) for step in steps),
                    kit=["wait_a_moment"], service=service)
        tasks = list(range(count))

        async def many(concurrency: int) -> None:
            envelopes = await one.arun_many(tasks, concurrency=concurrency)
            assert all(envelope.ok for envelope in envelopes), envelopes

        async def run(plan: Plan) -> None:
            envelope = await plan.arun(None)
            assert envelope.ok, envelope.error

        serial, side, row, parallel = median_seconds(
            [lambda: many(1), lambda: many(count), lambda: run(in_a_row),
             lambda: run(band)], repeat)
    print(f"{count} steps waiting {WAIT_SECONDS * 1e3:.0f} ms each, in the sandbox:")
    print(f"  run_many    concurrency 1 {serial * 1e3:8.1f} ms   concurrency {count} "
          f"{side * 1e3:8.1f} ms   ratio {side / serial:5.2f} (1/{count} = {1 / count:.2f})")
    print(f"  plan        in a row      {row * 1e3:8.1f} ms   parallel band  "
          f"{parallel * 1e3:8.1f} ms   ratio {parallel / row:5.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--steps", type=int, default=20, help="steps per plan (default 20)")
    parser.add_argument("--waiting", type=int, default=4,
                        help="steps side by side, each waiting 200 ms (default 4)")
    args = parser.parse_args()
    repeat = 3 if args.quick else 10
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"python {sys.version.split()[0]} on {sys.platform}, {os.cpu_count()} cores, load "
          f"{load}; {args.steps} steps a plan, median of {repeat} runs")
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "a.txt").write_text("alpha beta gamma\n" * 20)
        with LackpyService(folder, LackpyConfig(sandbox_enabled=False)) as service:
            bench_programs("in-process", service, folder, args.steps, repeat)
        with LackpyService(folder) as service:
            bench_programs("sandbox", service, folder, args.steps, repeat)
        bench_waiting(folder, args.waiting, repeat)
    bench_floor(args.steps, repeat)


if __name__ == "__main__":
    main()
