"""The kernel's magics: the notebook's magic families over the kernel's port."""

from __future__ import annotations

from lackpy_kernel.notebook.core import CoreMagics
from lackpy_kernel.session import LackpySession

from .agents import AgentMagics
from .output import CellOutput, KernelPort
from .plans import PlanMagics


class KernelMagics(CoreMagics, PlanMagics, AgentMagics):
    """The magics of one kernel, over its cell output and session (the plan and agent
    families are still the kernel's own until they move to ``lackpy_kernel.notebook``)."""

    def __init__(self, output: CellOutput, session: LackpySession) -> None:
        super().__init__(KernelPort(output, session), session)
        self.output = output
