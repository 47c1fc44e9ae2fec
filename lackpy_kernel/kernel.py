"""The lackpy Jupyter kernel: every cell is a lackpy program, validated, then run in a sandbox.

Run as ``python -m lackpy_kernel -f CONNECTION_FILE`` (the kernelspec does this).
The workspace is the kernel's working directory, the notebook's folder.
"""

from __future__ import annotations

import asyncio
import builtins
import codeop
import contextlib
import fnmatch
import html
import inspect
import pprint
import re
import signal
import threading
import warnings
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

from ipykernel.kernelbase import Kernel

from lackpy_kernel import __version__
from lackpy_kernel.config import LackpyConfig, load_config
from lackpy_kernel.errors import ConfigError, GenerationError, KitError, LackpyError, error_text
from lackpy_kernel.lang import ALLOWED_BUILTINS
from lackpy_kernel.magic_syntax import (
    MagicUsageError,
    Segment,
    parse_magic_line,
    parse_param,
    shell_words,
    split_cell,
)
from lackpy_kernel.run import ExecutionResult, Trace
from lackpy_kernel.run.runner import VALIDATION_ERROR
from lackpy_kernel.service import LackpyService, LackpySession, jsonable

HISTORY_SESSION = 1
HISTORY_LIMIT = 1000  # cells kept for history requests
HISTORY_OUTPUT = 10_000  # characters of each cell's output kept
TABLE_ROWS = 200
_IDENTIFIER_BEFORE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
_IDENTIFIER_AFTER = re.compile(r"^[A-Za-z0-9_]*")

MAGICS = {
    "delegate": "%delegate [--run] [--replace] [--kit K] INTENT: write a program for INTENT "
                "and insert it as the next cell",
    "kit": "%kit [NAME | tool,tool,...]: show the session's kit, or set it",
    "params": "%params [--clear] [name=value ...]: show or set the parameters programs see",
    "create": "%%create NAME [--pattern P]: save the cell's program as a template (the ratchet)",
    "providers": "%providers: the inference tiers and whether each is available",
    "trace": "%trace: every tool call of the last program, in full",
    "validate": "%%validate: validate the cell's program without running it",
    "who": "%who: the session's variables and their types",
    "reset": "%reset: forget the session's variables",
    "lsmagic": "%lsmagic: this list",
}
CELL_MAGICS = {"create", "validate"}


SHUTDOWN_GRACE_S = 0.25


class _DelayedStop:
    """Stands in for the main IOLoop during shutdown: callbacks run after a short delay."""

    def __init__(self, loop: Any, delay: float) -> None:
        self._loop, self._delay = loop, delay

    def add_callback(self, callback: Callable[..., Any], *args: Any) -> None:
        # add_callback is the loop's only thread-safe entry; it then schedules the delay.
        self._loop.add_callback(self._loop.call_later, self._delay, callback, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loop, name)


class CellError(Exception):
    """Ends a cell with an error reply: ``ename``, ``evalue`` and the traceback lines."""

    def __init__(self, ename: str, evalue: str, traceback: list[str] | None = None) -> None:
        super().__init__(evalue)
        self.ename, self.evalue = ename, evalue
        self.traceback = traceback or [f"{ename}: {evalue}"]


