"""The IPython extension: ``%%lackpy``, ``%delegate``, ``%%step``, ``%plan``, ``%agent`` and
``%replan`` in an ordinary Python kernel.

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
import getpass
import inspect
import keyword
import logging
import os
import shlex
import sys
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from IPython.core.error import StdinNotImplementedError
from IPython.core.magic import Magics, magics_class, no_var_expand
from IPython.display import display

from lackpy_kernel.engines.loop import LoopThread
from lackpy_kernel.errors import (
    GenerationError,
    LackpyError,
    LackpyRuntimeError,
    LackpyValidationError,
    UsageError,
)
from lackpy_kernel.infer import GenerationEvent
from lackpy_kernel.lang import free_names
from lackpy_kernel.notebook import Bundle, NotebookError, ProgramCell, StreamName, no_input
from lackpy_kernel.notebook.agents import AgentMagics
from lackpy_kernel.notebook.bundles import (
    GenerationProgress,
    delegation_status,
    held_message,
    trace_bundle,
    uses_comment,
    validation_error,
)
from lackpy_kernel.notebook.declare import (
    DELEGATE_OPTIONS,
    DELEGATE_SUMMARY,
    KIT,
    PARAM,
    Magic,
    Option,
    declared_magics,
    magic,
)
from lackpy_kernel.notebook.plans import PlanMagics
from lackpy_kernel.notebook.syntax import parse_param
from lackpy_kernel.run import ExecutionResult
from lackpy_kernel.run.plain import find_non_plain
from lackpy_kernel.service import Delegation, LackpyService
from lackpy_kernel.session import LackpySession

__all__ = [
    "LackpyDelegateError",
    "LackpyError",
    "LackpyMagics",
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
IPYTHON_OWN = frozenset({"who", "reset", "lsmagic"})  # IPython's magics of the same name stay


# The extension's errors are lackpy's own (see lackpy_kernel.errors); these names stay
# for code written against earlier versions.
LackpyUsageError = UsageError
LackpyDelegateError = GenerationError


# -- options -------------------------------------------------------------------

OUT = Option("--out", "value", "also assign the program's output to this Python variable", "NAME")
NO_SANDBOX = Option("--no-sandbox", "flag", "run in this process, without time or memory limits")
LACKPY_SUMMARY = ("validate the cell as a lackpy program and run it (in the sandbox, unless "
                  "--no-sandbox); its last expression is the cell's result")


@dataclass
class MagicOptions:
    """What a magic's line said. ``*_text`` keep the words as typed, to write them back."""

    kit: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    out: str | None = None
    sandbox: bool | None = None
    run: bool = False
    yes: bool = False
    rest: str = ""
    kit_text: str | None = None
    param_texts: list[str] = field(default_factory=list)


def parse_magic_options(line: str, magic: str = "delegate") -> MagicOptions:
    """Read ``line``'s leading options; the text after them is ``rest``, verbatim.

    ``magic`` (``"lackpy"`` or ``"delegate"``) picks the options allowed; raises
    UsageError (also known as LackpyUsageError) for options that cannot be read.
    """
    declared = _declared(magic)
    parsed = declared.parse(line)
    given = parsed.options
    options = MagicOptions(
        kit=given.get("--kit"),
        params=dict(parse_param(raw) for raw in given.get("--param", [])),
        out=given.get("--out"),
        sandbox=False if given.get("--no-sandbox") else None, run=bool(given.get("--run")),
        yes=bool(given.get("--yes")), rest=parsed.rest, param_texts=list(given.get("--param", [])),
    )
    if options.yes and not options.run:
        raise LackpyUsageError("--yes approves running the program; use it with --run")
    if options.kit is not None:
        options.kit_text = shlex.quote(options.kit)
    if options.out is not None and (not options.out.isidentifier() or keyword.iskeyword(options.out)):
        raise LackpyUsageError(f"--out needs a variable name, not {options.out!r}; "
                               f"usage: {declared.usage}")
    return options


# -- the magics -------------------------------------------------------------------


