"""Kernel benchmarks: the lackpy kernel against the ipykernel Python kernel, in one run.

    python benchmarks/bench_kernel.py [--quick] [--load] [--no-kibitzer] [--telemetry]

Both kernels are launched through jupyter_client (``KernelManager(kernel_name=...)``)
with a fresh temporary workspace as their working directory, and measured
alternately (the order flips every round) so that load on the machine falls on
both alike.

1. Start-up: from just before ``km.start_kernel(cwd=workspace)`` to the arrival
   of the ``kernel_info_reply`` to the one ``kernel_info_request`` sent right
   after ``kc.start_channels()``. This covers writing the connection file,
   spawning the process, its imports and set-up, and the first shell round trip;
   it does not include waiting for IOPub to connect. The client's sockets retry
   their connection every 10 ms (pyzmq's default is 100 ms), so the figure is not
   rounded up to the client's retry interval while the kernel is not yet bound.
   Each such kernel then runs a first ``1 + 1`` cell (after ``wait_for_ready``,
   untimed), whose cost is reported apart: lackpy starts its sandbox worker as
   the kernel starts, and a first cell that comes before it is ready waits for it.
   Each kernel is then shut down (``shutdown_kernel(now=False)``, the polite
   request: interrupt, shutdown_request, then SIGTERM after half of
   ``shutdown_wait_time`` if the process is still there), and that is timed too;
   any shutdown that needed SIGTERM or SIGKILL is reported.
2. Execute round trip of ``1 + 1`` in a warm kernel (one warm-up cell first):
   from just before ``kc.execute()`` to the ``execute_reply`` on the shell
   channel, and to the ``status: idle`` for that request on IOPub.
3. The same for a cell that reads a 340-byte file of the workspace:
   ``len(read_file('a.txt'))`` in lackpy (a traced tool call in the sandbox
   worker) against ``len(open('a.txt').read())`` in the Python kernel; and for a
   cell that writes one small file: ``write_file('w.txt', 'x')`` (staged in the
   program's process, committed by the worker; the workspace's config lets it land
   unseen) against ``open('w.txt', 'w').write('x')``.

4. Memory: the proportional set size (PSS, from ``/proc/PID/smaps_rollup``; shared
   pages split between the processes that share them) of each kernel's whole process
   tree: for lackpy the kernel, its sandbox worker and the worker's idle child. Taken
   once the cells' kernels are ready and idle, and again after their 100 cells; USS
   (the pages no other process shares) is printed beside it.
5. CPU: the processor time (user and system, from ``/proc/PID/stat``) the whole process
   tree spent over the 100 cells, each process's own and that of the children it reaped,
   divided by the cells; for lackpy that includes the worker forking and warming up the
   next children between cells, which the round trips above do not show (on a machine
   with few cores, that work can land on the other kernel's cells).
6. Alone: rounds 2 and 3 again with one kernel running at a time (lackpy, then
   python3, then both again in the other order), so that neither kernel's background
   work falls on the other's cells: each cell sent as soon as the one before is idle
   (as a notebook's "run all" does), and each 100 ms after it (someone at the keyboard).
7. Approved: the write cell again (a new content each round), lackpy's in a workspace that
   asks before changes land (``[sandbox] approve = "write"``), its question answered "y"
   over the stdin channel as soon as it comes, against python3's, taking turns: from
   ``kc.execute()`` to the idle status.

With ``--telemetry``, only this: the read cell (3.) in two lackpy kernels, alternately, one
with ``[telemetry] exporter = "none"`` (spans off: one check of a module attribute per span)
and one with ``"console"`` (each span written to the kernel's stderr, here a file), and the
difference of their medians, what telemetry costs a cell (Kibitzer off in both).

With ``--load``, the table is measured again with a CPU burner on each core, and the growth
of the main medians is printed. With ``--no-kibitzer``, lackpy's workspaces turn Kibitzer off
(``[kibitzer] enabled = false``): what its hooks cost the cells.

Times are min / median / p90 (p90 where there are enough samples); the ratio is that of
the medians, lackpy / python3. The kernels' stderr is captured, and any lines found there,
and any kernel that was still alive after a polite shutdown, are reported.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import IO, Any

import zmq
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from loadgen import load_average, under_load

KERNELS = ("lackpy", "python3")
TRIVIAL = "1 + 1"
TOOL_CELL = {"lackpy": "len(read_file('a.txt'))", "python3": "len(open('a.txt').read())"}
# a cell writing one small file: staged in the child, committed by the worker (the workspace
# lets changes land unseen, [sandbox] approve = "never"), against a plain write
WRITE_CELL = {"lackpy": "write_file('w.txt', 'x')", "python3": "open('w.txt', 'w').write('x')"}
WRITE_KIT = "%kit read_file,write_file"  # sent once to the lackpy kernel, untimed
# a write cell whose change lackpy asks about, answered "y" (the round's number as content)
APPROVED_WRITE = {"lackpy": "write_file('w.txt', '{}')", "python3": "open('w.txt', 'w').write('{}')"}
APPROVED_METRIC = "write cell, approved with 'y' -> idle"
TIMEOUT = 60.0
SETTLE = 1.0  # seconds of quiet before memory is read: lackpy forks its next child after a cell
PAUSE = 0.1  # seconds between cells sent by hand


class Kernel:
    """One running kernel, its blocking client and where its stderr goes."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.km = KernelManager(kernel_name=name)
        self.kc: Any = None

    def start(self, workspace: Path, context: zmq.Context, stderr: IO[str]) -> float:
        """Launch; returns the seconds to the kernel_info_reply."""
        started = time.perf_counter()
        self.km.start_kernel(cwd=str(workspace), stderr=stderr)
        self.kc = self.km.client(context=context)
        self.kc.start_channels()
        return started_to_reply(self.kc, started)

    @property
    def pid(self) -> int:
        return self.km.provisioner.process.pid

    def ready(self) -> None:
        """Wait until IOPub is connected too (untimed), so that no status message is lost."""
        self.kc.wait_for_ready(timeout=TIMEOUT)

    def shutdown(self) -> tuple[float, str]:
        """Ask politely; returns the seconds taken and how it ended: "clean" when the
        kernel exited on the shutdown request, else what jupyter_client escalated to."""
        if self.kc is not None:
            self.kc.stop_channels()
        if not self.km.has_kernel:
            return 0.0, "clean"
        started = time.perf_counter()
        self.km.shutdown_kernel(now=False)
        took = time.perf_counter() - started
        # jupyter_client records whether it had to send SIGTERM or SIGKILL (private field)
        status = getattr(getattr(self.km, "_shutdown_status", None), "name", "ShutdownRequest")
        if self.km.is_alive():
            self.km.shutdown_kernel(now=True)
            status = "still alive, killed"
        return took, "clean" if status == "ShutdownRequest" else status