class LackpyKernel(Kernel):
    """A wrapper kernel whose cells are lackpy programs, with ``%`` magics for inference."""

    implementation = "lackpy_kernel"
    implementation_version = __version__
    language = "lackpy"
    language_version = __version__
    language_info = {
        "name": "lackpy",
        "version": __version__,
        "mimetype": "text/x-python",
        "file_extension": ".py",
        "pygments_lexer": "python3",
        "codemirror_mode": {"name": "ipython", "version": 3},
        "nbconvert_exporter": "python",
    }
    banner = (
        "lackpy: Python that lacks most of Python. Cells compose tools and plain data; "
        "each is validated, then run in a sandbox. %lsmagic lists the magics."
    )

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.workspace = Path.cwd()
        self.problems: list[str] = []
        self.service = LackpyService(self.workspace, self._read_lackpy_config())
        self.lackpy = self._start_session()
        self.history: list[tuple[int, str, str]] = []
        self._payload: list[dict[str, Any]] = []
        self._last_output = ""

    # -- start-up -------------------------------------------------------------

    def _read_lackpy_config(self) -> LackpyConfig:
        try:
            return load_config(self.workspace)
        except ConfigError as exc:
            self.problems.append(f"{exc}. The kernel started on the default settings.")
            return LackpyConfig()

    def _start_session(self) -> LackpySession:
        session = self.service.session()
        try:
            session.resolved_kit()
        except KitError as exc:
            self.problems.append(f"the default kit {session.kit!r} cannot be used ({error_text(exc)}); "
                                 "the session uses the read-only 'debug' kit")
            session.kit = "debug"
        return session

    @property
    def kernel_info(self) -> dict[str, Any]:
        info = dict(super().kernel_info)
        info["supported_features"] = []  # no debugger, no subshells
        return info

    # -- execute --------------------------------------------------------------

    async def do_execute(self, code: str, silent: bool, store_history: bool = True,
                         user_expressions: dict | None = None, allow_stdin: bool = False,
                         *, cell_meta: Any = None, cell_id: Any = None) -> dict[str, Any]:
        self._silent = silent
        self._payload = []
        self._last_output = ""
        self._announce_problems()
        try:
            await self._cancellable(self._run_cell(code))
            reply = {"status": "ok", "execution_count": self.execution_count,
                     "payload": self._payload, "user_expressions": {}}
        except CellError as error:
            reply = self._error_reply(error)
        except asyncio.CancelledError:
            reply = self._error_reply(CellError(
                "KeyboardInterrupt", "interrupted: the cell was stopped; the session's "
                "variables are as they were before it"))
        except Exception as exc:  # a bug of ours must still answer the cell, not hang it
            self.log.exception("lackpy: the cell failed unexpectedly")
            reply = self._error_reply(CellError(type(exc).__name__, f"lackpy failed: {exc}"))
        if store_history and code.strip():
            self._remember(code)
        return reply

    def _remember(self, code: str) -> None:
        self.history.append((self.execution_count, code, self._last_output[:HISTORY_OUTPUT]))
        del self.history[:-HISTORY_LIMIT]

    async def _run_cell(self, code: str) -> None:
        for segment in split_cell(code):
            if segment.kind == "code":
                await self._run_program(segment.text)
            elif segment.kind == "cell_magic":
                await self._cell_magic(segment)
            else:
                await self._line_magic(segment)

    async def _cancellable(self, work: Awaitable[Any]) -> Any:
        """Await ``work``; SIGINT (the stop button) cancels it instead of ending the kernel."""
        task = asyncio.ensure_future(work)
        with self._cancel_on_sigint(task):
            return await task

    @contextlib.contextmanager
    def _cancel_on_sigint(self, task: asyncio.Future) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        loop = asyncio.get_running_loop()

        def handle_sigint(*_args: Any) -> None:
            if self.lackpy.running_here:  # a program on this thread: only an exception stops it
                raise KeyboardInterrupt
            loop.call_soon_threadsafe(task.cancel)

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
        self._show_result(result, program)

    def _show_result(self, result: ExecutionResult, program: str) -> None:
        self._stream("stdout", result.stdout)
        for note in result.notes:
            self._stream("stderr", f"lackpy: {note}\n")
        if result.trace.entries:
            self._display(trace_bundle(result.trace, compact=True))
        if not result.success:
            raise program_error(result, program)
        if result.output is not None:
            bundle = output_bundle(result.output)
            self._last_output = bundle["text/plain"]
            self._execute_result(bundle)

    # -- magics ---------------------------------------------------------------

    async def _line_magic(self, segment: Segment) -> None:
        handler = getattr(self, f"_magic_{segment.name}", None)
        if segment.name in CELL_MAGICS:
            raise CellError("UsageError", f"%%{segment.name} is a cell magic: put it on the "
                            "cell's first line, with the program below")
        if handler is None:
            raise CellError("UsageError", f"unknown magic %{segment.name}; %lsmagic lists them")
        await self._usage_errors(handler, segment.line)

    async def _cell_magic(self, segment: Segment) -> None:
        if segment.name not in CELL_MAGICS:
            raise CellError("UsageError", f"unknown cell magic %%{segment.name}; "
                            "%lsmagic lists them")
        handler = getattr(self, f"_magic_{segment.name}")
        await self._usage_errors(handler, segment.line, segment.body)

    async def _usage_errors(self, handler: Callable[..., Any], *args: Any) -> Any:
        """Run a magic's handler; an expected failure (bad options, a bad kit) becomes a clear
        error reply."""
        try:
            result = handler(*args)
            return await result if inspect.isawaitable(result) else result
        except LackpyError as exc:
            raise CellError(type(exc).__name__, error_text(exc)) from None

    async def _magic_delegate(self, line: str) -> None:
        spec = {"--run": "flag", "--replace": "flag", "--kit": "value"}
        parsed = parse_magic_line(line, spec, MAGICS["delegate"])
        intent = parsed.rest
        if not intent:
            raise MagicUsageError(f"what should the program do? usage: {MAGICS['delegate']}")
        kit = parsed.options.get("--kit", self.lackpy.kit)
        # Streamed, not an updated display: the line shows at once, and notebooks replay it.
        self._stream("stdout", f"delegating: {intent} ... ")
        try:
            generated = await self.service.generate(intent, kit, dict(self.lackpy.params))
        except GenerationError as exc:
            self._stream("stdout", "no provider could write a program\n")
            raise CellError("LackpyDelegateError", str(exc)) from None
        self._stream("stdout", generation_summary(generated) + "\n")
        self._payload.append({"source": "set_next_input", "text": generated.program,
                              "replace": bool(parsed.options.get("--replace"))})
        if parsed.options.get("--run"):
            result = await self.lackpy.run(generated.program, kit=kit)
            self.service.record_outcome(generated, result)
            self._show_result(result, generated.program)

    def _magic_kit(self, line: str) -> None:
        if line.strip():
            self.lackpy.set_kit(line.strip())
        resolved = self.lackpy.resolved_kit()
        grade = resolved.grade
        text = f"kit: {self.lackpy.kit}  (grade w={grade.w} d={grade.d})\n{resolved.description}"
        self._display({"text/plain": text})

    def _magic_params(self, line: str) -> None:
        parsed = parse_magic_line(line, {"--clear": "flag"}, MAGICS["params"])
        if parsed.options.get("--clear"):
            self.lackpy.params.clear()
        given = dict(parse_param(word) for word in shell_words(parsed.rest))
        self.lackpy.params.update(given)
        shown = "\n".join(f"{name} = {value!r}" for name, value in self.lackpy.params.items())
        self._display({"text/plain": shown or "no parameters"})

    async def _magic_create(self, line: str, body: str) -> None:
        spec = {"--pattern": "value"}
        parsed = parse_magic_line(line, spec, MAGICS["create"])
        name, _, tail = parsed.rest.partition(" ")
        if not name:
            raise MagicUsageError(f"name the template; usage: {MAGICS['create']}")
        after_name = parse_magic_line(tail, spec, MAGICS["create"])  # options may follow NAME
        if after_name.rest:
            raise MagicUsageError(f"one name only; usage: {MAGICS['create']}")
        options = {**parsed.options, **after_name.options}
        saved = await self.service.create(body, self.lackpy.kit, name, options.get("--pattern"))
        if not saved["success"]:
            raise CellError("LackpyCreateError", "; ".join(saved["errors"]))
        shown = Path(saved["path"]).relative_to(self.workspace)
        self._display({"text/plain": f"saved {shown}\npattern: {saved['pattern']}"})

    def _magic_providers(self, line: str) -> None:
        rows = [[p["name"], "yes" if p["available"] else "no", p["reason"] or ""]
                for p in self.service.providers_list()]
        self._display(table_bundle(["tier", "available", "why not"], rows))

    def _magic_trace(self, line: str) -> None:
        last = self.lackpy.last_result
        if last is None or not last.trace.entries:
            self._display({"text/plain": "no tool calls yet"})
            return
        self._display(trace_bundle(last.trace, compact=False))

    def _magic_validate(self, line: str, body: str) -> None:
        check = self.lackpy.validate(body)
        if not check.valid:
            raise validation_error(check.issues, body)
        self._display({"text/plain": f"valid: calls {', '.join(check.calls) or 'nothing'}"})

    def _magic_who(self, line: str) -> None:
        variables = self.lackpy.variable_types
        rows = [[name, kind] for name, kind in sorted(variables.items())]
        rows += [[name, f"{type(value).__name__} (parameter)"]
                 for name, value in self.lackpy.params.items()]
        self._display(table_bundle(["name", "type"], rows) if rows else
                      {"text/plain": "no variables yet"})

    def _magic_reset(self, line: str) -> None:
        self.lackpy.reset()
        self._display({"text/plain": "the session's variables are cleared"})

    def _magic_lsmagic(self, line: str) -> None:
        self._display({"text/plain": "\n".join(MAGICS.values())})

    # -- completion, inspection, history ---------------------------------------

    async def do_complete(self, code: str, cursor_pos: int) -> dict[str, Any]:
        before = code[:cursor_pos]
        line = before.rsplit("\n", 1)[-1]
        found = _IDENTIFIER_BEFORE.search(before)
        prefix = found.group(0) if found else ""
        start = cursor_pos - len(prefix)
        if line.startswith("%") and line.lstrip("%") == prefix:
            names = [f"{'%' * (len(line) - len(prefix))}{name}" for name in MAGICS]
            start = cursor_pos - len(line)
            matches = [name for name in names if name.startswith(line)]
        elif before[:start].endswith("."):
            matches = []
        else:
            matches = sorted(name for name in self._known_names() if name.startswith(prefix))
        return {"status": "ok", "matches": matches, "cursor_start": start,
                "cursor_end": cursor_pos, "metadata": {}}

    def _known_names(self) -> set[str]:
        try:
            return {*ALLOWED_BUILTINS, *self.lackpy.known_names()}
        except KitError:
            return set(ALLOWED_BUILTINS)  # the kit is broken; %kit says how

    async def do_inspect(self, code: str, cursor_pos: int, detail_level: int = 0,
                         omit_sections: Any = ()) -> dict[str, Any]:
        name = _word_at(code, cursor_pos)
        text = self._describe_name(name) if name else None
        if text is None:
            return {"status": "ok", "found": False, "data": {}, "metadata": {}}
        return {"status": "ok", "found": True, "data": {"text/plain": text}, "metadata": {}}

    def _describe_name(self, name: str) -> str | None:
        try:
            resolved = self.lackpy.resolved_kit()
        except KitError:
            return None
        if name in resolved.tools:
            spec = resolved.tools[name]
            doc = self.service.resolve_doc(spec.docs) if spec.docs else None
            text = spec.describe(name) if hasattr(spec, "describe") else spec.description
            return f"{text}\n\n{doc}" if doc else text
        if name in ALLOWED_BUILTINS:
            target = getattr(builtins, name, None)
            doc = inspect.getdoc(target) if target is not None else None
            return doc or "sort_by(items, key, reverse=False): sort dicts by the value under key"
        if name in self.lackpy.params:
            return f"{name}: parameter, {type(self.lackpy.params[name]).__name__}"
        kind = self.lackpy.variable_types.get(name)
        return f"{name}: variable, {kind}" if kind else None

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
        entries = [(HISTORY_SESSION, number, (code, out) if output else code)
                   for number, code, out in self.history]
        if hist_access_type == "tail":
            entries = entries[-n:] if n else entries
        elif hist_access_type == "range":
            low, high = start or 0, stop if stop is not None else float("inf")
            entries = [e for e in entries if session in (None, 0, HISTORY_SESSION)
                       and low <= e[1] < high]
        elif hist_access_type == "search":
            entries = _search_history(entries, pattern or "*", unique, n)
        return {"status": "ok", "history": entries}

    async def do_shutdown(self, restart: bool) -> dict[str, Any]:
        self.lackpy.close()
        self.service.close()
        return {"status": "ok", "restart": restart}

    async def shutdown_request(self, stream: Any, ident: Any, parent: Any) -> None:
        # ipykernel stops the main loop from this (control) thread and then flushes stdout
        # here; if the main thread has meanwhile closed IOPub, that flush blocks for good
        # and the process lingers. Stopping the main loop a moment later lets it finish.
        main_loop = self.io_loop
        self.io_loop = _DelayedStop(main_loop, SHUTDOWN_GRACE_S)
        try:
            await super().shutdown_request(stream, ident, parent)
        finally:
            self.io_loop = main_loop

    # -- messages -------------------------------------------------------------

    def _announce_problems(self) -> None:
        while self.problems:
            self._stream("stderr", f"lackpy: {self.problems.pop(0)}\n")

    def _stream(self, name: str, text: str) -> None:
        if text and not self._silent:
            self.send_response(self.iopub_socket, "stream", {"name": name, "text": text})

    def _display(self, data: dict[str, Any]) -> None:
        if not self._silent:
            self.send_response(self.iopub_socket, "display_data", {"data": data, "metadata": {}})

    def _execute_result(self, data: dict[str, Any]) -> None:
        if not self._silent:
            self.send_response(self.iopub_socket, "execute_result", {
                "execution_count": self.execution_count, "data": data, "metadata": {}})

    def _error_reply(self, error: CellError) -> dict[str, Any]:
        content = {"ename": error.ename, "evalue": error.evalue, "traceback": error.traceback}
        if not self._silent:
            self.send_response(self.iopub_socket, "error", content)
        return {"status": "error", "execution_count": self.execution_count, **content}


