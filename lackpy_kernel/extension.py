"""The IPython extension: ``%%lackpy`` and ``%delegate`` in an ordinary Python kernel.

Load it with ``%load_ext lackpy_kernel`` (or ``%load_ext lackpy_kernel.extension``)::

    %%lackpy [--kit K] [--param name=value ...] [--out NAME] [--no-sandbox]
    <lackpy program>

    %delegate [--kit K] [--param name=value ...] [--run] [--no-sandbox] INTENT

Options come first; everything after the first word that is not an option (or after
``--``) is the intent, taken literally: no ``{var}`` or ``$var`` expansion. ``--param``
values are Python literals where they parse as one, otherwise strings; quote a value
that holds spaces (``--param "xs=[1, 2]"``).

One :class:`LackpyService` serves each shell, for the folder that was the current
directory when the extension was loaded. Magics run inside ipykernel's running event
loop, so the service's coroutines run on a background event-loop thread
(:class:`_LoopThread`), never through ``asyncio.run``. Failures raise real exceptions
(:class:`LackpyValidationError`, :class:`LackpyRuntimeError`, :class:`LackpyDelegateError`,
:class:`LackpyUsageError`), so nbval and ``raises-exception`` tags see them.
"""

from __future__ import annotations

import asyncio
import atexit
import keyword
import os
import shlex
import sys
import threading
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any, TypeVar

from IPython.core.magic import Magics, cell_magic, line_magic, magics_class, no_var_expand

from lackpy_kernel.errors import (
    GenerationError,
    LackpyError,
    LackpyRuntimeError,
    LackpyValidationError,
    UsageError,
)
from lackpy_kernel.magic_syntax import Kind, parse_magic_line, parse_param
from lackpy_kernel.service import LackpyService

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

CANCEL_GRACE_S = 10.0


# The extension's errors are lackpy's own (see lackpy_kernel.errors); these names stay
# for code written against earlier versions.
LackpyUsageError = UsageError
LackpyDelegateError = GenerationError


# -- options -------------------------------------------------------------------

_SPECS: dict[str, dict[str, Kind]] = {
    "lackpy": {"--kit": "value", "--param": "multi", "--out": "value", "--no-sandbox": "flag"},
    "delegate": {"--kit": "value", "--param": "multi", "--run": "flag", "--no-sandbox": "flag"},
}
_USAGE = {
    "lackpy": "%%lackpy [--kit K] [--param name=value ...] [--out NAME] [--no-sandbox]",
    "delegate": "%delegate [--kit K] [--param name=value ...] [--run] [--no-sandbox] INTENT",
}


@dataclass
class MagicOptions:
    """What a magic's line said. ``*_text`` keep the words as typed, to write them back."""

    kit: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    out: str | None = None
    sandbox: bool | None = None
    run: bool = False
    rest: str = ""
    kit_text: str | None = None
    param_texts: list[str] = field(default_factory=list)


def parse_magic_options(line: str, magic: str = "delegate") -> MagicOptions:
    """Read ``line``'s leading options; the text after them is ``rest``, verbatim.

    ``magic`` (``"lackpy"`` or ``"delegate"``) picks the options allowed.
    """
    try:
        parsed = parse_magic_line(line, _SPECS[magic], _USAGE[magic])
        params = [parse_param(raw) for raw in parsed.options.get("--param", [])]
    except UsageError as exc:
        raise LackpyUsageError(str(exc)) from None
    given = parsed.options
    options = MagicOptions(
        kit=given.get("--kit"), params=dict(params), out=given.get("--out"),
        sandbox=False if given.get("--no-sandbox") else None, run=bool(given.get("--run")),
        rest=parsed.rest, param_texts=list(given.get("--param", [])),
    )
    if options.kit is not None:
        options.kit_text = shlex.quote(options.kit)
    if options.out is not None and (not options.out.isidentifier() or keyword.iskeyword(options.out)):
        raise LackpyUsageError(f"--out needs a variable name, not {options.out!r}; "
                               f"usage: {_USAGE[magic]}")
    return options


# -- the background event loop ---------------------------------------------------


