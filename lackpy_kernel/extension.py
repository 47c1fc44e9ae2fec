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
import concurrent.futures
import functools
import getpass
import logging
import os
import shlex
import sys
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, TypeVar

from IPython.core.error import StdinNotImplementedError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, magics_class, no_var_expand
from IPython.display import display

from lackpy_kernel.engines import Approval, Envelope, Plan, Step
from lackpy_kernel.engines.loop import LoopThread
from lackpy_kernel.engines.notebook import PlanDraft, StepLog, step_from_cell
from lackpy_kernel.engines.turns import (
    TurnLog,
    notebook_agent,
    notebook_replan,
    offer_program,
    run_summary,
)
from lackpy_kernel.errors import (
    GenerationError,
    LackpyError,
    LackpyRuntimeError,
    LackpyValidationError,
    UsageError,
    error_text,
)
from lackpy_kernel.notebook import Bundle, NotebookError, ProgramCell, StreamName, no_input
from lackpy_kernel.notebook.bundles import (
    plan_bundle,
    progress_bundle,
    remote_run_bundle,
    runs_bundle,
    table_bundle,
    turns_bundle,
    uses_comment,
)
from lackpy_kernel.notebook.core import CoreMagics, MagicOptions, parse_magic_options
from lackpy_kernel.notebook.declare import (
    AGENT_OPTIONS,
    AGENT_SUMMARY,
    PLAN_OPTIONS,
    PLAN_REST,
    PLAN_SUMMARY,
    REPLAN_OPTIONS,
    REPLAN_SUMMARY,
    STEP_OPTIONS,
    STEP_SUMMARY,
    Magic,
    PlanCommand,
    declared_magics,
    magic,
    plan_command,
    step_line,
)
from lackpy_kernel.notebook.syntax import parse_param
from lackpy_kernel.run.plain import find_non_plain
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

    The core magics (``%%lackpy``, ``%delegate``, ``%kit``, ...; see
    :mod:`lackpy_kernel.notebook.core`) run on the extension's loop thread against an
    :class:`IPythonPort`; IPython keeps its own ``%who``, ``%reset`` and ``%lsmagic``.
    """

    def __init__(self, shell: InteractiveShell,
                 workspace: str | os.PathLike[str] | None = None) -> None:
        super().__init__(shell)
        for name, (declared, handler) in declared_magics(self).items():
            self.magics["cell" if declared.cell else "line"][name] = handler
        self.workspace = os.fspath(workspace) if workspace is not None else os.getcwd()
        self.service = LackpyService(self.workspace)
        self.port = IPythonPort(shell)
        self.core = CoreMagics(self.port, LackpySession(self.service))
        for name, (declared, _) in self.core.declared.items():
            self.magics["cell" if declared.cell else "line"][name] = self._host(declared)
        self._loop = LoopThread("lackpy-extension-loop", grace=CANCEL_GRACE_S)
        self._closed = False

    def close(self) -> None:
        """Stop the sandbox worker and the loop thread. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            self.core.session.close()
            self.service.close()
        finally:
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

    # -- plans: %%step declares a lackpy cell as a step, %plan runs the plan ----------------

    @functools.cached_property
    def plans(self) -> PlanDraft:
        """The plan this shell's %%step cells declared."""
        return PlanDraft(self.service)

    @magic("step", STEP_SUMMARY, options=STEP_OPTIONS, rest="NAME", cell=True)
    @no_var_expand
    def step(self, line: str, cell: str) -> None:
        declared = _declared("step")
        name, options = step_line(declared, declared.parse(line))
        self._declare(step_from_cell(
            name, cell, kit=options.get("--kit"), writes=options.get("--writes"),
            parallel=bool(options.get("--parallel")), task=options.get("--task"),
            context=options.get("--context")))

    @magic("plan", PLAN_SUMMARY, options=PLAN_OPTIONS, rest=PLAN_REST)
    @no_var_expand
    def plan(self, line: str) -> Any:
        __tracebackhide__ = True
        declared = _declared("plan")
        command = plan_command(declared, declared.parse(line))
        key = command.options.get("--key")
        if command.action == "show":
            return _display(plan_bundle(self.plans.rows(), f"plan {self.plans.name or ''}"))
        if command.action == "gate":
            name, *prompt = command.words
            if not name.isidentifier():
                raise LackpyUsageError(f"name the gate with one name such as review, not {name!r}")
            return self._declare(Step(Approval(" ".join(prompt) or "waiting for approval"),
                                      name=name))
        if command.action == "run":
            plan = self.plans.plan(key=key)
            task = parse_param(f"task={command.word}")[1]
            if command.options.get("--temporal"):
                return self._start_remote(plan, task, command)
            return self._run_live(plan, key, lambda on_step: plan.arun(task, on_step=on_step))
        if command.action in ("resume", "status"):
            remote = self._remote_runner(command.word or None, command)
            if remote is not None:
                return self._remote_action(remote, command)
        if command.action in ("resume", "restart"):
            resume = command.action == "resume"
            plan = self.plans.for_key(command.word, resume=resume)
            run = plan.arun if resume else plan.arestart
            return self._run_live(plan, command.word, lambda on_step: run(on_step=on_step))
        if command.action == "run-many":
            return self._run_many(command, key)
        if command.action == "status":
            return _display(runs_bundle([*self.plans.status(command.word or None),
                                         *self._remote_runs(command.word)]))
        if command.action == "save":
            print(f"saved {self.plans.save(command.word)}")
        elif command.action == "load":
            self.plans.load(command.word)
            _display(plan_bundle(self.plans.rows(), f"plan {command.word}"))
        elif command.action == "drop":
            self.plans.drop(command.word)
        else:
            self.plans.clear()
        return None

    # -- plans on Temporal: the cell ends at once, a display follows the run -----------------

    @functools.cached_property
    def remote(self) -> Any:
        """The runs this shell started on Temporal (a RemoteRuns); MissingExtraError without
        the temporal extra."""
        from lackpy_kernel.engines.temporal import RemoteRuns  # noqa: PLC0415 - optional extra

        return RemoteRuns()

    def _remote_runner(self, key: str | None, command: PlanCommand) -> Any:
        address = command.options.get("--temporal")
        if address is None and (key is None or "remote" not in self.__dict__):
            return None
        return self.remote.runner_for(key or "", address, command.options.get("--task-queue"))

    def _remote_runs(self, key: str) -> list[Any]:
        if key or "remote" not in self.__dict__:
            return []
        return [self._call(self.remote.runner_for(known).status(known))
                for known in self.remote.keys()]

    def _start_remote(self, plan: Plan, task: Any, command: PlanCommand) -> str:
        runner = self._remote_runner(None, command)
        key = self._call(runner.start(plan, task))
        self.remote.remember(key, runner)
        self._follow(runner, key, f"plan on {task!r}, key {key}, on Temporal at {runner.address}")
        return key

    def _remote_action(self, runner: Any, command: PlanCommand) -> None:
        key = command.word
        if command.action == "resume":
            self._call(runner.signal_resume(key))
            self._follow(runner, key, f"resuming {key} on Temporal at {runner.address}")
        elif key:
            run = self._call(runner.status(key))
            _display(remote_run_bundle(f"{key} on Temporal at {runner.address}", run, trace=True))
        else:
            rows = [[name, status] for name, status in self._call(runner.runs())]
            _display(table_bundle(["key", "status on Temporal"], rows))

    def _follow(self, runner: Any, key: str, title: str) -> None:
        handle = display({"text/plain": f"{title}: started"}, raw=True, display_id=True)

        async def follow() -> None:
            try:
                await runner.watch(key, lambda run: handle.update(remote_run_bundle(title, run),
                                                                  raw=True))
            except LackpyError as exc:  # the server went away, no worker answers
                handle.update({"text/plain": f"{title}\n{type(exc).__name__}: "
                                             f"{error_text(exc)}"}, raw=True)

        self._loop.submit(follow()).add_done_callback(_log_failure)

    def _declare(self, step: Step) -> None:
        self.plans.declare(step)
        number = [s.name for s in self.plans.steps].index(step.name) + 1
        _display(plan_bundle([self.plans.rows()[number - 1]],
                             f"step {number} of {len(self.plans.steps)}"))

    def _run_live(self, plan: Plan, key: str | None, run: Any) -> Any:
        __tracebackhide__ = True
        log = StepLog([step.name for step in plan.steps])
        title = {"text/plain": f"plan run{f', key {key}' if key else ''}"}
        handle = display(title, raw=True, display_id=True)

        def on_step(name: str, status: str, ms: float | None) -> None:
            log(name, status, ms)
            handle.update(progress_bundle(title["text/plain"], log.rows()), raw=True)

        def finish() -> None:  # as the kernel does: the live display ends as it began
            handle.update(title, raw=True)
            _display(progress_bundle("", log.rows()))

        try:
            envelope = self._call(run(on_step))
        except KeyboardInterrupt:
            log.interrupted()
            finish()
            print(f"lackpy: interrupted; the plan is paused with a checkpoint: %plan resume "
                  f"{key} continues" if key else "lackpy: interrupted; the plan had no --key, so "
                  "there is no checkpoint to resume", file=sys.stderr)
            raise
        finish()
        if envelope.error is not None and envelope.error.type == "PlanPaused":
            print(f"lackpy: {envelope.error.message}"
                  + (f"; %plan resume {key} continues" if key else ""))
            return None
        return envelope.raise_for_error().payload

    def _run_many(self, command: PlanCommand, key: str | None) -> list[Any]:
        inputs = self.shell.user_ns.get(command.word)
        if not isinstance(inputs, list | tuple):
            raise LackpyUsageError(f"%plan run-many takes the name of a list variable; "
                                   f"{command.word} is {type(inputs).__name__}")
        text = command.options.get("--concurrency")
        concurrency = int(text) if text and text.isdigit() and int(text) > 0 else None
        if text is not None and concurrency is None:
            raise LackpyUsageError(f"--concurrency takes a whole number of at least 1, not "
                                   f"{text!r}")
        plan = self.plans.plan(key=key, fork=key is not None)
        envelopes = self._call(plan.arun_many(list(inputs), concurrency=concurrency))
        rows = [[repr(task), "done" if e.ok else e.error.type,
                 e.payload if e.ok else e.error.message] for task, e in zip(inputs, envelopes,
                                                                             strict=True)]
        _display(table_bundle(["task", "status", "output / error"], rows))
        return envelopes

    # -- agents: %agent lets a model call tools turn by turn, %replan plans rounds ------------

    @magic("agent", AGENT_SUMMARY, options=AGENT_OPTIONS, rest="INTENT")
    @no_var_expand
    def agent(self, line: str) -> Any:
        __tracebackhide__ = True
        parsed = _declared("agent").parse(line)
        options, intent = parsed.options, parsed.rest
        if not intent:
            raise LackpyUsageError(f"what should the agent do? usage: {_declared('agent').usage}")
        agent = notebook_agent(self.service, options.get("--kit"), model=options.get("--model"),
                               provider=options.get("--provider"),
                               max_turns=_whole(options, "--max-turns"),
                               allow_writes=bool(options.get("--allow-writes")))
        with agent:
            envelope = self._run_turns(f"agent: {intent}", "turn", lambda log, update: agent.arun(
                intent, on_event=lambda event: (log(event), update()),
                on_text=lambda piece: (log.text(piece), update())))
        program = offer_program(self.service, agent, intent, envelope.raise_for_error())
        print(f"lackpy: done: {run_summary(envelope)}")
        if program is not None:
            kit = options.get("--kit")
            head = "%%lackpy" + (f" --kit {shlex.quote(kit)}" if kit else "")
            self.shell.set_next_input(f"{head}\n{program.rstrip()}", replace=False)
        return envelope.payload

    @magic("replan", REPLAN_SUMMARY, options=REPLAN_OPTIONS, rest="INTENT")
    @no_var_expand
    def replan(self, line: str) -> Any:
        __tracebackhide__ = True
        parsed = _declared("replan").parse(line)
        options = parsed.options
        key, resume = options.get("--key"), bool(options.get("--resume"))
        intent = parsed.rest
        if not intent and resume and key is not None and self.plans.library.run(key):
            intent = str(self.plans.library.run(key).task)
        if not intent:
            raise LackpyUsageError(f"what should the plan do? usage: {_declared('replan').usage}")
        agent = notebook_replan(
            self.service, options.get("--kit") or self.service.config.kit_default, key=key,
            resume=resume, max_rounds=_whole(options, "--max-rounds"),
            model=options.get("--model"), provider=options.get("--provider"),
            allow_writes=bool(options.get("--allow-writes")))
        with agent:
            envelope = self._run_turns(f"replan: {intent}", "round", lambda log, update: agent.arun(
                intent, on_event=lambda event: (log(event), update())))
        envelope.raise_for_error()
        print(f"lackpy: done: {run_summary(envelope, 'round')}")
        return envelope.payload

    def _run_turns(self, title: str, label: str, run: Any) -> Envelope:
        __tracebackhide__ = True
        log = TurnLog(label)
        handle = display({"text/plain": title}, raw=True, display_id=True)

        def update() -> None:
            handle.update(turns_bundle(title, log.rows(), label), raw=True)

        def finish() -> None:  # as the kernel does: the live display ends as it began
            handle.update({"text/plain": title}, raw=True)
            _display(turns_bundle("", log.rows(), label))

        try:
            envelope = self._call(run(log, update))
        except KeyboardInterrupt:
            log.interrupted()
            finish()
            print(f"lackpy: interrupted in {label} {log.turns}; the tool calls in flight were "
                  f"stopped", file=sys.stderr)
            raise
        finish()
        return envelope

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

    def __init__(self, shell: InteractiveShell) -> None:
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

    def result(self, value: Any) -> None:
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
        return magic not in IPYTHON_LACKS

    def notebook_values(self, names: set[str] | frozenset[str] | None = None
                        ) -> Mapping[str, Any]:
        """Public names holding plain data (all, or ``names``)."""
        namespace = self.shell.user_ns
        hidden = set(self.shell.user_ns_hidden)
        wanted = namespace.keys() if names is None else names & namespace.keys()
        return {name: namespace[name] for name in wanted
                if not name.startswith("_") and name not in hidden
                and find_non_plain(namespace[name]) is None}


def _log_failure(done: concurrent.futures.Future[Any]) -> None:
    if not done.cancelled() and done.exception() is not None:
        log.error("lackpy: following a remote plan run failed", exc_info=done.exception())


def _declared(name: str) -> Magic:
    return declared_magics(LackpyMagics)[name][0]


def _whole(options: dict[str, Any], flag: str) -> int | None:
    text = options.get(flag)
    if text is None:
        return None
    if not str(text).isdigit() or int(text) < 1:
        raise LackpyUsageError(f"{flag} takes a whole number of at least 1, not {text!r}")
    return int(text)


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


def _display(bundle: dict[str, str]) -> None:
    display(bundle, raw=True)


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
