"""The Lab extension's costs, against peers measured in the same run.

    python benchmarks/bench_lab.py [--quick]

1. Live validation on the server side: a real Jupyter server with the lackpy server
   extension; a 100-line lackpy cell (tool calls, loops, comprehensions, a forbidden name and
   an unknown one) is POSTed to /lackpy/validate as the Lab extension does while a person
   types. Peers: ``validate()`` of the same cell in this process (what the check itself
   costs) and ``GET /api/status`` (what a request to this server costs doing nothing). The
   target is an answer within 50 ms.
2. A cell's round trip with and without what the kernel does for the extension. On a cell's
   path the extension costs the kernel one thing: every execute_reply carries ``lackpy``
   metadata (the session's names, the kit's tools, kit and grade; ``finish_metadata``), which
   the extension reads for live validation and its status bar. (Its renderers' MIME types
   ride only on cells that show a trace or progress; the server extension adds one route,
   /lackpy/validate, and nothing on the kernel's channels.) So two lackpy kernels run side
   by side: the real one, and the same kernel whose ``finish_metadata`` is ipykernel's own
   (no ``lackpy`` metadata: a front end without the extension needs none). Each cell of
   ``bench_kernel.py`` (``1 + 1``, a read of a 340-byte file) is measured from
   ``execute()`` to its idle status, alternating the kernels (the order flips each round),
   in sessions that know 100 variables (the names the metadata lists).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lackpy_kernel.lab.check import check_cell
from lackpy_kernel.lang import validate

WITHOUT_FLAG = "--kernel-without-extension"  # bench_lab.py runs as that kernel's launcher
VARIABLES = "\n".join(f"value_{n} = {n}" for n in range(100))  # a session's names, once

TOOLS = ["read_file", "find_files", "find_definitions", "find_callers"]
BLOCK = [
    "files = find_files('**/*.py')",
    "sizes = {f: len(read_file(f)) for f in files if 'test' not in f}",
    "total = 0",
    "for name, size in sizes.items():",
    "    if size > 1000:",
    "        total += size",
    "defs = sort_by(find_definitions('main'), 'line')",
    "rows = [{'file': d['file'], 'line': d['line']} for d in defs]",
    "summary = {'count': len(rows), 'total': total}",
    "print(summary)",
]
CELL = "\n".join(BLOCK * 9 + ["text = open('x')", "later_name + 1", *BLOCK[:8]])
TARGET_MS = 50.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _server(root: str) -> tuple[subprocess.Popen[bytes], str, str]:
    port, token = _free_port(), secrets.token_hex(16)
    process = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "server", "--no-browser", "--allow-root",
         "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
         f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
         "--ServerApp.jpserver_extensions=lackpy_kernel.lab=True"],
        cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    for _ in range(240):
        try:
            urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5).close()
            return process, base, token
        except OSError:
            time.sleep(0.5)
    process.kill()
    raise RuntimeError("the Jupyter server did not start")


def _timed(fn: Callable[[], object], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return times


def _row(label: str, times: list[float]) -> str:
    p95 = sorted(times)[int(len(times) * 0.95) - 1]
    return f"{label:<46} median {statistics.median(times):7.2f} ms   p95 {p95:7.2f} ms"


def bench_validation(repeat: int) -> None:
    """Part 1: POST /lackpy/validate of the 100-line cell, beside its peers."""
    names = [*TOOLS, "earlier"]
    body = json.dumps({"source": CELL, "language": "lackpy", "names": names,
                       "tools": TOOLS}).encode()
    problems = check_cell(CELL, "lackpy", names, TOOLS)
    assert [p.line for p in problems] == [91, 92], problems
    with tempfile.TemporaryDirectory() as root:
        process, base, token = _server(root)
        try:
            def post() -> None:
                request = urllib.request.Request(f"{base}/lackpy/validate?token={token}",
                                                 data=body, method="POST")
                with urllib.request.urlopen(request, timeout=30) as reply:
                    assert len(json.loads(reply.read())["problems"]) == 2

            def status() -> None:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=30).close()

            post(), status()  # warm up
            rows = [
                ("POST /lackpy/validate, 100-line cell", _timed(post, repeat)),
                ("peer: GET /api/status (the server's floor)", _timed(status, repeat)),
                ("peer: validate() in-process, same cell",
                 _timed(lambda: validate(CELL, set(names), protected_names=TOOLS), repeat)),
                ("check_cell() in-process, same cell",
                 _timed(lambda: check_cell(CELL, "lackpy", names, TOOLS), repeat)),
            ]
        finally:
            process.terminate()
            process.wait(20)
    print(f"cell: {len(CELL.splitlines())} lines, {len(CELL)} characters; {os.cpu_count()} cores; "
          f"load average {' '.join(f'{load:.2f}' for load in os.getloadavg())} after")
    for label, times in rows:
        print(_row(label, times))
    median = statistics.median(rows[0][1])
    print(f"target: {TARGET_MS:.0f} ms -> {'met' if median <= TARGET_MS else 'NOT met'}")


def bench_round_trip(cells: int) -> None:
    """Part 2: cells' round trips in the lackpy kernel with and without the reply's
    ``lackpy`` metadata, alternating; the medians, their difference and the metadata's size."""
    import zmq
    from bench_kernel import TOOL_CELL, TRIVIAL, Kernel, round_trip  # benchmarks/ is on the path

    kinds = {"with": "lackpy", "without": "lackpy-without-extension"}
    codes = {"1 + 1": TRIVIAL, "read a.txt": TOOL_CELL["lackpy"]}
    times = {(kind, label): [] for kind in kinds for label in codes}
    context = zmq.Context()
    with tempfile.TemporaryDirectory() as folder:
        root = _round_trip_place(folder)
        kernels = {kind: Kernel(name) for kind, name in kinds.items()}
        try:
            for kind, kernel in kernels.items():
                kernel.start(root / "ws", context, (root / f"{kind}.stderr").open("w"))
                kernel.ready()
                round_trip(kernel.kc, VARIABLES)  # the names a notebook's session knows
                for code in codes.values():
                    round_trip(kernel.kc, code)  # warm up
            metadata = _reply_metadata(kernels["with"].kc)
            for index in range(cells):
                for kind in (list(kinds) if index % 2 == 0 else list(kinds)[::-1]):
                    for label, code in codes.items():
                        times[kind, label].append(round_trip(kernels[kind].kc, code)[1] * 1e3)
            assert "lackpy" not in _reply_metadata(kernels["without"].kc)  # the peer is bare
        finally:
            for kernel in kernels.values():
                kernel.shutdown()
            context.term()
    print(f"cell round trip (execute -> idle), lackpy kernel with and without the reply's "
          f"lackpy metadata ({len(json.dumps(metadata['lackpy']))} bytes of JSON: 100 "
          f"variables and the kit's tools), alternating, {cells} cells each; load average "
          f"{' '.join(f'{load:.2f}' for load in os.getloadavg())} after")
    for label in codes:
        with_, without = (times[kind, label] for kind in kinds)
        difference = statistics.median(with_) - statistics.median(without)
        print(_row(f"{label}: with", with_))
        print(_row(f"{label}: without", without))
        print(f"{label}: with - without = {difference:+.2f} ms (median); spread of 'without': "
              f"p25-p75 {_quartiles(without)}")