class _LoopThread:
    """One daemon thread running an asyncio loop that the magics' coroutines run on.

    ipykernel runs cells inside its own running loop, where ``asyncio.run`` fails;
    the magics block on this loop instead.
    """

    def __init__(self, name: str = "lackpy-extension-loop") -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_forever()
        finally:
            try:
                self._loop.run_until_complete(self._loop.shutdown_asyncgens())
                self._loop.run_until_complete(self._loop.shutdown_default_executor())
            finally:
                self._loop.close()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for its result.

        A KeyboardInterrupt while waiting (or the timeout passing) cancels the task,
        which stops a sandboxed program, waits for it to wind down, then re-raises.
        """
        if not self.alive:
            coro.close()
            raise RuntimeError("the lackpy event-loop thread has stopped; reload the extension")
        finished = threading.Event()
        holder: dict[str, asyncio.Task[T]] = {}

        def start() -> None:
            task = self._loop.create_task(coro)
            task.add_done_callback(lambda _: finished.set())
            holder["task"] = task

        self._loop.call_soon_threadsafe(start)
        try:
            if not finished.wait(timeout):
                self._cancel(holder, finished)
                raise TimeoutError(f"lackpy gave up waiting after {timeout} s")
        except KeyboardInterrupt:
            self._cancel(holder, finished)
            raise
        task = holder["task"]
        if task.cancelled():
            raise asyncio.CancelledError("the lackpy task was cancelled")
        return task.result()

    def _cancel(self, holder: dict[str, asyncio.Task[Any]], finished: threading.Event) -> None:
        # FIFO with ``start``: by the time this runs, the task exists.
        self._loop.call_soon_threadsafe(lambda: holder["task"].cancel())
        finished.wait(CANCEL_GRACE_S)

    def close(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(CANCEL_GRACE_S)


# -- the magics -------------------------------------------------------------------


@magics_class
class LackpyMagics(Magics):
    """``%%lackpy`` and ``%delegate``, over one service for the shell's workspace."""

    def __init__(self, shell: Any, workspace: str | os.PathLike[str] | None = None) -> None:
        super().__init__(shell)
        self.workspace = os.fspath(workspace) if workspace is not None else os.getcwd()
        self.service = LackpyService(self.workspace)
        self._loop = _LoopThread()
        self._closed = False

    def close(self) -> None:
        """Stop the sandbox worker and the loop thread. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            self.service.close()
        finally:
            self._loop.close()

    @no_var_expand
    @cell_magic
    def lackpy(self, line: str, cell: str) -> Any:
        """Validate and run the cell as lackpy; its last expression is the cell's result.

        %%lackpy [--kit K] [--param name=value ...] [--out NAME] [--no-sandbox]
        """
        __tracebackhide__ = True
        options = parse_magic_options(line, "lackpy")
        if options.rest:
            raise LackpyUsageError(f"%%lackpy takes only options, not {options.rest!r}; the "
                                   f"program goes in the cell; usage: {_USAGE['lackpy']}")
        result = self._call(self.service.run_program(cell, options.kit, options.params,
                                                     sandbox=options.sandbox))
        _show_stdout(result.stdout)
        _show_notes(result.notes)
        result.raise_for_error()
        if options.out is not None:
            self.shell.user_ns[options.out] = result.output
        return result.output

    @no_var_expand
    @line_magic
    def delegate(self, line: str) -> Any:
        """Ask the inference tiers for a program and insert it as a ``%%lackpy`` cell below.

        %delegate [--kit K] [--param name=value ...] [--run] [--no-sandbox] INTENT

        With ``--run`` the program also runs here and its output is the result.
        """
        __tracebackhide__ = True
        options = parse_magic_options(line, "delegate")
        intent = options.rest
        if not intent:
            raise LackpyUsageError(f"%delegate needs an intent, after its options; "
                                   f"usage: {_USAGE['delegate']}")
        if not options.run:
            generated = self._call(self.service.generate(intent, options.kit, options.params))
            _say_tier(generated.provider_name, generated.generation_time_ms)
            self.shell.set_next_input(_lackpy_cell(generated.program, options), replace=False)
            return None
        # delegate() also keeps the history and template counts the ratchet uses.
        outcome = self._call(self.service.delegate(intent, options.kit, options.params,
                                                   sandbox=options.sandbox))
        _say_tier(outcome["generation_tier"], outcome["generation_time_ms"])
        self.shell.set_next_input(_lackpy_cell(outcome["program"], options), replace=False)
        _show_stdout(outcome["stdout"])
        _show_notes(outcome.get("notes") or [])
        if not outcome["success"]:
            raise LackpyRuntimeError(outcome["error"] or "the program failed",
                                     error_type=outcome.get("error_type"),
                                     error_line=outcome.get("error_line"))
        return outcome["output"]

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._closed:
            coro.close()
            raise LackpyError("the lackpy extension was unloaded; run %load_ext lackpy_kernel again")
        return self._loop.run(coro)


def _lackpy_cell(program: str, options: MagicOptions) -> str:
    words = ["%%lackpy"]
    if options.kit_text is not None:
        words += ["--kit", options.kit_text]
    for text in options.param_texts:
        words += ["--param", text]
    if options.sandbox is False:
        words.append("--no-sandbox")
    return " ".join(words) + "\n" + program.rstrip("\n")


def _show_stdout(text: str) -> None:
    if text:
        sys.stdout.write(text)
        sys.stdout.flush()


def _show_notes(notes: list[str]) -> None:
    for note in notes:
        print(f"lackpy: {note}", file=sys.stderr)


def _say_tier(tier: str, milliseconds: float) -> None:
    print(f"lackpy: generated by {tier} in {milliseconds:.1f} ms")


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