@magics_class
class LackpyMagics(Magics):
    """``%%lackpy`` and ``%delegate``, over one service for the shell's workspace.

    Each magic is declared once with :func:`lackpy_kernel.notebook.declare.magic`; IPython learns
    the names from those declarations, and ``%delegate?`` shows their help.
    """

    def __init__(self, shell: Any, workspace: str | os.PathLike[str] | None = None) -> None:
        super().__init__(shell)
        for name, (declared, handler) in declared_magics(self).items():
            self.magics["cell" if declared.cell else "line"][name] = handler
        self.workspace = os.fspath(workspace) if workspace is not None else os.getcwd()
        self.service = LackpyService(self.workspace)
        self._loop = LoopThread("lackpy-extension-loop", grace=CANCEL_GRACE_S)
        self._closed = False
        self.port = IPythonPort(shell)
        self.families = _Families(self.port, LackpySession(self.service))
        for name, (declared, handler) in self.families.declared.items():
            self.magics["cell" if declared.cell else "line"][name] = self._host(declared, handler)

    def close(self) -> None:
        """Stop the sandbox worker and the loop thread. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            self.service.close()
        finally:
            self._loop.close()

    @magic("lackpy", LACKPY_SUMMARY, options=(KIT, PARAM, OUT, NO_SANDBOX), cell=True)
    @no_var_expand
    def lackpy(self, line: str, cell: str) -> Any:
        __tracebackhide__ = True
        options = parse_magic_options(line, "lackpy")
        if options.rest:
            raise LackpyUsageError(f"%%lackpy takes only options, not {options.rest!r}; the "
                                   f"program goes in the cell; usage: {_declared('lackpy').usage}")
        resolved = self.service.resolve_kit(options.kit)
        unbound = free_names(cell) - set(resolved.callables) - set(options.params)
        params = {**self._notebook_values(unbound), **options.params}
        result = self._call(self.service.run_program(cell, resolved, params,
                                                     sandbox=options.sandbox))
        _show_run(result, cell)
        if options.out is not None:
            self.shell.user_ns[options.out] = result.output
        return result.output

    @magic("delegate", f"{DELEGATE_SUMMARY}; with --run it also runs here and its output is "
           "the result", options=(*DELEGATE_OPTIONS, NO_SANDBOX), rest="INTENT")
    @no_var_expand
    def delegate(self, line: str) -> Any:
        __tracebackhide__ = True
        options = parse_magic_options(line, "delegate")
        if not options.rest:
            raise LackpyUsageError(f"%delegate needs an intent, after its options; "
                                   f"usage: {_declared('delegate').usage}")
        progress = self._live_progress(f"delegating: {options.rest} ...")
        try:
            delegation = self._call(self.service.delegation(
                options.rest, options.kit, options.params, run=options.run, ask=not options.yes,
                sandbox=options.sandbox, variables=self._notebook_values(), on_event=progress))
        except GenerationError:
            _status("no provider could write a program\n")
            raise
        finally:
            progress.close()
        _status(delegation_status(delegation) + "\n")
        self.shell.set_next_input(_lackpy_cell(delegation, options), replace=False)
        if delegation.held:
            print(f"lackpy: {held_message(delegation)}", file=sys.stderr)
        if delegation.result is None:
            return None
        return _show_run(delegation.result, delegation.program).output

    def _live_progress(self, title: str) -> _LiveProgress:
        """A display of the generation's progress, updated in place where a front end
        replaces displays (a notebook); a terminal gets the title as a status line."""
        return _LiveProgress(title, live=getattr(self.shell, "kernel", None) is not None)

    def _notebook_values(self, names: set[str] | frozenset[str] | None = None) -> dict[str, Any]:
        """The Python notebook's variables a lackpy program may use (all, or ``names``):
        public names holding plain data, which programs then see as parameters."""
        namespace = self.shell.user_ns
        hidden = set(self.shell.user_ns_hidden)
        wanted = namespace.keys() if names is None else names & namespace.keys()
        return {name: namespace[name] for name in wanted
                if not name.startswith("_") and name not in hidden
                and find_non_plain(namespace[name]) is None}

    # -- %%step, %plan, %agent, %replan: the shared families, on the loop thread ---------

    def _host(self, declared: Magic, handler: Callable[..., Any]) -> Callable[..., Any]:
        """The IPython magic that runs ``handler`` on the loop thread and returns its result."""
        def run(line: str, cell: str | None = None) -> Any:
            __tracebackhide__ = True
            self.port.value = None
            parsed = declared.parse(line)
            try:
                self._call(_awaited(handler(parsed) if cell is None else handler(parsed, cell)))
            except NotebookError as error:
                raise (error.cause or error) from None
            return self.port.value

        run.__doc__ = declared.help()  # what %name? shows
        return no_var_expand(run)  # intents are taken literally

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._closed:
            coro.close()
            raise LackpyError("the lackpy extension was unloaded; run %load_ext lackpy_kernel again")
        return self._loop.run(coro)


class IPythonPort:
    """The notebook port over IPython's display, for one magic's call.

    Streams go to ``sys.stdout``/``sys.stderr``, displays through ``IPython.display``; the
    magic's result is kept in ``value`` for the magic to return (IPython shows it as
    ``Out[n]``). Its methods may be called from the extension's loop thread: ipykernel
    sends what they show to the cell whose magic started the call.
    """

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.value: Any = None
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
        try:
            return getpass.getpass(prompt) if password else input(prompt)
        except (EOFError, StdinNotImplementedError):
            raise no_input(prompt) from None

    def program_cell(self, cell: ProgramCell) -> str:
        """A ``%%lackpy`` cell with its options as typed, the notebook variables the
        program reads (it reads them from the notebook when it runs), then the program."""
        words = ["%%lackpy"]
        if cell.kit is not None:
            words += ["--kit", shlex.quote(cell.kit)]
        for text in cell.param_texts:
            words += ["--param", text]
        if cell.sandbox is False:
            words.append("--no-sandbox")
        lines = [" ".join(words)]
        if cell.uses:
            lines.append(uses_comment(cell.uses))
        return "\n".join([*lines, cell.program.rstrip("\n")])

    async def variable(self, name: str) -> Any:
        if name not in self.shell.user_ns:
            raise UsageError(f"no variable {name!r} in the notebook")
        return self.shell.user_ns[name]

    def assign(self, name: str, value: Any) -> None:
        self.shell.user_ns[name] = value

    def offers(self, magic: str) -> bool:
        return magic not in IPYTHON_OWN

    def notebook_values(self, names: set[str] | frozenset[str] | None = None
                        ) -> Mapping[str, Any]:
        """Public names holding plain data (all, or ``names``)."""
        namespace = self.shell.user_ns
        hidden = set(self.shell.user_ns_hidden)
        wanted = namespace.keys() if names is None else names & namespace.keys()
        return {name: namespace[name] for name in wanted
                if not name.startswith("_") and name not in hidden
                and find_non_plain(namespace[name]) is None}


class _Families(PlanMagics, AgentMagics):
    """The plan and agent magics over the extension's port and session."""

    def __init__(self, port: IPythonPort, session: LackpySession) -> None:
        self.port, self.session, self.service = port, session, session.service
        self.declared = declared_magics(self)

    def _magic(self, name: str) -> Magic:
        return self.declared[name][0]