def started_to_reply(kc: Any, started: float) -> float:
    """Send one kernel_info_request; seconds from ``started`` to its reply."""
    msg_id = kc.kernel_info()
    deadline = started + TIMEOUT
    while time.perf_counter() < deadline:
        if kc.shell_channel.socket.poll(100):
            msg = kc.shell_channel.get_msg(timeout=0)
            if msg["parent_header"].get("msg_id") == msg_id:
                return time.perf_counter() - started
    raise RuntimeError(f"no kernel_info_reply in {TIMEOUT:.0f} s")


def round_trip(kc: Any, code: str) -> tuple[float, float]:
    """Seconds from ``kc.execute(code)`` to its execute_reply, and to its idle status."""
    shell, iopub = kc.shell_channel, kc.iopub_channel
    while iopub.msg_ready():  # anything left over from before (get_msgs() would block)
        iopub.get_msg(timeout=0)
    poller = zmq.Poller()
    poller.register(shell.socket, zmq.POLLIN)
    poller.register(iopub.socket, zmq.POLLIN)
    started = time.perf_counter()
    msg_id = kc.execute(code)
    reply_at = idle_at = None
    while reply_at is None or idle_at is None:
        events = dict(poller.poll(int(TIMEOUT * 1000)))
        if not events:
            raise RuntimeError(f"no reply to {code!r} in {TIMEOUT:.0f} s")
        if shell.socket in events:
            msg = shell.get_msg(timeout=0)
            if msg["parent_header"].get("msg_id") == msg_id:
                reply_at = time.perf_counter()
                if msg["content"]["status"] != "ok":
                    raise RuntimeError(f"{code!r} failed: {msg['content']}")
        if iopub.socket in events:
            msg = iopub.get_msg(timeout=0)
            if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status"
                    and msg["content"]["execution_state"] == "idle"):
                idle_at = time.perf_counter()
    return reply_at - started, idle_at - started


