"""The kernel's magics: the notebook's magic families over the kernel's port."""

from __future__ import annotations

from lackpy_kernel.notebook.magics import NotebookMagics
from lackpy_kernel.session import LackpySession

from .output import CellOutput, KernelPort


class KernelMagics(NotebookMagics):
    """The magics of one kernel, over its cell output and session."""

    def __init__(self, output: CellOutput, session: LackpySession) -> None:
        super().__init__(KernelPort(output, session), session)