async def _awaited(result: Any) -> Any:
    return await result if inspect.isawaitable(result) else result


def _declared(name: str) -> Magic:
    return declared_magics(LackpyMagics)[name][0]


def _lackpy_cell(delegation: Delegation, options: MagicOptions) -> str:
    """The %%lackpy cell %delegate inserts: its options, the notebook variables the program
    uses (it reads them from the notebook when it runs), then the program."""
    words = ["%%lackpy"]
    if options.kit_text is not None:
        words += ["--kit", options.kit_text]
    for text in options.param_texts:
        words += ["--param", text]
    if options.sandbox is False:
        words.append("--no-sandbox")
    lines = [" ".join(words)]
    if delegation.uses:
        lines.append(uses_comment(delegation.uses))
    return "\n".join([*lines, delegation.program.rstrip("\n")])


class _LiveProgress:
    """The kernel's live ``%delegate`` display, for a Python notebook (see
    ``GenerationProgress``); called from the extension's event loop thread."""

    def __init__(self, title: str, *, live: bool) -> None:
        self.progress = GenerationProgress(title)
        self.handle = display({"text/plain": title}, raw=True, display_id=True) if live else None
        if self.handle is None:
            _status(f"{title} ")

    def __call__(self, event: GenerationEvent) -> None:
        text = self.progress.add(event)
        if self.handle is not None:
            self.handle.update({"text/plain": text}, raw=True)

    def close(self) -> None:
        """Show the title alone again (the status line follows it)."""
        if self.handle is not None and self.progress.events:
            self.handle.update({"text/plain": self.progress.title}, raw=True)


def _status(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _show_run(result: ExecutionResult, program: str) -> ExecutionResult:
    """Show what a program printed, its notes and its trace; raise its error, a validation
    error showing each line with a caret under the column."""
    __tracebackhide__ = True
    if result.stdout:
        _status(result.stdout)
    for note in result.notes:
        print(f"lackpy: {note}", file=sys.stderr)
    if result.trace.entries:
        _display(trace_bundle(result.trace, compact=True))
    try:
        return result.raise_for_error()
    except LackpyValidationError as error:
        report = validation_error(error.issues, program)
        error._render_traceback_ = lambda: report.traceback  # what IPython shows for it
        raise


def _display(bundle: dict[str, str]) -> None:
    display(bundle, raw=True)


# -- loading ------------------------------------------------------------------------


def _loaded(ipython: Any) -> LackpyMagics | None:
    found = ipython.magics_manager.registry.get(LackpyMagics.__name__)
    return found if isinstance(found, LackpyMagics) else None


def load_ipython_extension(ipython: Any) -> None:
    """Register ``%%lackpy`` and ``%delegate`` on ``ipython`` (``%load_ext`` calls this)."""
    if _loaded(ipython) is not None:
        return
    magics = LackpyMagics(ipython)
    ipython.register_magics(magics)
    atexit.register(magics.close)


def unload_ipython_extension(ipython: Any) -> None:
    """Remove the magics and stop the service's sandbox worker and loop thread."""
    magics = ipython.magics_manager.registry.pop(LackpyMagics.__name__, None)
    if not isinstance(magics, LackpyMagics):
        return
    for kind, names in magics.magics.items():
        table = ipython.magics_manager.magics[kind]
        for name in names:
            if getattr(table.get(name), "__self__", None) is magics:
                del table[name]
    atexit.unregister(magics.close)
    magics.close()