def asked(kc: Any, code: str, answer: Callable[[str], str]) -> tuple[float, float, str]:
    """Run ``code`` with stdin allowed, answering its question with ``answer(prompt)``:
    seconds from ``kc.execute`` to the first input_request and to the idle status, and the
    first prompt ("" and nan when none came). IOPub is read only once the question came (or
    the cell ended), so that the time to the question is the kernel's, not this client's
    decoding what was shown before it. Raises RuntimeError when the cell failed for another
    reason than a decline, or took longer than ``TIMEOUT``."""
    shell, iopub, stdin = kc.shell_channel, kc.iopub_channel, kc.stdin_channel
    while iopub.msg_ready():
        iopub.get_msg(timeout=0)
    poller = zmq.Poller()
    for channel in (shell, stdin):
        poller.register(channel.socket, zmq.POLLIN)
    started = time.perf_counter()
    msg_id = kc.execute(code, allow_stdin=True, stop_on_error=False)
    asked_at, prompt, reply, idle_at = float("nan"), "", None, None
    while reply is None or idle_at is None:
        events = dict(poller.poll(int(TIMEOUT * 1000)))
        if not events:
            raise RuntimeError(f"no reply to {code[:60]!r} in {TIMEOUT:.0f} s")
        if stdin.socket in events:
            msg = stdin.get_msg(timeout=0)
            if not prompt:
                asked_at, prompt = time.perf_counter(), msg["content"]["prompt"]
                poller.register(iopub.socket, zmq.POLLIN)
            kc.input(answer(msg["content"]["prompt"]))
        if shell.socket in events:
            msg = shell.get_msg(timeout=0)
            if msg["parent_header"].get("msg_id") == msg_id:
                reply = msg["content"]
                poller.register(iopub.socket, zmq.POLLIN)
        if iopub.socket in events:
            msg = iopub.get_msg(timeout=0)
            if (msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "status"
                    and msg["content"]["execution_state"] == "idle"):
                idle_at = time.perf_counter()
    if reply["status"] != "ok" and "declined" not in reply.get("evalue", ""):
        raise RuntimeError(f"{code[:60]!r} failed: {reply.get('ename')}: {reply.get('evalue')}")
    return asked_at - started, idle_at - started, prompt


def yes(prompt: str) -> str:
    """"y" to a question about a change shown whole (both trees end it ``[y/N] ``)."""
    if not prompt.endswith("[y/N] "):
        raise RuntimeError(f"the small write was not asked about as shown whole: {prompt!r}")
    return "y"


def alternate(round_index: int) -> tuple[str, ...]:
    return KERNELS if round_index % 2 == 0 else KERNELS[::-1]


def p90(times: list[float]) -> float:
    return statistics.quantiles(times, n=10, method="inclusive")[-1] if len(times) >= 2 else times[0]