# -- rendering (pure functions, tested directly) --------------------------------


def program_error(result: ExecutionResult, program: str) -> CellError:
    """The CellError for a failed program: validation errors with carets, or the runtime error."""
    if result.error_type == VALIDATION_ERROR:
        return validation_error(result.issues, program)
    ename = result.error_type or "Error"
    message = result.error or "the program failed"
    evalue = message.removeprefix(f"{ename}: ")
    return CellError(ename, evalue, [f"{ename}: {evalue}"])


def validation_error(issues: list[Any], program: str) -> CellError:
    """One error for all of a program's validation issues, each with its line and a caret."""
    lines = program.split("\n")
    traceback = [f"{VALIDATION_ERROR}: the cell is not valid lackpy ({len(issues)} "
                 f"error{'s' if len(issues) != 1 else ''}); nothing ran"]
    for issue in issues:
        traceback.append(str(issue))
        if 0 < issue.line <= len(lines):
            source = lines[issue.line - 1]
            traceback.append(f"    {source}")
            if issue.col:
                traceback.append("    " + " " * (issue.col - 1) + "^")
    evalue = "; ".join(str(issue) for issue in issues[:3])
    if len(issues) > 3:
        evalue += f"; and {len(issues) - 3} more"
    return CellError(VALIDATION_ERROR, evalue, traceback)