def _round_trip_place(folder: str) -> Path:
    """A workspace (``ws``, with a.txt) and a kernelspec ``lackpy-without-extension``
    (this file as its launcher) on JUPYTER_PATH; the folder."""
    root = Path(folder)
    (root / "ws" / ".lackpy").mkdir(parents=True)
    (root / "ws" / "a.txt").write_text("alpha beta gamma\n" * 20)
    (root / "ws" / ".lackpy" / "config.toml").write_text('[sandbox]\napprove = "never"\n')
    spec = root / "jupyter" / "kernels" / "lackpy-without-extension"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, os.path.abspath(__file__), WITHOUT_FLAG, "-f",
                 "{connection_file}"],
        "display_name": "lackpy without the extension's metadata", "language": "lackpy"}))
    os.environ["JUPYTER_PATH"] = os.pathsep.join(
        [str(root / "jupyter"), *filter(None, [os.environ.get("JUPYTER_PATH")])])
    return root


def _reply_metadata(kc: Any) -> dict[str, Any]:
    reply = kc.execute_interactive("1 + 1", timeout=60, output_hook=lambda message: None)
    return dict(reply["metadata"])


def _quartiles(times: list[float]) -> str:
    ordered = sorted(times)
    return f"{ordered[len(ordered) // 4]:.2f}-{ordered[len(ordered) * 3 // 4]:.2f} ms"


def _kernel_without_extension() -> None:
    """Run as the ``lackpy-without-extension`` kernel: the lackpy kernel, started as
    ``python -m lackpy_kernel`` starts it, with ipykernel's own ``finish_metadata``."""
    from ipykernel.kernelbase import Kernel as BaseKernel

    import lackpy_kernel.__main__ as launcher
    from lackpy_kernel.kernel import LackpyKernel

    LackpyKernel.finish_metadata = BaseKernel.finish_metadata  # type: ignore[method-assign]
    sys.argv.remove(WITHOUT_FLAG)
    del sys.path[0]  # this folder, which python puts first; the kernel's is its workspace
    launcher.main()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    quick = parser.parse_args().quick
    bench_validation(40 if quick else 200)
    bench_round_trip(20 if quick else 100)


if __name__ == "__main__":
    if WITHOUT_FLAG in sys.argv:
        _kernel_without_extension()
    else:
        main()