def bench_startup(workspace: Path, context: zmq.Context, stderr: dict[str, IO[str]],
                  starts: int, samples: dict, anomalies: list[str]) -> None:
    for index in range(starts):
        for name in alternate(index):
            kernel = Kernel(name)
            try:
                startup = kernel.start(workspace, context, stderr[name])
                samples["start-up: launch -> kernel_info_reply"][name].append(startup)
                kernel.ready()
                reply, idle = round_trip(kernel.kc, TRIVIAL)
                samples[f"first cell {TRIVIAL!r} -> execute_reply"][name].append(reply)
                samples[f"first cell {TRIVIAL!r} -> idle"][name].append(idle)
            finally:
                took, how = kernel.shutdown()
                samples["shutdown_kernel(now=False)"][name].append(took)
                if how != "clean":
                    anomalies.append(f"{name}: shutdown {index + 1} of {starts} did not end on "
                                     f"the shutdown request ({how}, {took * 1e3:.0f} ms)")


def bench_cells(workspace: Path, context: zmq.Context, stderr: dict[str, IO[str]],
                cells: int, samples: dict, memory: dict, cpu: dict, anomalies: list[str]
                ) -> None:
    kernels: dict[str, Kernel] = {}
    try:
        for name in KERNELS:
            kernels[name] = Kernel(name)
            kernels[name].start(workspace, context, stderr[name])
            kernels[name].ready()
        time.sleep(SETTLE)
        for name, kernel in kernels.items():
            memory["after start"][name] = tree_memory(kernel.pid)
        for name, kernel in kernels.items():  # warm up
            if name == "lackpy":
                round_trip(kernel.kc, WRITE_KIT)
            round_trip(kernel.kc, TRIVIAL)
            round_trip(kernel.kc, TOOL_CELL[name])
            round_trip(kernel.kc, WRITE_CELL[name])
        time.sleep(SETTLE)
        spent_before = {name: tree_cpu(kernel.pid) for name, kernel in kernels.items()}
        for index in range(cells):
            for name in alternate(index):
                kc = kernels[name].kc
                reply, idle = round_trip(kc, TRIVIAL)
                samples[f"cell {TRIVIAL!r} -> execute_reply"][name].append(reply)
                samples[f"cell {TRIVIAL!r} -> idle"][name].append(idle)
                reply, idle = round_trip(kc, TOOL_CELL[name])
                samples["read a.txt cell -> execute_reply"][name].append(reply)
                samples["read a.txt cell -> idle"][name].append(idle)
                reply, idle = round_trip(kc, WRITE_CELL[name])
                samples["write w.txt cell -> execute_reply"][name].append(reply)
                samples["write w.txt cell -> idle"][name].append(idle)
        time.sleep(SETTLE)
        for name, kernel in kernels.items():
            memory[f"after {3 * cells + 4} cells"][name] = tree_memory(kernel.pid)
            cpu[name] = (tree_cpu(kernel.pid) - spent_before[name]) / (3 * cells)
    finally:
        for name, kernel in kernels.items():
            took, how = kernel.shutdown()
            if how != "clean":
                anomalies.append(f"{name}: the cells' kernel did not end on the shutdown "
                                 f"request ({how}, {took * 1e3:.0f} ms)")


