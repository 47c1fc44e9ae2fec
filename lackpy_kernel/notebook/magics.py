"""Every magic family in one object, the one a host makes over its port and session."""

from __future__ import annotations

from lackpy_kernel.notebook.agents import AgentMagics
from lackpy_kernel.notebook.core import CoreMagics
from lackpy_kernel.notebook.plans import PlanMagics
from lackpy_kernel.notebook.usage import UsageMagics

__all__ = ["NotebookMagics"]


class NotebookMagics(CoreMagics, PlanMagics, AgentMagics, UsageMagics):
    """The notebook's magics: the core ones (``%delegate``, ``%kit``, ...), the plans'
    (``%%step``, ``%plan``), the agents' (``%agent``, ``%replan``) and ``%usage``."""
