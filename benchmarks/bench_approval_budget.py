"""The budget of faithful approval (issue 39): the tree before it against this one, in one run.

    python benchmarks/bench_approval_budget.py [--rounds N] [--big-rounds N] [--old COMMIT]

"Before this issue" is the commit ``--old`` (24e7b59), extracted with ``git archive`` into a
temporary folder (the repository is not touched). Two lackpy kernels are launched through
jupyter_client from the installed ``lackpy`` kernelspec, each in a workspace of its own that
asks before changes land (``[sandbox] approve = "write"``): the old one with ``PYTHONPATH``
naming the extracted tree, so that ``python -m lackpy_kernel`` imports the old package, the
new one as installed (this working tree). Which package each kernel imported is read from
its process: the sandbox worker it spawns is given the kernel's own package root first on
its ``PYTHONPATH`` (``run.spawn``): it is printed, and a kernel that imported the other
tree stops the run.

1. A cell writing one small file (a new name each round), approved with a scripted "y" over
   the kernel's stdin channel: from just before ``kc.execute()`` to the ``status: idle`` for
   that request, the input_request answered as soon as it comes. Budget: 1.1x.
2. A cell writing 1 MB (10,000 lines of 100 characters): from just before ``kc.execute()``
   to the arrival of its input_request (the question is ready); it is then declined. Budget:
   1.2x.

The kernels take turns one cell at a time, the first of each pair flipping every round, so
load on the machine falls on both alike. Times are min / median / p90 in ms; the ratio is
that of the medians, new / old. Each kernel's question is printed once as it ends (the two
trees phrase a question about a change with unseen parts differently) and any lines on the
kernels' stderr are reported.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

import zmq
from bench_kernel import Kernel, _spread, asked, descendants, stderr_notes, yes
from jupyter_client.kernelspec import KernelSpecManager
from loadgen import load_average

ROOT = Path(__file__).resolve().parents[1]
OLD_COMMIT = "24e7b59"
KERNEL = "lackpy"
TREES = ("old", "new")
KIT = "%kit read_file,write_file"  # sent once to each kernel, untimed
BUDGETS = {"write cell, 'y' -> idle": 1.1, "1 MB write -> question": 1.2}
CONFIG = '[sandbox]\napprove = "write"\n'


def small_write(index: int) -> str:
    return f"write_file('w{index}.txt', 'round {index}\\n')"


def big_write(index: int) -> str:
    return f"write_file('big{index}.txt', ('y' * 99 + '\\n') * 10000)"


def extract(commit: str, into: Path) -> Path:
    """``commit``'s tree written into ``into`` (``git archive``: no change to the repository)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit], check=True,
                             capture_output=True).stdout
    into.mkdir()
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def start(tree: str, old_root: Path, root: Path, context: zmq.Context, stack: ExitStack
          ) -> Kernel:
    """A lackpy kernel of ``tree`` ("old": its package from ``old_root``) in a workspace of
    its own under ``root``, ready, its kit holding write_file."""
    workspace = workspace_of(root, tree)
    (workspace / ".lackpy").mkdir(parents=True)
    (workspace / ".lackpy" / "config.toml").write_text(CONFIG)
    kernel = Kernel(KERNEL)
    if tree == "old":
        kernel.km.kernel_spec.env["PYTHONPATH"] = str(old_root)
    kernel.start(workspace, context, stack.enter_context((root / f"{tree}.stderr").open("w")))
    kernel.ready()
    asked(kernel.kc, KIT, lambda prompt: "n")
    return kernel


def workspace_of(root: Path, tree: str) -> Path:
    return root / f"ws-{tree}"


def package_root(kernel: Kernel) -> str:
    """The root of the lackpy_kernel package the kernel imported: the first entry of its
    sandbox worker's PYTHONPATH (``run.spawn`` puts the kernel's own package root there)."""
    for pid in descendants(kernel.pid)[1:]:
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        for entry in environ:
            if entry.startswith(b"PYTHONPATH="):
                return entry.split(b"=", 1)[1].decode().split(":")[0]
    raise RuntimeError(f"no process under kernel {kernel.pid} names its package")


