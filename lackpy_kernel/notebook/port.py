"""The output port: everything a magic asks of the notebook it runs in.

A magic family (``core.py``, ``plans.py``, ``agents.py``) is written once against
:class:`NotebookPort`; the Jupyter kernel implements it over IOPub
(``lackpy_kernel.kernel.output``), the IPython extension over IPython's display
(``lackpy_kernel.extension``). Where the two hosts really differ (the cell ``%delegate``
inserts, where a notebook variable lives) the family asks the port; it never forks.

A family ends a cell with an error by raising :class:`NotebookError` (an error name, a
message and the traceback's lines) or any ``LackpyError``; each host turns them into
its own error (the kernel's error reply; the exception itself in IPython).
"""

from __future__ import annotations

import shlex
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from lackpy_kernel.errors import LackpyError, UsageError
from lackpy_kernel.notebook.bundles import ErrorReport, program_error, uses_comment
from lackpy_kernel.run import ExecutionResult
from lackpy_kernel.run.plain import find_non_plain

__all__ = ["Bundle", "NotebookError", "NotebookPort", "ProgramCell", "StreamName", "no_input",
           "program_failure"]

Bundle = dict[str, Any]  # a MIME bundle: {"text/plain": ..., "text/html": ...}
StreamName = Literal["stdout", "stderr"]


class NotebookError(LackpyError):
    """Ends a cell with an error: ``ename``, ``evalue`` and the traceback's lines.

    ``cause`` is the lackpy exception behind it, when there is one: the IPython extension
    raises that (so ``raises-exception`` cells see lackpy's own classes), the kernel shows
    ``ename``/``evalue``/``traceback``.
    """

    def __init__(self, ename: str, evalue: str, traceback: list[str] | None = None, *,
                 cause: LackpyError | None = None) -> None:
        super().__init__(evalue)
        self.ename, self.evalue = ename, evalue
        self.traceback = traceback or [f"{ename}: {evalue}"]
        self.cause = cause

    def _render_traceback_(self) -> list[str]:
        return self.traceback  # what IPython shows for it

    @classmethod
    def of(cls, report: ErrorReport, *, cause: LackpyError | None = None) -> NotebookError:
        """The NotebookError that shows ``report``."""
        return cls(report.ename, report.evalue, report.traceback, cause=cause)


def program_failure(result: ExecutionResult, program: str) -> NotebookError:
    """The error a failed run of ``program`` ends its cell with (a validation error shows
    each line with a caret under the column)."""
    try:
        result.raise_for_error()
    except LackpyError as exc:
        return NotebookError.of(program_error(result, program), cause=exc)
    raise ValueError("program_failure takes a failed result")


@dataclass
class ProgramCell:
    """A program to insert as a cell, with what it needs to run as written there: the
    notebook variables it ``uses``, the ``kit`` and parameters chosen for it (``params``
    as values, ``param_texts`` as typed, ``NAME=VALUE``) and ``sandbox`` (False: run in
    the notebook's process)."""

    program: str
    uses: tuple[str, ...] = ()
    kit: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    param_texts: list[str] = field(default_factory=list)
    sandbox: bool | None = None

    def lackpy_cell(self) -> str:
        """The cell of a lackpy notebook: the variables it uses in a comment, then ``%kit``
        (when one was chosen) and ``%params`` lines, so that it runs as written, then the
        program."""
        lines = [uses_comment(self.uses)] if self.uses else []
        if self.kit:
            lines.append(f"%kit {self.kit}")
        if self.params:
            words = [f"{name}={value!r}" for name, value in self.params.items()]
            quoted = [shlex.quote(word) if any(c.isspace() for c in word) else word
                      for word in words]
            lines.append(f"%params {' '.join(quoted)}")
        return "\n".join([*lines, self.program])

    def python_cell(self) -> str:
        """The ``%%lackpy`` cell of a Python notebook: the magic with its options as typed,
        the notebook variables the program reads (it reads them when it runs), then the
        program."""
        words = ["%%lackpy"]
        if self.kit is not None:
            words += ["--kit", shlex.quote(self.kit)]
        for text in self.param_texts:
            words += ["--param", text]
        if self.sandbox is False:
            words.append("--no-sandbox")
        lines = [" ".join(words)]
        if self.uses:
            lines.append(uses_comment(self.uses))
        return "\n".join([*lines, self.program.rstrip("\n")])


class NotebookPort(Protocol):
    """What a magic may do to the notebook running it: the cell's output, the next cell,
    a question to the person, and the few questions whose answer depends on the host."""

    def stream(self, name: StreamName, text: str) -> None:
        """Write ``text`` to the cell's stdout or stderr."""

    def display(self, bundle: Bundle, display_id: str | None = None) -> None:
        """Show ``bundle`` under the cell; one shown with ``display_id`` can be updated."""

    def update_display(self, bundle: Bundle, display_id: str) -> None:
        """Replace what display ``display_id`` shows."""

    def live(self) -> bool:
        """Whether displays are updated in place (a notebook); a terminal shows them once."""

    def result(self, value: Any, *, shown: bool = False) -> None:
        """The magic's result: the kernel shows it as ``Out[n]``, IPython returns it.
        ``shown``: the cell's displays show it already, so the kernel sends nothing."""

    def next_input(self, text: str, *, replace: bool = False) -> None:
        """Put ``text`` in the next cell (or in this one, with ``replace``)."""

    def ask(self, prompt: str, *, password: bool = False) -> str:
        """The person's answer to ``prompt``; raises UsageError where the front end takes
        no input."""

    def program_cell(self, cell: ProgramCell) -> str:
        """The text of a cell that runs ``cell.program`` as written: a lackpy cell with
        ``%kit``/``%params`` lines in the kernel, a ``%%lackpy`` cell in a Python notebook."""

    async def variable(self, name: str) -> Any:
        """The value of the notebook's variable ``name`` (the session's in the kernel, the
        Python namespace's in IPython); raises UsageError when there is none."""

    def assign(self, name: str, value: Any) -> None:
        """Bind ``name`` to ``value`` in the notebook's own namespace (``%%lackpy --out``);
        raises UsageError where the host has none of its own."""

    def offers(self, magic: str) -> bool:
        """Whether this host offers lackpy's magic ``magic`` (the kernel has no ``%%lackpy``:
        its cells are lackpy; IPython keeps its own ``%who``, ``%reset``, ``%lsmagic``)."""

    def notebook_values(self, names: set[str] | frozenset[str] | None = None
                        ) -> Mapping[str, Any] | None:
        """The host's own notebook values a program may read as parameters (all, or those
        in ``names``): a Python notebook's plain-data variables; None in the kernel, whose
        variables are the session's."""


def plain_values(namespace: Mapping[str, Any], hidden: Collection[str],
                 names: set[str] | frozenset[str] | None = None) -> dict[str, Any]:
    """The values of a Python notebook's ``namespace`` a program may read: those of public
    names (not ``_``-prefixed, not in ``hidden``) holding plain data; all, or ``names``."""
    wanted = namespace.keys() if names is None else names & namespace.keys()
    return {name: namespace[name] for name in wanted
            if not name.startswith("_") and name not in hidden
            and find_non_plain(namespace[name]) is None}


def no_input(prompt: str, why: str = "this front end takes no input") -> UsageError:
    """The error for a question the front end cannot answer (``why``)."""
    return UsageError(f"{why}, so lackpy cannot ask {prompt!r}; "
                      "answer with the magic's options instead")
