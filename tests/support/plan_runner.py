"""A plan run in its own process, for the tests that kill it or race two of them.

    python -m tests.support.plan_runner WORKSPACE KEY (pipeline|chain) [--resume]

runs in WORKSPACE with the Store ``plans.sqlite`` there. Each Python step appends
``start NAME`` to ``journal.txt`` when it begins; a step named in ``block.txt`` then waits
until ``release.txt`` exists. The program step ``count`` first writes ``inside-count.txt``
and then spins for as many rounds as ``spin.txt`` says. Prints the Envelope as JSON; exits
0 when it finished, 1 for an error envelope, 3 for ConcurrentPlanRunError, 4 for
PlanResumeError.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from lackpy_kernel.engines import (
    ConcurrentPlanRunError,
    Plan,
    PlanResumeError,
    Program,
    Step,
    Store,
)
from lackpy_kernel.service import LackpyService

CHAIN_LENGTH = 12
WRITE_KIT = ["read_file", "write_file"]


def journaled(name: str, work):
    """A step that journals its start, waits when it is told to block, then does ``work``."""

    def step(task):
        with open("journal.txt", "a", encoding="utf-8") as journal:
            journal.write(f"start {name}\n")
        blocked = Path("block.txt")
        if blocked.exists() and blocked.read_text().strip() == name:
            while not Path("release.txt").exists():
                time.sleep(0.01)
        return work(task)

    step.__name__ = name
    return step


def pipeline() -> list[Step]:
    """read, a band (a program in the sandbox and a callable), a callable, a program."""
    spinning = Program("rounds = int(read_file('spin.txt'))\nwrite_file('inside-count.txt', 'x')\n"
                       "total = sum(range(rounds))\nlen(task.splitlines())", kit=WRITE_KIT)
    return [
        Step(Program("read_file(task)"), name="fetch", writes="fetched"),
        Step(spinning, name="count", parallel=True, writes="count"),
        Step(journaled("upper", str.upper), parallel=True, writes="upper"),
        Step(journaled("mark", lambda text: f"marked {len(text)}"), writes="marked"),
        Step(Program("write_file('out.txt', task)\ntask", kit=WRITE_KIT), name="save",
             writes="saved"),
    ]


def chain() -> list[Step]:
    """Twelve short Python steps, each writing its own key."""

    def bump(number: int):
        def work(task):
            time.sleep(0.03)
            return task + number

        return work

    return [Step(journaled(f"s{n}", bump(n)), writes=f"w{n}") for n in range(1, CHAIN_LENGTH + 1)]


def main(argv: list[str]) -> int:
    workspace, key, shape = Path(argv[0]), argv[1], argv[2]
    resume = "--resume" in argv
    task = {"pipeline": "notes.txt", "chain": 0}[shape]
    steps = {"pipeline": pipeline, "chain": chain}[shape]()
    with LackpyService(workspace) as service:
        plan = Plan(*steps, kit=WRITE_KIT, store=Store(workspace / "plans.sqlite"),
                    checkpoint_key=key, resume=resume, service=service)
        try:
            envelope = plan.run(None if resume else task)
        except ConcurrentPlanRunError as exc:
            print(f"ConcurrentPlanRunError: {exc}", file=sys.stderr)
            return 3
        except PlanResumeError as exc:
            print(f"PlanResumeError: {exc}", file=sys.stderr)
            return 4
    print(json.dumps(envelope.to_dict()))
    return 0 if envelope.ok else 1


if __name__ == "__main__":
    os.chdir(sys.argv[1])
    sys.exit(main(sys.argv[1:]))
