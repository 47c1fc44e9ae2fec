"""A warm walled process per key (``[sandbox] reuse``) against pydantic-monty, one command:

    PYTHONPATH=. python benchmarks/bench_warm.py [--rounds N] [--reuse 1,10,100] [--code N]
                                                  [--no-kernel]

For each ``reuse`` given (1: a process per program, as before; 10: the default; 100), the
same programs as ``bench_round3.py --only monty`` (``1 + 1``; one tool call; a session's
programs, each using the variable the one before set; a 10,000-item loop), lackpy through
``LackpyService.run_program`` (one-shot runs of one ``session``; a session's programs:
``LackpySession.run``) with the sandbox on, Monty
in its pooled worker; the two take turns one call at a time, the order flipping each round,
first back to back and then spaced 20 ms apart (not timed). min / median / p90 of each, and
the ratio of the medians. Then, for each ``reuse``, ``find_definitions('APIResponse')``
through ``run_program`` end to end (the sandbox on, one ``session``) against ``grep -rn
APIResponse`` on the same 5,278-file tree (``bench_round3``'s), taking turns, ``--code``
samples each (0 leaves it out). Then Kibitzer's share: a read and a write through
``run_program`` against Monty's, with ``[kibitzer] enabled`` true and then false. Last,
unless ``--no-kernel``, the lackpy kernel against ipykernel (``bench_kernel.py``'s table:
``1 + 1``, run-all, read and write cells, an approved write, CPU per cell and PSS of the
process trees), then that table again with Kibitzer off in lackpy's workspaces: every figure
of the warm process's goals in one command. Needs the ``bench`` extra (``pip install -e
'.[bench]'``).
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench_kernel import kernel_tables
from bench_round3 import (
    MEMORY,
    TEXT,
    TIMEOUT_S,
    Sample,
    _program_table,
    _sdk_tree,
    alternate,
    header,
    row,
)
from loadgen import load_average

from lackpy_kernel.service import LackpyService

GAPS = (0.0, 0.020)  # back to back, then spaced 20 ms apart


def table(reuse: int, rounds: int, gap: float) -> None:
    """Print one table: lackpy with ``[sandbox] reuse = reuse`` against Monty."""
    spacing = "back to back" if not gap else f"spaced {gap * 1e3:.0f} ms apart"
    print(f"reuse = {reuse}, {spacing}, {rounds} samples each ({load_average()})")
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        (workspace / "a.txt").write_text(TEXT)
        (workspace / ".lackpy").mkdir()
        (workspace / ".lackpy" / "config.toml").write_text(f"[sandbox]\nreuse = {reuse}\n")
        asyncio.run(_program_table(workspace, rounds, 0, ("lackpy", "monty "), gap=gap,
                                   session="bench"))


def kibitzer_table(rounds: int) -> None:
    """Print a read and a write through ``run_program`` (``reuse = 10``, ``approve =
    "never"``, back to back) against Monty's, with Kibitzer's hooks on and then off: how
    much of a tool call's cost is Kibitzer's (its look at the program, its path guard,
    which the worker applies to the staged paths at the commit, its hearing of the
    calls)."""
    for enabled in ("true", "false"):
        print(f"[kibitzer] enabled = {enabled}: reuse = 10, back to back, {rounds} samples each "
              f"({load_average()})")
        with tempfile.TemporaryDirectory() as folder:
            workspace = Path(folder)
            (workspace / "a.txt").write_text(TEXT)
            (workspace / ".lackpy").mkdir()
            (workspace / ".lackpy" / "config.toml").write_text(
                f'[sandbox]\nreuse = 10\napprove = "never"\n\n[kibitzer]\nenabled = {enabled}\n')
            asyncio.run(_tool_rows(workspace, rounds))


async def _tool_rows(workspace: Path, rounds: int) -> None:
    """The read and write rows of ``kibitzer_table`` in ``workspace``."""
    from pydantic_monty import Monty

    names = ("lackpy", "monty ")
    tools = {"read_file": lambda path: (workspace / path).read_text(),
             "write_file": lambda path, text: (workspace / path).write_text(text)}
    turn = {"ours": 0, "theirs": 0}  # so that each write changes the file
    limits: Any = {"max_feed_duration_secs": TIMEOUT_S, "max_memory": MEMORY}
    with LackpyService(workspace) as service, Monty(min_processes=1) as pool:
        kit = service.resolve_kit(["read_file", "write_file"])

        def ours(program: str) -> Sample:
            async def run() -> object:
                turn["ours"] += 1
                result = await service.run_program(program.format(turn["ours"]), kit,
                                                   sandbox=True, session="bench")
                assert result.success, result.error
                return result.output
            return run

        def theirs(program: str) -> Sample:
            async def run() -> object:
                turn["theirs"] += 1
                with pool.checkout(limits=limits) as session:
                    return session.feed_run(program.format(turn["theirs"]), external_lookup=tools)
            return run

        print(header(names))
        for label, program in (("one tool call (read_file)", "read_file('a.txt')"),
                               ("a write (write_file)", "write_file('w.txt', '{}')")):
            print(row(label, *await alternate((ours(program), theirs(program)), rounds), names),
                  flush=True)


def code_table(workspace: Path, described: str, reuse: int, rounds: int) -> None:
    """Print ``find_definitions`` through ``run_program`` against ``grep -rn`` on the tree in
    ``workspace`` (``described``), with ``[sandbox] reuse = reuse``."""
    (workspace / ".lackpy" / "config.toml").write_text(f"[sandbox]\nreuse = {reuse}\n")
    print(f"reuse = {reuse}: find_definitions through run_program against grep -rn, "
          f"{described}, {rounds} samples each ({load_average()})")
    grep = ["grep", "-rn", "APIResponse", str(workspace / "sdk")]
    with LackpyService(workspace) as service:  # reads the config just written
        kit = service.resolve_kit(["find_definitions"])

        async def ours() -> object:
            result = await service.run_program("find_definitions('APIResponse')", kit,
                                               sandbox=True, session="bench")
            assert result.success, result.error
            return result.output

        async def theirs() -> object:
            return subprocess.run(grep, capture_output=True, check=True).stdout

        times = asyncio.run(alternate((ours, theirs), rounds))
    print(header(("lackpy", "grep  ")))
    print(row("find_definitions('APIResponse')", *times, ("lackpy", "grep  ")), flush=True)


def code_tables(sizes: list[int], rounds: int) -> None:
    """``code_table`` for each ``reuse`` in ``sizes``, on one tree made once."""
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        described = _sdk_tree(workspace / "sdk")
        (workspace / ".lackpy").mkdir()
        for reuse in sizes:
            code_table(workspace, described, reuse, rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=200, help="samples of each program (0: none)")
    parser.add_argument("--reuse", default="1,10,100")
    parser.add_argument("--code", type=int, default=30, help="samples of the code search")
    parser.add_argument("--kernel", action=argparse.BooleanOptionalAction, default=True,
                        help="then the kernel against ipykernel (bench_kernel.py's table)")
    args = parser.parse_args()
    try:
        import pydantic_monty
    except ImportError:
        sys.exit("pydantic-monty is not installed: pip install -e '.[bench]'")
    print(f"lackpy against Monty {pydantic_monty.__version__}")
    sizes = [int(each) for each in args.reuse.split(",")]
    for reuse in sizes if args.rounds else ():
        for gap in GAPS:
            table(reuse, args.rounds, gap)
    if args.code:
        code_tables(sizes, args.code)
    if args.rounds:
        kibitzer_table(args.rounds)
    if args.kernel:
        kernel_tables(quick=False, load=False)
        kernel_tables(quick=False, load=False, kibitzer=False)


if __name__ == "__main__":
    main()
