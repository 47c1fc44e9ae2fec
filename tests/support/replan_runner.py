"""A ReplanEngine run in its own process, for the test that kills it and resumes.

    python -m tests.support.replan_runner WORKSPACE KEY [--resume]

runs in WORKSPACE with the Store ``replan.sqlite`` there. The planner appends ``plan N`` to
``journal.txt`` each time it is asked for round N; the tool ``mark`` appends ``start WORD``,
and when ``block.txt`` holds WORD it waits until ``release.txt`` exists. Rounds: read_file
and mark('one') in parallel; mark('two'); a lackpy program counting lines; done. Prints the
Envelope as JSON; exits 0 when it finished, 1 for an error envelope.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from lackpy_kernel.engines import Agent, PlanRound, ReplanEngine, Store, Task
from lackpy_kernel.service import LackpyService


def _journal(line: str) -> None:
    with open("journal.txt", "a", encoding="utf-8") as journal:
        journal.write(line + "\n")


def mark(word: str) -> str:
    """Journal the word, wait when told to, and shout it."""
    _journal(f"start {word}")
    blocked = Path("block.txt")
    if blocked.exists() and blocked.read_text().strip() == word:
        while not Path("release.txt").exists():
            time.sleep(0.01)
    return word.upper()


def planner(task: str, history: list[dict]) -> PlanRound:
    """The rounds of the module doc."""
    _journal(f"plan {len(history) + 1}")
    rounds = [
        [Task("read_file", {"path": "notes.txt"}, parallel=True),
         Task("mark", {"word": "one"}, parallel=True)],
        [Task("mark", {"word": "two"})],
        [Task("lackpy", {"program": "len(read_file('notes.txt').splitlines())"})],
    ]
    if len(history) < len(rounds):
        return PlanRound(rounds[len(history)])
    outputs = [task["output"] for record in history for task in record["tasks"]]
    return PlanRound(done=True, answer=outputs)


def main(argv: list[str]) -> int:
    workspace, key = Path(argv[0]), argv[1]
    with LackpyService(workspace) as service:
        engine = ReplanEngine(store=Store(workspace / "replan.sqlite"), checkpoint_key=key,
                              resume="--resume" in argv)
        envelope = Agent(engine, tools=[planner, "read_file", mark], service=service).run(
            "count and mark")
    print(json.dumps(envelope.to_dict()))
    return 0 if envelope.ok else 1


if __name__ == "__main__":
    os.chdir(sys.argv[1])
    sys.exit(main(sys.argv[1:]))