def bench_approved(root: Path, context: zmq.Context, stderr: dict[str, IO[str]], cells: int,
                   samples: dict, kibitzer: bool = True) -> None:
    """A write cell again, lackpy's in a workspace that asks first (``[sandbox] approve =
    "write"``), each question answered "y" over stdin as it comes, against python3's; the
    kernels taking turns, a new content each round (a write that changes nothing asks
    nothing)."""
    folders = {name: root / f"approved-{name}" for name in KERNELS}  # each its own w.txt
    (folders["lackpy"] / ".lackpy").mkdir(parents=True)
    (folders["lackpy"] / ".lackpy" / "config.toml").write_text(lackpy_config("write", kibitzer))
    folders["python3"].mkdir()
    kernels = {name: Kernel(name) for name in KERNELS}
    try:
        for name, kernel in kernels.items():
            kernel.start(folders[name], context, stderr[name])
            kernel.ready()
        round_trip(kernels["lackpy"].kc, WRITE_KIT)
        for index in range(-1, cells):  # round -1 warms both up, untimed
            for name in alternate(index):
                code = APPROVED_WRITE[name].format(index)
                kc = kernels[name].kc
                idle = asked(kc, code, yes)[1] if name == "lackpy" else round_trip(kc, code)[1]
                if index >= 0:
                    samples[APPROVED_METRIC][name].append(idle)
        if (folders["lackpy"] / "w.txt").read_text() != f"{cells - 1}":
            raise RuntimeError("the approved writes did not land")
    finally:
        for kernel in kernels.values():
            kernel.shutdown()


