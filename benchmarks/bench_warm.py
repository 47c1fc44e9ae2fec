"""A warm walled process per key (``[sandbox] reuse``) against pydantic-monty, one command:

    PYTHONPATH=. python benchmarks/bench_warm.py [--rounds N] [--reuse 1,10,100]

For each ``reuse`` given (1: a process per program, as before; 10: the default; 100), the
same programs as ``bench_round3.py --only monty`` (``1 + 1``; one tool call; a session's
programs, each using the variable the one before set; a 10,000-item loop), lackpy through
``LackpyService.run_program`` (one-shot runs of one ``session``; a session's programs:
``LackpySession.run``) with the sandbox on, Monty
in its pooled worker; the two take turns one call at a time, the order flipping each round,
first back to back and then spaced 20 ms apart (not timed). min / median / p90 of each, and
the ratio of the medians. Needs the ``bench`` extra (``pip install -e '.[bench]'``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench_round3 import LOOP, MEMORY, TEXT, TIMEOUT_S, Sample, _session_pair, alternate, header, row
from loadgen import load_average

from lackpy_kernel.service import LackpyService
from lackpy_kernel.session import LackpySession

GAPS = (0.0, 0.020)  # back to back, then spaced 20 ms apart


async def table(workspace: Path, reuse: int, rounds: int, gap: float) -> None:
    """Print one table: lackpy with ``[sandbox] reuse = reuse`` against Monty."""
    from pydantic_monty import Monty

    (workspace / ".lackpy").mkdir(exist_ok=True)
    (workspace / ".lackpy" / "config.toml").write_text(f"[sandbox]\nreuse = {reuse}\n")
    names = ("lackpy", "monty ")
    spacing = "back to back" if not gap else f"spaced {gap * 1e3:.0f} ms apart"
    print(f"reuse = {reuse}, {spacing}, {rounds} samples each (load {load_average()})")
    print(header(names))

    def read_file(path: str) -> str:  # Monty's tool: a host function
        return (workspace / path).read_text()

    limits: Any = {"max_feed_duration_secs": TIMEOUT_S, "max_memory": MEMORY}
    with LackpyService(workspace) as service, Monty(min_processes=1) as pool:
        kit = service.resolve_kit(["read_file"])

        def ours(program: str) -> Sample:
            async def run() -> object:
                result = await service.run_program(program, kit, sandbox=True, session="bench")
                assert result.success, result.error
                return result.output
            return run

        def theirs(program: str) -> Sample:
            async def run() -> object:
                with pool.checkout(limits=limits) as session:
                    return session.feed_run(program, external_lookup={"read_file": read_file})
            return run

        for label, program in (("1 + 1", "1 + 1"), ("one tool call (read_file)",
                                                     "read_file('a.txt')")):
            print(row(label, *await alternate((ours(program), theirs(program)), rounds, gap),
                      names), flush=True)
        session = LackpySession(service, kit)
        try:
            with pool.checkout(limits=limits) as monty_session:
                print(row("a session's programs", *await alternate(
                    _session_pair(session, monty_session), rounds, gap), names), flush=True)
        finally:
            session.close()
        print(row("a 10,000-item loop", *await alternate((ours(LOOP), theirs(LOOP)), rounds,
                                                          gap), names), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--reuse", default="1,10,100")
    args = parser.parse_args()
    try:
        import pydantic_monty
    except ImportError:
        sys.exit("pydantic-monty is not installed: pip install -e '.[bench]'")
    print(f"lackpy against Monty {pydantic_monty.__version__}")
    for reuse in (int(each) for each in args.reuse.split(",")):
        for gap in GAPS:
            with tempfile.TemporaryDirectory() as folder:
                workspace = Path(folder)
                (workspace / "a.txt").write_text(TEXT)
                asyncio.run(table(workspace, reuse, args.rounds, gap))


if __name__ == "__main__":
    main()