def measure(kernels: dict[str, Kernel], root: Path, rounds: int, big_rounds: int
            ) -> tuple[dict[str, dict[str, list[float]]], dict[str, str]]:
    """The samples by metric and tree, and each tree's last question of a 1 MB write."""
    samples: dict[str, dict[str, list[float]]] = {m: {t: [] for t in TREES} for m in BUDGETS}
    prompts: dict[str, str] = {}
    metric_small, metric_big = BUDGETS
    for index in range(-1, max(rounds, big_rounds)):  # round -1 warms both up, untimed
        for tree in (TREES if index % 2 == 0 else TREES[::-1]):
            kernel = kernels[tree]
            if index < rounds:
                _, idle, _ = asked(kernel.kc, small_write(index), yes)
                landed = workspace_of(root, tree) / f"w{index}.txt"
                if landed.read_text() != f"round {index}\n":
                    raise RuntimeError(f"{tree}: the approved write did not land")
                if index >= 0:
                    samples[metric_small][tree].append(idle)
            if index < big_rounds:
                question, _, prompts[tree] = asked(kernel.kc, big_write(index), lambda _: "n")
                if index >= 0:
                    samples[metric_big][tree].append(question)
    return samples, prompts


def report(samples: dict[str, dict[str, list[float]]]) -> None:
    """Print min / median / p90 of each metric for both trees, the ratio of the medians
    (new / old) and the budget."""
    width = max(len(metric) for metric in samples) + 2
    print(f"{'(ms)':{width}}  {'old min / median / p90':>26}  {'new min / median / p90':>26}"
          f"  {'ratio':>6}  budget")
    for metric, by_tree in samples.items():
        old, new = (statistics.median(by_tree[tree]) for tree in TREES)
        ratio = new / old
        verdict = "within" if ratio <= BUDGETS[metric] else "OVER"
        print(f"{metric:{width}}  {_spread(by_tree['old'], True):>26}  "
              f"{_spread(by_tree['new'], True):>26}  {ratio:5.2f}x  {BUDGETS[metric]}x {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60, help="small write cells per tree")
    parser.add_argument("--big-rounds", type=int, default=20, help="1 MB write cells per tree")
    parser.add_argument("--old", default=OLD_COMMIT, help="the commit before the issue")
    args = parser.parse_args()
    if KERNEL not in KernelSpecManager().find_kernel_specs():
        sys.exit("no lackpy kernelspec: python -m lackpy_kernel install")
    print(f"python {sys.version.split()[0]}; old {args.old} against this working tree; "
          f"{args.rounds} write cells and {args.big_rounds} 1 MB writes each; {load_average()}")
    context = zmq.Context()
    context.setsockopt(zmq.RECONNECT_IVL, 10)
    with tempfile.TemporaryDirectory() as folder, ExitStack() as stack:
        root = Path(folder)
        old_root = extract(args.old, root / "old")
        kernels: dict[str, Kernel] = {}
        try:
            for tree in TREES:
                kernels[tree] = start(tree, old_root, root, context, stack)
                imported = package_root(kernels[tree])
                print(f"{tree} kernel imported lackpy_kernel from {imported}")
                if Path(imported) != (old_root if tree == "old" else ROOT):
                    raise RuntimeError(f"the {tree} kernel imported the wrong tree")
            samples, prompts = measure(kernels, root, args.rounds, args.big_rounds)
        finally:
            for kernel in kernels.values():
                kernel.shutdown()
            context.term()
        report(samples)
        for tree in TREES:
            print(f"{tree} tree's 1 MB question ends: ...{prompts[tree][-90:]!r}")
        for note in stderr_notes({tree: root / f"{tree}.stderr" for tree in TREES}):
            print(f"note: {note}")


if __name__ == "__main__":
    main()
