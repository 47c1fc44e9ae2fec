"""The Jupyter protocol side of the lackpy kernel: execute, interrupt, complete, inspect,
history and shutdown. A cell is parsed into magics and code; code runs on the session."""

from __future__ import annotations

import asyncio
import builtins
import codeop
import contextlib
import functools
import inspect
import re
import signal
import sqlite3
import threading
import warnings
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from ipykernel._version import kernel_protocol_version
from ipykernel.kernelbase import Kernel
from traitlets import Float

from lackpy_kernel import __version__
from lackpy_kernel.config import LackpyConfig, load_config
from lackpy_kernel.errors import ConfigError, KitError, LackpyError, error_text
from lackpy_kernel.kit import ToolSpec, Workspace
from lackpy_kernel.lang import ALLOWED_BUILTINS
from lackpy_kernel.notebook.bundles import kit_label
from lackpy_kernel.notebook.core import show_run
from lackpy_kernel.notebook.syntax import split_cell
from lackpy_kernel.run.spawn import discard_early
from lackpy_kernel.service import LackpyService
from lackpy_kernel.session import LackpySession
from lackpy_kernel.telemetry import span

from .history import History
from .introspect import PATH_ARGUMENTS, Call, doc_bundle, enclosing_calls, workspace_paths
from .magics import KernelMagics
from .output import CellError, CellOutput

_IDENTIFIER_BEFORE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
_IDENTIFIER_AFTER = re.compile(r"^[A-Za-z0-9_]*")
_MAGIC_AT = re.compile(r"^%{1,2}([A-Za-z_][A-Za-z0-9_]*)")