def output_bundle(output: Any) -> dict[str, Any]:
    """text/plain, plus application/json for lists and dicts and an HTML table for rows."""
    text = output if isinstance(output, str) else pprint.pformat(output, width=100)
    bundle: dict[str, Any] = {"text/plain": text}
    if isinstance(output, (list, dict)):
        bundle["application/json"] = jsonable(output)
    if _is_rows(output):
        columns = list(dict.fromkeys(key for row in output for key in row))
        rows = [[row.get(column, "") for column in columns] for row in output[:TABLE_ROWS]]
        bundle["text/html"] = table_bundle([str(c) for c in columns], rows,
                                           more=len(output) - TABLE_ROWS)["text/html"]
    return bundle


def _is_rows(output: Any) -> bool:
    return (isinstance(output, list) and bool(output)
            and all(isinstance(row, dict) for row in output))


def table_bundle(columns: list[str], rows: list[list[Any]], more: int = 0) -> dict[str, str]:
    """A table as text/plain and text/html."""
    cells = [[_cell_text(value) for value in row] for row in rows]
    widths = [max([len(column), *(len(row[i]) for row in cells)]) for i, column in
              enumerate(columns)]
    plain = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True))]
    plain += ["  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)) for row in cells]
    head = "".join(f"<th>{html.escape(column)}</th>" for column in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>"
                   for row in cells)
    if more > 0:
        plain.append(f"... and {more} more rows")
        body += f"<tr><td colspan='{len(columns)}'>... and {more} more rows</td></tr>"
    return {"text/plain": "\n".join(plain),
            "text/html": f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"}


def _cell_text(value: Any) -> str:
    text = value if isinstance(value, str) and "\n" not in value else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def trace_bundle(trace: Trace, compact: bool) -> dict[str, str]:
    """The tool calls: one line each (tool, args, ms, ok); in full for %trace."""
    total = sum(entry.duration_ms for entry in trace.entries)
    count = len(trace.entries)
    title = f"trace: {count} tool call{'s' if count != 1 else ''}, {total:.1f} ms"
    columns = ["#", "tool", "args", "ms", "ok"] + ([] if compact else ["result / error"])
    rows = []
    for entry in trace.entries:
        args = ", ".join(f"{k}={v!r}" for k, v in entry.args.items())
        row = [entry.step, entry.tool, args, f"{entry.duration_ms:.1f}",
               "ok" if entry.success else "failed"]
        if not compact:
            row.append(entry.result if entry.success else entry.error)
        rows.append(row)
    table = table_bundle(columns, rows)
    files = [f"read: {', '.join(trace.files_read)}"] if trace.files_read else []
    files += [f"modified: {', '.join(trace.files_modified)}"] if trace.files_modified else []
    plain = "\n".join([title, table["text/plain"], *files])
    extra = "".join(f"<div>{html.escape(line)}</div>" for line in files)
    opened = "" if compact else " open"
    markup = f"<details{opened}><summary>{html.escape(title)}</summary>{table['text/html']}"
    return {"text/plain": plain, "text/html": markup + extra + "</details>"}


def generation_summary(generated: Any) -> str:
    """``written by TIER in N ms`` (and how it was corrected, if it was)."""
    text = f"written by {generated.provider_name} in {generated.generation_time_ms:.1f} ms"
    if generated.correction_strategy:
        text += f" (corrected by {generated.correction_strategy})"
    return text + "; it is in the next cell"


def _search_history(entries: list, pattern: str, unique: bool, n: int | None) -> list:
    def source(entry: tuple) -> str:
        return entry[2][0] if isinstance(entry[2], tuple) else entry[2]

    found = [entry for entry in entries if fnmatch.fnmatchcase(source(entry), pattern)]
    if unique:
        latest = {source(entry): entry for entry in found}
        found = [entry for entry in found if latest[source(entry)] is entry]
    return found[-n:] if n else found


def _word_at(code: str, cursor_pos: int) -> str:
    before = _IDENTIFIER_BEFORE.search(code[:cursor_pos])
    after = _IDENTIFIER_AFTER.match(code[cursor_pos:])
    return (before.group(0) if before else "") + (after.group(0) if after else "")


def _next_indent(code: str) -> str:
    last = code.rstrip("\n").split("\n")[-1]
    indent = last[: len(last) - len(last.lstrip())]
    return indent + "    " if last.rstrip().endswith(":") else indent



