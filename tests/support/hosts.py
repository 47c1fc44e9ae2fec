"""The two notebook hosts a magic runs in, driven alike through jupyter_client: the lackpy
kernel, and a Python kernel (ipykernel) with the lackpy extension loaded.

A test takes a :class:`Host` and sends it cells; what really differs between the hosts
(how a lackpy program is written in a cell, how a result reads, which exception a failed
run raises) is asked of the host, so one test states what both must do.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from pathlib import Path

from .kernel import KERNEL_NAME, Kernel, Outcome

HOSTS = ("lackpy", "python")
EXTENSION = "lackpy_kernel.extension"


@dataclass
class Host:
    """A running notebook host: ``kind`` is ``lackpy`` (the kernel) or ``python`` (ipykernel
    with the extension)."""

    kind: str
    kernel: Kernel

    @property
    def workspace(self) -> Path:
        return self.kernel.workspace

    def execute(self, code: str, timeout: float = 60) -> Outcome:
        return self.kernel.execute(code, timeout)

    def lackpy(self, program: str, kit: str | None = None) -> str:
        """The cell that runs ``program`` as lackpy (with ``kit``'s tools)."""
        if self.kind == "lackpy":
            return program if kit is None else f"%kit {kit}\n{program}"
        return "%%lackpy" + (f" --kit {kit}" if kit else "") + "\n" + program

    def text(self, outcome: Outcome) -> str:
        """The cell's result, a string, as its text (IPython shows a string's repr)."""
        shown = outcome.result()
        return shown if self.kind == "lackpy" else ast.literal_eval(shown)

    def failed_run(self, error_type: str) -> str:
        """The error name a failed plan or agent run ends its cell with: the run's own error
        in the kernel, the PlanStepError carrying it in Python (``raises-exception`` cells
        see lackpy's class)."""
        return error_type if self.kind == "lackpy" else "PlanStepError"

    def close(self) -> None:
        self.kernel.close()


def start_host(kind: str, workspace: Path, env: dict[str, str] | None = None) -> Host:
    """Start host ``kind`` in ``workspace`` (the extension loaded in a Python kernel whose
    IPython profile is a fresh one beside the workspace)."""
    if kind == "lackpy":
        return Host(kind, Kernel(workspace, KERNEL_NAME, env))
    profile = workspace.with_name(f"{workspace.name}-ipython")
    profile.mkdir(exist_ok=True)
    host = Host(kind, Kernel(workspace, "python3", {**(env or os.environ),
                                                    "IPYTHONDIR": str(profile)}))
    loaded = host.execute(f"%load_ext {EXTENSION}")
    assert loaded.status == "ok", loaded.messages
    return host
