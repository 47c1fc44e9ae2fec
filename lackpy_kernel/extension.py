"""The IPython extension: lackpy's notebook magics (``%%lackpy``, ``%delegate``, ``%kit``,
``%params``, ``%%create``, ``%providers``, ``%trace``, ``%%validate``, ``%%step``, ``%plan``,
``%agent``, ``%replan``) in an ordinary Python kernel. The magics are written once in
``lackpy_kernel.notebook``; this module parses IPython's calls and implements the port.

Load it with ``%load_ext lackpy_kernel`` (or ``%load_ext lackpy_kernel.extension``);
``%%lackpy?`` and ``%delegate?`` show each magic's options. Options come first;
everything after the first word that is not an option (or after ``--``) is the intent,
taken literally: no ``{var}`` or ``$var`` expansion. ``--param`` values are Python
literals where they parse as one, otherwise strings; quote a value that holds spaces
(``--param "xs=[1, 2]"``).

One :class:`LackpyService` serves each shell, for the folder that was the current
directory when the extension was loaded. Magics run inside ipykernel's running event
loop, so the service's coroutines run on a background event-loop thread
(``lackpy_kernel.engines.loop.LoopThread``), never through ``asyncio.run``. Failures raise lackpy's own
exceptions (``lackpy_kernel.errors``: LackpyValidationError, LackpyRuntimeError and its
limits, GenerationError, KitError, UsageError), so nbval and ``raises-exception`` tags
see them, and IPython shows them without the extension's frames.
"""

from __future__ import annotations

import atexit
import functools
import getpass
import logging
import os
import sys
import threading
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, TypeVar

from IPython.core.error import StdinNotImplementedError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, magics_class, no_var_expand
from IPython.display import display

from lackpy_kernel.engines.loop import LoopThread, WaitingThread
from lackpy_kernel.errors import (
    GenerationError,
    LackpyError,
    LackpyRuntimeError,
    LackpyValidationError,
    UsageError,
)
from lackpy_kernel.notebook import Bundle, NotebookError, ProgramCell, StreamName, no_input
from lackpy_kernel.notebook.core import MagicOptions, parse_magic_options
from lackpy_kernel.notebook.declare import Magic
from lackpy_kernel.notebook.magics import NotebookMagics
from lackpy_kernel.notebook.port import plain_values
from lackpy_kernel.service import LackpyService
from lackpy_kernel.session import LackpySession

__all__ = [
    "LackpyDelegateError",
    "LackpyError",
    "LackpyMagics",
    "MagicOptions",
    "LackpyRuntimeError",
    "LackpyUsageError",
    "LackpyValidationError",
    "load_ipython_extension",
    "parse_magic_options",
    "unload_ipython_extension",
]

T = TypeVar("T")
log = logging.getLogger(__name__)

CANCEL_GRACE_S = 10.0
# IPython's own magics of the same name stay; %delegate inserts the next cell only
IPYTHON_LACKS = frozenset({"who", "reset", "lsmagic", "delegate --replace"})


# The extension's errors are lackpy's own (see lackpy_kernel.errors); these names stay
# for code written against earlier versions.
LackpyUsageError = UsageError
LackpyDelegateError = GenerationError


# -- the magics -------------------------------------------------------------------


@magics_class
class LackpyMagics(Magics):
    """The notebook's magics in an IPython shell, over one service for the shell's workspace.

    The notebook's magics (``%%lackpy``, ``%delegate``, ``%kit``, ``%%step``, ``%plan``,
    ``%agent``, ...; see :mod:`lackpy_kernel.notebook.magics`) run on the extension's loop
    thread against an :class:`IPythonPort`; IPython keeps its own ``%who``, ``%reset`` and
    ``%lsmagic``.
    """

    def __init__(self, shell: InteractiveShell,
                 workspace: str | os.PathLike[str] | None = None) -> None:
        super().__init__(shell)
        self.workspace = os.fspath(workspace) if workspace is not None else os.getcwd()
        self.service = LackpyService(self.workspace)
        self.port = IPythonPort(shell)
        self.core = NotebookMagics(self.port, LackpySession(self.service))
        for name, (declared, _) in self.core.declared.items():
            self.magics["cell" if declared.cell else "line"][name] = self._host(declared)
        self._loop = LoopThread("lackpy-extension-loop", grace=CANCEL_GRACE_S)
        self._closed = False

    def close(self) -> None:
        """Stop the sandbox worker and the loop thread. Safe to call twice."""
        if self._closed:
            return
        try:
            self._call(self.core.aclose())  # the remote runs' displays stop following them
            self.core.close()
        finally:
            self._closed = True
            self._loop.close()

    def _host(self, declared: Magic) -> Callable[..., Any]:
        """The IPython magic that runs ``declared`` on the loop thread and returns its result."""
        def run(line: str, cell: str | None = None) -> Any:
            __tracebackhide__ = True
            self.port.value = None
            try:
                self._call(self.core.run(declared.name, line, cell))
            except NotebookError as error:
                raise _raised(error) from None
            return self.port.value

        run.__doc__ = declared.help()  # what %name? shows
        return no_var_expand(run)  # intents are taken literally

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._closed:
            coro.close()
            raise LackpyError("the lackpy extension was unloaded; run %load_ext lackpy_kernel again")
        self.port.waiting = WaitingThread()
        try:
            return self._loop.run(coro, serve=self.port.waiting)
        finally:
            self.port.waiting = None