class LackpyKernel(Kernel):
    """A wrapper kernel whose cells are lackpy programs, with ``%`` magics for inference."""

    implementation = "lackpy_kernel"
    implementation_version = __version__
    language = "lackpy"
    language_version = __version__
    language_info = {
        "name": "lackpy",
        "version": __version__,
        "mimetype": "text/x-lackpy",  # highlighted as Python through codemirror_mode
        "file_extension": ".py",
        "pygments_lexer": "python3",
        "codemirror_mode": {"name": "ipython", "version": 3},
        "nbconvert_exporter": "python",
    }
    # ipykernel sleeps 0.5 ms before each execute_reply, in case output written to stdout
    # has not reached the client yet; this kernel's output is sent as messages, before the reply.
    _execute_sleep = Float(0.0).tag(config=True)
    banner = (
        "lackpy: Python that lacks most of Python. Cells compose tools and plain data; "
        "each is validated, then run in a sandbox. %lsmagic lists the magics."
    )

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)  # type: ignore[no-untyped-call]
        self.workspace = Path.cwd()
        self.problems: list[str] = []
        self.service = LackpyService(self.workspace, self._read_lackpy_config())
        self.lackpy = self._start_session()
        self.lackpy.start()  # the worker boots in the background (adopting one __main__ began)
        discard_early()  # one the session did not adopt: programs run in this process
        self._stop_after_control: list[Callable[[], Any]] = []
        self.output = CellOutput(self)
        self.magics = KernelMagics(self.output, self.lackpy)
        self.files = Workspace(self.service.workspace)  # what path completion may list
        self.history = History(self.service.config_dir)
        self._history_failing = False
        if self.history.problem:
            self.problems.append(self.history.problem)

    # -- start-up -------------------------------------------------------------

    def _read_lackpy_config(self) -> LackpyConfig:
        try:
            return load_config(self.workspace)
        except ConfigError as exc:
            self.problems.append(f"{exc}. The kernel started on the default settings.")
            return LackpyConfig()

    def _start_session(self) -> LackpySession:
        session = LackpySession(self.service)
        try:
            session.resolved_kit()
        except KitError as exc:
            self.problems.append(f"the default kit {session.kit!r} cannot be used ({error_text(exc)}); "
                                 "the session uses the read-only 'debug' kit")
            session.kit = "debug"
        return session

    @property
    def kernel_info(self) -> dict[str, Any]:
        # Built here, not by the base class, which imports debugpy (tens of ms at start-up)
        # to ask whether to offer a debugger; this kernel offers no debugger, no subshells.
        return {"protocol_version": kernel_protocol_version, "implementation": self.implementation,
                "implementation_version": self.implementation_version,
                "language_info": self.language_info, "banner": self.banner,
                "help_links": self.help_links, "supported_features": []}

    # -- execute --------------------------------------------------------------

    async def do_execute(self, code: str, silent: bool, store_history: bool = True,
                         user_expressions: dict[str, Any] | None = None, allow_stdin: bool = False,
                         *, cell_meta: Any = None, cell_id: Any = None) -> dict[str, Any]:
        self.output.start(silent=silent)
        self.lackpy.stop_requested = False
        self._allow_stdin = allow_stdin  # what KernelPort.ask checks (IPythonKernel sets it too)
        if not silent:  # a silent request (the Lab extension asking the kit) shows nothing
            self._announce_problems()
        try:
            await self._cancellable(self._run_cell(code))
            reply = {"status": "ok", "execution_count": self.execution_count,
                     "payload": self.output.payload, "user_expressions": {}}
        except CellError as error:
            reply = self._error_reply(error)
        except (asyncio.CancelledError, KeyboardInterrupt):
            reply = self._error_reply(CellError(
                "KeyboardInterrupt", "interrupted: the cell was stopped; the session's "
                "variables are as they were before it"))
        except Exception as exc:  # a bug of ours must still answer the cell, not hang it
            self.log.exception("lackpy: the cell failed unexpectedly")
            reply = self._error_reply(CellError(type(exc).__name__, f"lackpy failed: {exc}"))
        self.output.end()
        if store_history and code.strip():
            self._remember(code)
        return reply

    def finish_metadata(self, parent: Any, metadata: dict[str, Any],
                        reply_content: dict[str, Any]) -> dict[str, Any]:
        """The execute_reply's metadata, with the names the session knows under ``lackpy``
        (``names``: tools, parameters, variables; ``tools``: the kit's), for the Lab
        extension's live validation, and the kit (``kit``, ``grade``) for its status bar;
        without them when the kit cannot be resolved (the cell has already said why: the
        reply itself must still go out)."""
        try:
            resolved = self.lackpy.resolved_kit()
            metadata["lackpy"] = {"names": sorted(self.lackpy.known_names(resolved)),
                                  "tools": sorted(resolved.callables),
                                  "kit": kit_label(self.lackpy.kit),
                                  "grade": {"w": resolved.grade.w, "d": resolved.grade.d}}
        except KitError:
            pass  # the cell said what is wrong with the kit
        except Exception:  # a bug of ours must not cost the cell its reply (as in do_execute)
            self.log.exception("lackpy: the session's names could not be listed")
        return metadata

    def _remember(self, code: str) -> None:
        self.history.store(self.execution_count, code, self.output.last_output)
        # written once the reply is sent: as in IPython, SQLite is not on a cell's path
        asyncio.get_running_loop().call_soon(self._write_history)

    def _write_history(self) -> None:
        try:
            self.history.flush()
        except sqlite3.Error as exc:
            if not self._history_failing:  # said once, until a write succeeds again
                self.problems.append(f"the history file could not be written ({exc}); the "
                                     "cells are kept in memory and written when it can be")
            self._history_failing = True
        else:
            self._history_failing = False

    async def _run_cell(self, code: str) -> None:
        with span("lackpy.cell", {"lackpy.cell.number": self.execution_count}):
            for segment in split_cell(code):
                if segment.kind == "code":
                    await self._run_program(segment.text)
                else:
                    await self._run_magic(segment.name, segment.line,
                                          segment.body if segment.kind == "cell_magic" else None)

    async def _run_magic(self, name: str, line: str, body: str | None) -> None:
        """Run a magic; its LackpyError ends the cell with the error's class name."""
        try:
            await self.magics.run(name, line, body)
        except CellError:
            raise
        except LackpyError as exc:
            raise CellError(type(exc).__name__, error_text(exc)) from None

    def pre_handler_hook(self) -> None:
        """Leave SIGINT ignored while a request is handled. ipykernel makes it raise
        KeyboardInterrupt for the whole handler, anywhere in its own code: a stop landing
        just before or after a cell's run then lost the cell's reply, or left the shell
        socket unread, so that no later cell was answered. A cell's run takes the stop
        itself (``_cancellable``)."""

    def post_handler_hook(self) -> None:
        """Nothing to restore (``pre_handler_hook`` changed nothing)."""

    async def _cancellable(self, work: Awaitable[Any]) -> Any:
        """Await ``work``; SIGINT (the stop button) cancels it instead of ending the kernel."""
        task = asyncio.ensure_future(_stopped_as_cancelled(work))
        with self._cancel_on_sigint(task):
            return await task

    @contextlib.contextmanager
    def _cancel_on_sigint(self, task: asyncio.Future[Any]) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        loop = asyncio.get_running_loop()
        handling = False  # a SIGINT inside the handler calls it again: not that deep

        def handle_sigint(*_args: Any) -> None:
            nonlocal handling
            if self.lackpy.running_here:  # validating or running here: only an exception stops it
                raise KeyboardInterrupt
            if handling:
                return
            handling = True
            try:
                # the task may be about to block the loop validating: it stops when it starts
                self.lackpy.stop_requested = True
                self.output.end()  # a question the cell asks is abandoned at once
                loop.call_soon_threadsafe(task.cancel)
            finally:
                handling = False

        previous = signal.signal(signal.SIGINT, handle_sigint)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, previous)

    async def _run_program(self, program: str) -> None:
        try:
            result = await self.lackpy.run(program)
        except KitError as exc:
            raise CellError("KitError", f"the session's kit {self.lackpy.kit!r} cannot be used: "
                            f"{error_text(exc)}; choose another with %kit") from None
        show_run(self.magics.port, result, program)

    # -- completion, inspection, history ---------------------------------------

    async def do_complete(self, code: str, cursor_pos: int) -> dict[str, Any]:
        before = code[:cursor_pos]
        line = before.rsplit("\n", 1)[-1]
        found = _IDENTIFIER_BEFORE.search(before)
        prefix = found.group(0) if found else ""
        start = cursor_pos - len(prefix)
        call = self._tool_call_at(code, cursor_pos)
        if line.startswith("%") and line.lstrip("%") == prefix:
            start = cursor_pos - len(line)
            matches = [name for name in self.magics.names() if name.startswith(line)]
            if not matches:  # %%create typed as %create, or the other way round
                matches = [name for name in self.magics.names()
                           if name.lstrip("%").startswith(prefix)]
        elif call is not None and call[0].string_start is not None:
            site, spec = call
            start = call[0].string_start
            typed = code[start:cursor_pos]
            in_path = site.argument([arg.name for arg in spec.args]) in PATH_ARGUMENTS
            matches = workspace_paths(self.files, typed) if in_path else []
        elif before[:start].endswith("."):
            matches = []
        else:
            matches = sorted(name for name in self._known_names() if name.startswith(prefix))
            if call is not None and call[0].keyword is None:
                arguments = [f"{arg.name}=" for arg in call[1].args if arg.name.startswith(prefix)]
                matches = arguments + matches
        return {"status": "ok", "matches": matches, "cursor_start": start,
                "cursor_end": cursor_pos, "metadata": {}}

    def _tool_call_at(self, code: str, cursor_pos: int) -> tuple[Call, ToolSpec] | None:
        """The innermost tool call holding the cursor, with the tool's spec, or None."""
        calls = enclosing_calls(code, cursor_pos)
        if not calls or calls[0].name is None:
            return None
        try:
            spec = self.lackpy.resolved_kit().tools.get(calls[0].name)
        except KitError:
            return None
        return (calls[0], spec) if spec is not None else None

    def _known_names(self) -> set[str]:
        try:
            return {*ALLOWED_BUILTINS, *self.lackpy.known_names()}
        except KitError:
            return set(ALLOWED_BUILTINS)  # the kit is broken; %kit says how

    async def do_inspect(self, code: str, cursor_pos: int, detail_level: int = 0,
                         omit_sections: Any = ()) -> dict[str, Any]:
        line_start = code.rfind("\n", 0, cursor_pos) + 1
        magic_name = _MAGIC_AT.match(code, line_start)
        if magic_name and cursor_pos <= magic_name.end():
            help_text = self.magics.help_for(magic_name.group(1))
            data = {"text/plain": help_text} if help_text is not None else None
        else:
            name = _word_at(code, cursor_pos)
            data = self._describe_name(name) if name else None
            if data is None:
                data = self._describe_enclosing_call(code, cursor_pos)
        if data is None:
            return {"status": "ok", "found": False, "data": {}, "metadata": {}}
        return {"status": "ok", "found": True, "data": data, "metadata": {}}

    def _describe_name(self, name: str) -> dict[str, str] | None:
        data = self._describe_callable(name)
        if data is not None:
            return data
        if name in self.lackpy.params:
            return {"text/plain": f"{name}: parameter, {type(self.lackpy.params[name]).__name__}"}
        kind = self.lackpy.variable_types.get(name)
        return {"text/plain": f"{name}: variable, {kind}"} if kind else None

    def _describe_enclosing_call(self, code: str, cursor_pos: int) -> dict[str, str] | None:
        """The innermost tool or builtin whose call's parentheses hold the cursor, described."""
        for call in enclosing_calls(code, cursor_pos):
            data = self._describe_callable(call.name) if call.name else None
            if data is not None:
                return data
        return None

    def _describe_callable(self, name: str) -> dict[str, str] | None:
        """A tool's signature and doc (as text and Markdown), or a builtin's doc; None for
        any other name."""
        try:
            resolved = self.lackpy.resolved_kit()
        except KitError:
            return None
        if name in resolved.tools:
            spec = resolved.tools[name]
            doc = self.service.resolve_doc(spec.docs) if spec.docs else None
            if doc:
                return doc_bundle(name, spec.signature(name), doc)
            return {"text/plain": spec.describe(name)}
        if name in ALLOWED_BUILTINS:
            target = getattr(builtins, name, None)
            doc = inspect.getdoc(target) if target is not None else None
            return {"text/plain": doc or "sort_by(items, key, reverse=False): sort dicts by the "
                                         "value under key"}
        return None

    async def do_is_complete(self, code: str) -> dict[str, Any]:
        if code.startswith("%%"):
            complete = code.endswith("\n\n")
            return {"status": "complete"} if complete else {"status": "incomplete", "indent": ""}
        if code.startswith("%") and "\n" not in code.rstrip("\n"):
            return {"status": "complete"}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                compiled = codeop.compile_command(code, "<cell>", "exec")
        except (SyntaxError, ValueError, OverflowError):
            return {"status": "invalid"}
        if compiled is None:
            return {"status": "incomplete", "indent": _next_indent(code)}
        return {"status": "complete"}

    async def do_history(self, hist_access_type: str, output: bool, raw: bool,
                         session: int | None = None, start: int | None = None,
                         stop: int | None = None, n: int | None = None,
                         pattern: str | None = None, unique: bool = False) -> dict[str, Any]:
        if hist_access_type == "tail":
            entries = self.history.tail(n, output=output)
        elif hist_access_type == "range":
            entries = self.history.range(session, start, stop, output=output)
        elif hist_access_type == "search":
            entries = self.history.search(pattern or "*", output=output, n=n, unique=unique)
        else:
            return {"status": "error", "ename": "ValueError", "traceback": [],
                    "evalue": f"unknown history access type {hist_access_type!r}: "
                              "use tail, range or search"}
        return {"status": "ok", "history": entries}

    async def do_shutdown(self, restart: bool) -> dict[str, Any]:
        await self.magics.aclose()  # the remote runs' displays stop following them
        self.magics.close()
        self.history.close()
        return {"status": "ok", "restart": restart}

    async def shutdown_request(self, stream: Any, ident: Any, parent: Any) -> None:
        # ipykernel stops the main loop from this (control) thread, then process_control
        # flushes stdout here; if the main thread has meanwhile closed IOPub, that flush
        # waits 10 s for a thread that is gone. So the stop waits until that flush is done.
        if threading.current_thread() is threading.main_thread():  # on the shell channel
            await super().shutdown_request(stream, ident, parent)  # type: ignore[no-untyped-call]
            return
        main_loop = self.io_loop
        self.io_loop = _HeldStop(main_loop, self._stop_after_control)  # type: ignore[assignment]
        try:
            await super().shutdown_request(stream, ident, parent)  # type: ignore[no-untyped-call]
        finally:
            self.io_loop = main_loop

    async def process_control(self, msg: Any) -> None:
        await super().process_control(msg)  # type: ignore[no-untyped-call]
        while self._stop_after_control:
            self.io_loop.add_callback(self._stop_after_control.pop(0))

    # -- messages -------------------------------------------------------------

    def _announce_problems(self) -> None:
        while self.problems:
            self.output.stream("stderr", f"lackpy: {self.problems.pop(0)}\n")

    def _error_reply(self, error: CellError) -> dict[str, Any]:
        content = self.output.error(error)
        return {"status": "error", "execution_count": self.execution_count, **content}


