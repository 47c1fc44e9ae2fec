"""Live validation's cost on the server side, against peers measured in the same run.

    python benchmarks/bench_lab.py [--quick]

A real Jupyter server with the lackpy server extension; a 100-line lackpy cell (tool calls,
loops, comprehensions, a forbidden name and an unknown one) is POSTed to /lackpy/validate as
the Lab extension does while a person types. Peers: ``validate()`` of the same cell in this
process (what the check itself costs) and ``GET /api/status`` (what a request to this server
costs doing nothing). The target is an answer within 50 ms.
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

from lackpy_kernel.lab.check import check_cell
from lackpy_kernel.lang import validate

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    repeat = 40 if parser.parse_args().quick else 200
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
    print(f"cell: {len(CELL.splitlines())} lines, {len(CELL)} characters; {os.cpu_count()} cores")
    for label, times in rows:
        print(_row(label, times))
    median = statistics.median(rows[0][1])
    print(f"target: {TARGET_MS:.0f} ms -> {'met' if median <= TARGET_MS else 'NOT met'}")


if __name__ == "__main__":
    main()