class IPythonPort:
    """The notebook port over IPython's display, for one magic's call.

    Streams go to ``sys.stdout``/``sys.stderr``, displays through ``IPython.display``; the
    magic's result is kept in ``value`` for the magic to return (IPython shows it as
    ``Out[n]``). Its methods may be called from the extension's loop thread: ipykernel
    sends what they show to the cell whose magic started the call.
    """

    def __init__(self, shell: InteractiveShell) -> None:
        self.shell = shell
        self.value: Any = None
        self.waiting: WaitingThread | None = None  # the magic's thread, while it runs
        self._handles: dict[str, Any] = {}

    def stream(self, name: StreamName, text: str) -> None:
        out = sys.stdout if name == "stdout" else sys.stderr
        out.write(text)
        out.flush()

    def display(self, bundle: Bundle, display_id: str | None = None) -> None:
        if display_id is None:
            display(bundle, raw=True)
        else:
            self._handles[display_id] = display(bundle, raw=True, display_id=display_id)

    def update_display(self, bundle: Bundle, display_id: str) -> None:
        handle = self._handles.get(display_id)
        if handle is not None:
            handle.update(bundle, raw=True)

    def live(self) -> bool:
        return getattr(self.shell, "kernel", None) is not None

    def result(self, value: Any, *, shown: bool = False) -> None:
        self.value = value

    def next_input(self, text: str, *, replace: bool = False) -> None:
        self.shell.set_next_input(text, replace=replace)

    def ask(self, prompt: str, *, password: bool = False) -> str:
        """The person's answer to ``prompt``, asked with ``input()`` on the thread that runs
        the magic (from another thread, through ``WaitingThread.call``), where the stop button
        interrupts it: the cell stops, and the asking thread gets KeyboardInterrupt (as it
        does when the magic ends before the question is asked)."""
        waiting = self.waiting
        if waiting is None or threading.current_thread() is threading.main_thread():
            return self._input(prompt, password)
        return waiting.call(lambda: self._input(prompt, password))

    @staticmethod
    def _input(prompt: str, password: bool) -> str:
        try:
            return getpass.getpass(prompt) if password else input(prompt)
        except (EOFError, StdinNotImplementedError):
            raise no_input(prompt) from None

    def program_cell(self, cell: ProgramCell) -> str:
        return cell.python_cell()

    async def variable(self, name: str) -> Any:
        if name not in self.shell.user_ns:
            raise UsageError(f"no variable {name!r} in the notebook")
        return self.shell.user_ns[name]

    def assign(self, name: str, value: Any) -> None:
        self.shell.user_ns[name] = value

    def offers(self, magic: str) -> bool:
        return magic not in IPYTHON_LACKS

    def notebook_values(self, names: set[str] | frozenset[str] | None = None
                        ) -> Mapping[str, Any]:
        return plain_values(self.shell.user_ns, set(self.shell.user_ns_hidden), names)


def _raised(error: NotebookError) -> LackpyError:
    """What IPython raises for ``error``: the lackpy exception behind it (a validation
    error showing each line with a caret under the column), else a NotebookError whose
    class bears the error's name."""
    if error.cause is None:
        return _named(error.ename)(error.ename, error.evalue, error.traceback)
    if isinstance(error.cause, LackpyValidationError):
        error.cause._render_traceback_ = lambda: error.traceback  # type: ignore[method-assign]
    return error.cause


@functools.cache
def _named(ename: str) -> type[NotebookError]:
    return type(ename, (NotebookError,), {"__module__": __name__})


# -- loading ------------------------------------------------------------------------


def _loaded(ipython: InteractiveShell) -> LackpyMagics | None:
    found = ipython.magics_manager.registry.get(LackpyMagics.__name__)
    return found if isinstance(found, LackpyMagics) else None


def load_ipython_extension(ipython: InteractiveShell) -> None:
    """Register ``%%lackpy`` and ``%delegate`` on ``ipython`` (``%load_ext`` calls this)."""
    if _loaded(ipython) is not None:
        return
    magics = LackpyMagics(ipython)
    ipython.register_magics(magics)
    atexit.register(magics.close)


def unload_ipython_extension(ipython: InteractiveShell) -> None:
    """Remove the magics and stop the service's sandbox worker and loop thread."""
    magics = ipython.magics_manager.registry.pop(LackpyMagics.__name__, None)
    if not isinstance(magics, LackpyMagics):
        return
    for kind, names in magics.magics.items():
        table = ipython.magics_manager.magics[kind]
        for name, handler in names.items():
            if table.get(name) is handler or getattr(table.get(name), "__self__", None) is magics:
                del table[name]
    atexit.unregister(magics.close)
    magics.close()
