"""A plan whose Program step appends a line to ``log.txt``, run in its own process so a test
can kill it between the step's commit and its checkpoint.

    python -m tests.engines.commit_runner WORKSPACE (run|resume|approve) [--sandbox] [--delegate]

runs in WORKSPACE (whose config asks before file changes) with the Store ``plans.sqlite``
there: ``run`` starts the plan, ``resume`` resumes it, ``approve`` resumes it approving the
change it paused on. The ``append`` step spins for as many rounds as ``spin.txt`` says
before it ends; the ``hold`` step beside it, in the same band, waits while ``hold.txt``
exists, so the band's checkpoint waits too. With ``--delegate`` the ``append`` step is a
Delegate of ``APPEND_INTENT``, which a template in the workspace answers with the same
program. Prints the Envelope as JSON; exits 0 when the
plan finished, 1 for an error envelope.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from lackpy_kernel.config import load_config
from lackpy_kernel.engines import Delegate, Plan, Program, Step, Store
from lackpy_kernel.service import LackpyService

KEY = "appending"
APPEND = """old = read_file('log.txt')
write_file('log.txt', old + task + '\\n')
total = sum(range(int(read_file('spin.txt'))))
'appended ' + task"""
APPEND_INTENT = "append the task to the log"


def hold(task: str) -> str:
    """Waits while ``hold.txt`` exists, then passes ``task`` on."""
    while Path("hold.txt").exists():
        time.sleep(0.01)
    return task


def plan(workspace: Path, resume: bool, service: LackpyService, delegate: bool = False) -> Plan:
    """append and hold in one band, then a program that reads the log."""
    kit = ["read_file", "write_file"]
    append = Delegate(APPEND_INTENT) if delegate else Program(APPEND)
    return Plan(Step(append, name="append", parallel=True, writes="appended"),
                Step(hold, name="hold", parallel=True),
                Step(Program("read_file('log.txt')"), task="", name="show"),
                kit=kit, store=Store(workspace / "plans.sqlite"), checkpoint_key=KEY,
                resume=resume, service=service)


def main(argv: list[str]) -> int:
    workspace, mode = Path(argv[0]), argv[1]
    config = load_config(workspace)
    config.sandbox_enabled = "--sandbox" in argv
    with LackpyService(workspace, config) as service:
        envelope = plan(workspace, mode != "run", service, "--delegate" in argv).run(
            "line" if mode == "run" else None, approve=mode == "approve")
    print(json.dumps(envelope.to_dict()))
    return 0 if envelope.ok else 1


if __name__ == "__main__":
    os.chdir(sys.argv[1])
    sys.exit(main(sys.argv[1:]))
