"""A magic family: magics declared with :func:`~lackpy_kernel.notebook.declare.magic`,
written once against the notebook port, over one session.

Families compose by inheritance (``class Magics(CoreMagics, PlanMagics, AgentMagics)``);
a host makes one object of them over its port and session, and hands each magic's line
(and body) to :meth:`MagicFamily.run`.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from pathlib import Path

from lackpy_kernel.errors import UsageError
from lackpy_kernel.notebook.approval import asking
from lackpy_kernel.notebook.declare import Magic, declared_magics
from lackpy_kernel.notebook.port import NotebookPort
from lackpy_kernel.session import LackpySession
from lackpy_kernel.telemetry import span

__all__ = ["MagicFamily"]


class MagicFamily:
    """The magics of one notebook: they act on ``session`` and write to ``port``.

    ``declared`` maps each magic this host offers (see ``offered``) to its declaration
    and its handler. The session's programs ask the person through ``port`` before their
    file changes land (``notebook.approval``).
    """

    def __init__(self, port: NotebookPort, session: LackpySession) -> None:
        self.port = port
        self.session = session
        self.approval = session.approve = asking(port)
        self.service = session.service
        offered = self.offered(port.offers)
        self.declared = {name: (offered[name], handler)
                         for name, (_, handler) in declared_magics(self).items()
                         if name in offered}

    def close(self) -> None:
        """End the notebook: stop the session's worker, then the service's (its sandbox
        worker, tool sources and Kibitzer), even when the first fails."""
        try:
            self.session.close()
        finally:
            self.service.close()

    @property
    def workspace(self) -> Path:
        """The notebook's workspace folder."""
        return self.service.workspace

    @classmethod
    def offered(cls, offers: Callable[[str], bool]) -> dict[str, Magic]:
        """Each magic a host offers (``offers`` as ``NotebookPort.offers`` answers), with only
        the options it offers, in declaration order."""
        return {name: dataclasses.replace(declared, options=tuple(
                    o for o in declared.options if offers(f"{name} {o.flag}")))
                for name, (declared, _) in declared_magics(cls).items() if offers(name)}

    async def run(self, name: str, line: str, body: str | None = None) -> None:
        """Run magic ``name`` (a cell magic when ``body`` is given); ``%name?`` shows its help.

        Raises UsageError for an unknown magic or bad options, and whatever the magic
        raises (a LackpyError, or a NotebookError naming the error to show).
        """
        if name.endswith("?"):
            self.port.display({"text/plain": self._magic(name[:-1]).help()})
            return
        declared = self._magic(name)
        if declared.cell and body is None:
            raise UsageError(f"%%{name} is a cell magic: put it on the cell's first line, "
                             "with the program below")
        if not declared.cell and body is not None:
            raise UsageError(f"%{name} is a line magic; %lsmagic lists the cell magics")
        handler = self.declared[name][1]
        parsed = declared.parse(line)
        with span(f"lackpy.magic {'%%' if declared.cell else '%'}{name}"):
            result = handler(parsed) if body is None else handler(parsed, body)
            if inspect.isawaitable(result):
                await result

    def _magic(self, name: str) -> Magic:
        found = self.declared.get(name)
        if found is None:
            raise UsageError(f"unknown magic %{name}; %lsmagic lists them")
        return found[0]

    def help_for(self, name: str) -> str | None:
        """The help of magic ``name`` (for Shift-Tab), or None."""
        found = self.declared.get(name)
        return found[0].help() if found else None

    def names(self) -> list[str]:
        """``%name`` or ``%%name`` of every magic, in declaration order."""
        return [("%%" if m.cell else "%") + m.name for m, _ in self.declared.values()]