def bench_alone(workspace: Path, context: zmq.Context, stderr: dict[str, IO[str]],
                cells: int, samples: dict) -> None:
    """Rounds of both cells with only one kernel running at a time."""
    for order in (KERNELS, KERNELS[::-1]):
        for name in order:
            kernel = Kernel(name)
            try:
                kernel.start(workspace, context, stderr[name])
                kernel.ready()
                round_trip(kernel.kc, TRIVIAL)
                round_trip(kernel.kc, TOOL_CELL[name])
                for pause, how in ((0.0, "back to back"), (PAUSE, "100 ms apart")):
                    time.sleep(SETTLE)
                    for _ in range(cells // 2):
                        for label, code in ((f"cell {TRIVIAL!r}", TRIVIAL),
                                            ("read a.txt cell", TOOL_CELL[name])):
                            time.sleep(pause)
                            samples[f"alone, {how}: {label} -> execute_reply"][name].append(
                                round_trip(kernel.kc, code)[0])
            finally:
                kernel.shutdown()


def report(samples: dict, with_p90: set[str]) -> dict[str, tuple[float, float]]:
    """Print min, median and (with enough samples) p90 of each metric for both kernels, and
    the ratio of the medians; returns the medians (lackpy, python3) by metric."""
    width = max(len(metric) for metric in samples) + 2
    print(f"{'(ms)':{width}}  {'lackpy min / median / p90':>26}  "
          f"{'python3 min / median / p90':>26}  {'ratio':>6}")
    medians = {}
    for metric, by_kernel in samples.items():
        ours, peer = by_kernel["lackpy"], by_kernel["python3"]
        if not ours or not peer:
            continue
        figures = [_spread(times, metric in with_p90) for times in (ours, peer)]
        medians[metric] = (statistics.median(ours), statistics.median(peer))
        print(f"{metric:{width}}  {figures[0]:>26}  {figures[1]:>26}  "
              f"{medians[metric][0] / medians[metric][1]:5.2f}x")
    return medians


def _spread(times: list[float], with_p90: bool) -> str:
    tail = f" / {p90(times) * 1e3:6.2f}" if with_p90 else " /      -"
    return f"{min(times) * 1e3:6.2f} / {statistics.median(times) * 1e3:6.2f}{tail}"


def tree_memory(pid: int) -> tuple[float, float, int]:
    """PSS and USS in MB of ``pid`` and all its descendants, and how many processes."""
    pss = uss = 0
    pids = descendants(pid)
    for each in pids:
        fields = {}
        for line in Path(f"/proc/{each}/smaps_rollup").read_text().splitlines()[1:]:
            key, value = line.split(":", 1)
            fields[key] = int(value.split()[0])
        pss += fields["Pss"]
        uss += fields["Private_Clean"] + fields["Private_Dirty"]
    return pss / 1024, uss / 1024, len(pids)


def tree_cpu(pid: int) -> float:
    """Seconds of CPU that ``pid`` and every process below it spent, with the children
    each has reaped."""
    ticks = 0
    for each in descendants(pid):
        fields = Path(f"/proc/{each}/stat").read_text().rsplit(")", 1)[1].split()
        ticks += sum(int(value) for value in fields[11:15])  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it."""
    found, queue = [], [pid]
    while queue:
        each = queue.pop()
        found.append(each)
        for task in Path(f"/proc/{each}/task").iterdir():
            queue += [int(child) for child in (task / "children").read_text().split()]
    return found


def report_memory(memory: dict) -> None:
    print(f"{'memory, whole process tree (MB)':32}  {'lackpy':>15}  {'python3':>15}  "
          f"{'PSS ratio':>9}")
    for when, by_kernel in memory.items():
        ours, peer = by_kernel["lackpy"], by_kernel["python3"]
        print(f"{'PSS / USS ' + when:32}  {ours[0]:6.1f} / {ours[1]:6.1f}  "
              f"{peer[0]:6.1f} / {peer[1]:6.1f}  {ours[0] / peer[0]:8.2f}x"
              f"   ({ours[2]} and {peer[2]} processes)")


def report_cpu(cpu: dict[str, float]) -> None:
    ours, peer = cpu["lackpy"], cpu["python3"]
    print(f"{'CPU per cell (ms), whole tree':32}  {ours * 1e3:15.2f}  {peer * 1e3:15.2f}  "
          f"{ours / peer:8.2f}x")


def stderr_notes(files: dict[str, Path]) -> list[str]:
    notes = []
    for name, path in files.items():
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines()
                 if line.strip()]
        for line in dict.fromkeys(lines):
            notes.append(f"{name} stderr ({lines.count(line)}x): {line[:160]}")
    return notes


def bench_telemetry(root: Path, context: zmq.Context, cells: int) -> None:
    """``--telemetry``: the read cell with spans off and with the console exporter."""
    times: dict[str, list[float]] = {"none": [], "console": []}
    kernels: dict[str, Kernel] = {}
    with ExitStack() as stack:
        try:
            for exporter in times:
                workspace = root / f"telemetry-{exporter}"
                (workspace / ".lackpy").mkdir(parents=True)
                (workspace / "a.txt").write_text("alpha beta gamma\n" * 20)
                (workspace / ".lackpy" / "config.toml").write_text(
                    f'[telemetry]\nexporter = "{exporter}"\n\n[kibitzer]\nenabled = false\n')
                kernels[exporter] = Kernel("lackpy")
                kernels[exporter].start(workspace, context, stack.enter_context(
                    (root / f"telemetry-{exporter}.stderr").open("w")))
                kernels[exporter].ready()
                round_trip(kernels[exporter].kc, TOOL_CELL["lackpy"])  # warm up
            for index in range(cells):
                for exporter in (list(times) if index % 2 == 0 else list(times)[::-1]):
                    times[exporter].append(round_trip(kernels[exporter].kc,
                                                      TOOL_CELL["lackpy"])[1])
        finally:
            for kernel in kernels.values():
                kernel.shutdown()
    off, on = (statistics.median(times[exporter]) * 1e3 for exporter in times)
    print(f"telemetry, read a.txt cell -> idle, median of {cells}: off {off:.2f} ms, console "
          f"exporter {on:.2f} ms: {on - off:+.2f} ms a cell")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--load", action="store_true",
                        help="the table again with a CPU burner on each core")
    parser.add_argument("--kibitzer", action=argparse.BooleanOptionalAction, default=True,
                        help="Kibitzer on in lackpy's workspaces, as where its extra is installed")
    parser.add_argument("--telemetry", action="store_true",
                        help="only the cost of telemetry: a cell with spans off and on (console)")
    args = parser.parse_args()
    if args.telemetry:
        context = zmq.Context()
        with tempfile.TemporaryDirectory() as folder:
            bench_telemetry(Path(folder), context, 20 if args.quick else 100)
        context.term()
        return
    kernel_tables(args.quick, args.load, args.kibitzer)


def lackpy_config(approve: str, kibitzer: bool) -> str:
    """The lackpy workspace's ``.lackpy/config.toml``: ``[sandbox] approve``, and Kibitzer
    turned off unless ``kibitzer`` (on, it is on wherever the ``kibitzer`` extra is installed)."""
    return f'[sandbox]\napprove = "{approve}"\n' + ("" if kibitzer else
                                                      "\n[kibitzer]\nenabled = false\n")


def kernel_tables(quick: bool, load: bool, kibitzer: bool = True) -> None:
    """The kernel table (``kernel_table``) and, with ``load``, again under a CPU burner on
    each core, with how much each median grew; ``kibitzer`` False turns Kibitzer off in
    lackpy's workspaces."""
    idle = kernel_table(quick, kibitzer)
    if not load or not idle:
        return
    loaded = under_load(lambda: kernel_table(quick, kibitzer))
    print("growth of the median under load (lackpy, python3):")
    for metric in (f"cell {TRIVIAL!r} -> idle", "read a.txt cell -> idle",
                   "write w.txt cell -> idle", f"alone, back to back: cell {TRIVIAL!r} -> execute_reply"):
        if metric in idle and metric in loaded:
            growth = [loaded[metric][side] / idle[metric][side] for side in (0, 1)]
            print(f"  {metric}: {growth[0]:.2f}x, {growth[1]:.2f}x")


def kernel_table(quick: bool, kibitzer: bool = True) -> dict[str, tuple[float, float]]:
    """Measure both kernels (the module's docstring says how) and print the table; the
    medians (lackpy, python3) by metric, none when a kernelspec is missing."""
    starts, cells = (2, 10) if quick else (5, 50)
    print(f"python {sys.version.split()[0]} on {sys.platform}; {starts} starts and "
          f"{cells} cells of each kind per kernel; Kibitzer {'on' if kibitzer else 'off'}; "
          f"{load_average()}")
    specs = KernelSpecManager().find_kernel_specs()
    missing = [name for name in KERNELS if name not in specs]
    if missing:
        print(f"kernel: skipped, no kernelspec for {', '.join(missing)} "
              "(python -m lackpy_kernel install; python -m ipykernel install)")
        return {}
    samples: dict[str, dict[str, list[float]]] = defaultdict(lambda: {k: [] for k in KERNELS})
    memory: dict[str, dict[str, tuple[float, float, int]]] = defaultdict(dict)
    cpu: dict[str, float] = {}
    anomalies: list[str] = []
    context = zmq.Context()
    context.setsockopt(zmq.RECONNECT_IVL, 10)
    with tempfile.TemporaryDirectory() as folder, ExitStack() as stack:
        root = Path(folder)
        workspace = root / "ws"
        workspace.mkdir()
        (workspace / "a.txt").write_text("alpha beta gamma\n" * 20)
        (workspace / ".lackpy").mkdir()
        (workspace / ".lackpy" / "config.toml").write_text(lackpy_config("never", kibitzer))
        logs = {name: root / f"{name}.stderr" for name in KERNELS}
        stderr = {name: stack.enter_context(path.open("w")) for name, path in logs.items()}
        try:
            bench_startup(workspace, context, stderr, starts, samples, anomalies)
            bench_cells(workspace, context, stderr, cells, samples, memory, cpu, anomalies)
            bench_alone(workspace, context, stderr, cells, samples)
            bench_approved(root, context, stderr, cells, samples, kibitzer)
        finally:
            for handle in stderr.values():
                handle.flush()
            anomalies.extend(stderr_notes(logs))
            context.term()
        medians = report(samples, with_p90={
            metric for metric in samples
            if metric.startswith(("cell", "read", "write", "shutdown", "alone"))})
        report_memory(memory)
        report_cpu(cpu)
    for note in anomalies:
        print(f"note: {note}")
    return medians


if __name__ == "__main__":
    main()