async def _stopped_as_cancelled(work: Awaitable[Any]) -> Any:
    """Await ``work``, a stop's KeyboardInterrupt (raised into validation that was not
    caught on its way) turned into this task's cancellation: asyncio lets a
    KeyboardInterrupt out of a task escape its event loop, which ended the kernel."""
    try:
        return await work
    except KeyboardInterrupt:
        raise asyncio.CancelledError from None


class _HeldStop:
    """Stands in for the main IOLoop during shutdown: the callbacks ipykernel schedules on it
    (stopping it) are held in ``held`` until the control message is fully processed."""

    def __init__(self, loop: Any, held: list[Callable[[], Any]]) -> None:
        self._loop, self._held = loop, held

    def add_callback(self, callback: Callable[..., Any], *args: Any) -> None:
        self._held.append(functools.partial(callback, *args))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loop, name)


def _word_at(code: str, cursor_pos: int) -> str:
    before = _IDENTIFIER_BEFORE.search(code[:cursor_pos])
    after = _IDENTIFIER_AFTER.match(code[cursor_pos:])
    return (before.group(0) if before else "") + (after.group(0) if after else "")


def _next_indent(code: str) -> str:
    last = code.rstrip("\n").split("\n")[-1]
    indent = last[: len(last) - len(last.lstrip())]
    return indent + "    " if last.rstrip().endswith(":") else indent
