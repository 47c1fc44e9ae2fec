"""Kibitzer (the optional extra ``kibitzer``): a ``KibitzerSession`` for the workspace that
enforces its mode on tool calls, tracks them and coaches, on when the package is installed
and ``[kibitzer] enabled`` (default: on when installed).

A :class:`Watch` stands between lackpy and the session: every tool call goes through
``before_call`` (a refusal fails that call with a ToolCallError giving Kibitzer's reason) and
``after_call``; a program through ``validate_program`` before it runs; a generation through
``report_generation``; ``get_prompt_hints`` and ``get_correction_hints`` reach the model
tiers' prompts and the correction chain. Calls reach Kibitzer in its own vocabulary (Claude
Code's tool names): ``write_file`` as ``Write``, ``edit_file`` as ``Edit``, ``read_file`` as
``Read``, ``find_files`` as ``Glob``, each path as ``file_path``; other tools under their own
names, their arguments summarised as the trace keeps them.

Where a write is judged: a program's file changes are staged and land only at the commit,
outside the program's process, where :meth:`Watch.write_refusal` puts every staged path to
``before_call`` as a ``Write`` (Kibitzer's safety floor, then its mode's writable paths),
whatever tool staged it. When no person is asked, the sandbox's worker first applies
Kibitzer's own path guard itself (:meth:`Watch.path_guard`, taken as the run starts): a
commit it allows whole lands without a round trip to the kernel; any other is put to
``before_call`` as above. So the sandbox asks Kibitzer nothing while a program runs (a
question from there would be a coach's check, not a wall, and cost a round trip of about a
millisecond and a half); the tools that run in the kernel's process ask before each call
(:func:`watched_kit`). ``after_call`` hears of the run's calls from its trace when the run
comes back (the first ``MAX_REPORTED``: Kibitzer's event log costs about a millisecond a
call). The seed's ``make_traced(..., kibitzer_session=...)`` asks and tells Kibitzer of
every call as it is made.

Kibitzer's state is saved on the watch's thread after the answers a cell waits for, as a job
the cell does not wait for (the next question comes after it; :meth:`Watch.close`, and the
interpreter's exit, wait for it). A Kibitzer that raises or is slow never breaks a cell: its
failure is said once (a ``notice``) and the work goes on without its answer; one that takes
longer than ``timeout`` seconds is set aside for the rest of the session. Kibitzer's Context7 look-ups
are turned off: they would send a program's errors to context7.com.
"""

from __future__ import annotations

import ast
import atexit
import copy
import functools
import itertools
import queue
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lackpy_kernel.errors import ToolCallError
from lackpy_kernel.kit import ResolvedKit
from lackpy_kernel.kit.spec import CHILD

if TYPE_CHECKING:  # imported where a question is asked: the sandbox never asks one
    from concurrent.futures import Future

__all__ = ["MAX_SUGGESTIONS", "Watch", "classify_failure", "gated", "watched_kit", "watching"]

TIMEOUT_SECONDS = 5.0
# Seconds without a question before Kibitzer's state is saved: a save replaces a file and
# writes a database (milliseconds), and a question queued behind it waited for it, so a run
# of programs that call tools paid for a save each.
SAVE_QUIET = 0.5
MAX_SUGGESTIONS = 20  # kept for %kibitzer
MAX_HINTS = 5  # prompt hints put into one prompt
MAX_NOTES = 3  # suggestions shown under one cell
# the calls of one run Kibitzer hears of: its event log costs about 1 ms a call
MAX_REPORTED = 100
HINT_CHARS = 300
REASON_CHARS = 1000  # of a refusal's reason, which may name a path or an argument
# lackpy's tool -> Kibitzer's name for it, and the argument its path is in
VOCABULARY: dict[str, tuple[str, str | None]] = {
    "write_file": ("Write", "path"), "edit_file": ("Edit", "path"), "read_file": ("Read", "path"),
    "find_files": ("Glob", None), "find_definitions": ("FindDefinitions", None),
    "find_callers": ("FindCallers", None),
}


# a question for the thread (no Future: a job the asker does not wait for), and whether what
# it does may change the state Kibitzer saves
Job = tuple[Callable[..., Any], tuple[Any, ...], "Future[Any] | None", bool]


def _stderr(message: str) -> None:
    print(f"lackpy: {message}", file=sys.stderr)


class Watch:
    """A KibitzerSession behind lackpy's tool calls, programs and generations, every call into
    it bounded by ``timeout`` and guarded (see the module). ``suggestions`` keeps its latest
    coaching (at most ``MAX_SUGGESTIONS``)."""

    def __init__(self, session: Any, *, notice: Callable[[str], None] = _stderr,
                 timeout: float = TIMEOUT_SECONDS) -> None:
        self.session = session
        self.timeout = timeout
        self.suggestions: deque[str] = deque(maxlen=MAX_SUGGESTIONS)
        self._fresh: deque[str] = deque(maxlen=MAX_NOTES)  # since the last run's notes
        self._notice = notice
        self._names: Mapping[str, str] = {}  # alias -> the tool's name
        self._said: set[str] = set()
        # shared with for_kit's copies; "asked": questions put to the thread that may change
        # Kibitzer's state, "ran": those it ran, "saved": "ran" at the last save; "owner": the
        # watch closed at exit
        self._shared: dict[str, Any] = {"off": False, "thread": None, "asked": 0, "ran": 0,
                                        "saved": 0, "owner": self}
        self._lock = threading.Lock()
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()

    @classmethod
    def open(cls, workspace: Path, *, enabled: bool | None = None, mode: str | None = None,
             notice: Callable[[str], None] = _stderr) -> Watch | None:
        """The workspace's watch: None when ``enabled`` is False, or it is None and the
        package is not installed (True without it is said through ``notice``)."""
        if enabled is False:
            return None
        try:
            from kibitzer import KibitzerSession  # noqa: PLC0415 - the optional extra
        except ImportError:
            if enabled:
                notice("[kibitzer] enabled = true needs the kibitzer extra: "
                       "pip install 'lackpy-kernel[kibitzer]'")
            return None
        watch = cls(KibitzerSession(project_dir=workspace), notice=notice)
        watch._shared["load"] = mode or ""  # loaded at the first question (it makes .kibitzer/)
        return watch

    def _load(self, mode: str) -> None:
        self.session.load()
        self.session.config.setdefault("docs", {})["context7"] = False
        if mode and mode != self.session.mode:
            changed = self.session.change_mode(mode, reason="[kibitzer] mode in .lackpy/config.toml")
            if "error" in changed:
                self._say("mode", f"[kibitzer] mode: {changed['error']}")

    @property
    def mode(self) -> str:
        """Kibitzer's mode now ("?" when it cannot say)."""
        return str(self._ask("mode", lambda: self.session.mode, default="?"))

    def for_kit(self, resolved: ResolvedKit) -> Watch:
        """This watch, naming each of ``resolved``'s aliases by its tool's name."""
        bound = copy.copy(self)
        bound._names = {alias: spec.name for alias, spec in resolved.tools.items()}
        return bound

    # -- tool calls -------------------------------------------------------------

    def before_call(self, tool: str, args: Mapping[str, Any]) -> None:
        """Ask Kibitzer whether ``tool`` may be called with ``args`` (by parameter name).
        Raises ToolCallError with its reason when it refuses."""
        name, given = self._vocabulary(tool, args)
        answer = self._ask("before_call", self.session.before_call, name, given)
        refused = self._refusal(f"{tool}()", answer)
        if refused is not None:
            raise ToolCallError(refused)
        self._keep(answer)

    def after_call(self, tool: str, args: Mapping[str, Any], success: bool,
                   error: str | None = None) -> None:
        """Tell Kibitzer a call of ``tool`` ended (``error`` says why it failed)."""
        name, given = self._vocabulary(tool, args)
        self._keep(self._ask("after_call", self.session.after_call, name, given, success,
                             None if success else {"error": str(error or "failed")[:HINT_CHARS]}))

    def after_run(self, entries: Iterable[Any]) -> None:
        """``after_call`` for the calls of a run's trace (``TraceEntry``s; the first
        ``MAX_REPORTED``: one trip to the watch's thread, none for a run without calls), then
        Kibitzer's state saved after it if a question since the last save may have changed
        it (not waited for)."""
        heard = [(*self._vocabulary(entry.tool, entry.args), entry.success,
                  None if entry.success else {"error": str(entry.error or "failed")[:HINT_CHARS]})
                 for entry in itertools.islice(entries, MAX_REPORTED)]

        if heard:
            for answer in self._ask("after_call", lambda: [self.session.after_call(*call)
                                                           for call in heard], default=[]):
                self._keep(answer)
        self._save_later()

    def _vocabulary(self, tool: str, args: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        real = self._names.get(tool, tool)
        name, path = VOCABULARY.get(real, (real, None))
        if path is not None:
            return name, {"file_path": _bounded(args.get(path, ""))}
        return name, {str(key): _bounded(value) for key, value in list(args.items())[:16]}

    # -- programs ---------------------------------------------------------------

    def program_refusal(self, tree: ast.Module | None, resolved: ResolvedKit) -> str | None:
        """Why Kibitzer refuses the program ``tree`` (validated, with ``resolved``'s tools)
        before it runs, or None: the calls whose path is a literal, against its mode's
        writable paths, and their tools' grades against the mode's ceiling. A program
        without such calls is not sent (Kibitzer has nothing to judge; the files it stages
        are still judged at the commit)."""
        if tree is None:
            return None
        named = (self.for_kit(resolved)._vocabulary(alias, args)
                 for alias, args in literal_calls(tree, resolved.tools))
        # The first MAX_REPORTED distinct calls: a program of many literal calls must not make
        # the judging slower than ``timeout``, which would set Kibitzer aside (every staged
        # file is still judged at the commit).
        distinct = {repr(call): {"tool": call[0], "input": call[1]} for call in named}
        calls = list(itertools.islice(distinct.values(), MAX_REPORTED))
        if not calls:  # validate_program judges calls only (no call budget is sent): no trip
            return None
        tools = [{"name": self._vocabulary(alias, {})[0], "grade": (spec.grade_w, spec.effects_ceiling)}
                 for alias, spec in resolved.tools.items()]

        def judge() -> Any:  # one trip to the watch's thread: each costs the cell a wake-up
            self.session.register_tools(tools)
            policy = self.session.get_mode_policy() or {}
            ceiling = (policy.get("max_grade_w"), policy.get("max_grade_d"))
            return self.session.validate_program({
                "calls": calls, "grade_ceiling": ceiling if None not in ceiling else None})

        # register_tools keeps the grades in memory, validate_program only checks: no save
        return self._refusal("the program", self._ask("validate_program", judge, keeps=True))

    def write_refusal(self, paths: Iterable[str]) -> str | None:
        """Why Kibitzer refuses the writes of ``paths`` (every file a program staged, whatever
        tool staged it: judged at the commit, each as ``before_call`` judges a ``Write``: its
        safety floor, then its mode's writable paths), or None."""
        writes = [{"file_path": path} for path in dict.fromkeys(paths)]

        def judge(chunk: list[dict[str, str]]) -> Any:  # the first refusal, or None
            for given in chunk:
                answer = self.session.before_call("Write", given)
                if answer is not None and getattr(answer, "denied", False):
                    return answer
            return None

        for start in range(0, len(writes), MAX_REPORTED):  # every path, a trip per hundred
            # keeps: before_call changes nothing Kibitzer saves for a Write (a refusal goes
            # to its event log as it is made)
            refused = self._refusal("the program's file changes", self._ask(
                "before_call", judge, writes[start:start + MAX_REPORTED], keeps=True))
            if refused is not None:
                return refused
        return None

    def _refusal(self, what: str, answer: Any) -> str | None:
        """How lackpy says that Kibitzer refused ``what`` when its ``answer`` is a denial
        (its reason bounded: it may name a path or an argument), else None."""
        if answer is None or not getattr(answer, "denied", False):
            return None
        reason = str(getattr(answer, "reason", "") or "no reason given")[:REASON_CHARS]
        return f"Kibitzer ({self.mode} mode) refused {what}: {reason}"

    def path_guard(self) -> dict[str, Any] | None:
        """Kibitzer's guard of written paths as plain data (``writable``: its mode's paths,
        ``floor``: its safety floor's settings, ``source``: the file of the path guard module
        this process runs), for the process that commits a program's staged files to apply
        itself (``lackpy_kernel.run.path_guard``); None when Kibitzer cannot say (every
        commit is then put to :meth:`write_refusal`)."""
        def guard() -> dict[str, Any]:
            writable = self.session.get_mode_policy().get("writable")
            floor = self.session.config.get("floor", {})
            return {"writable": [str(path) for path in writable],
                    "floor": copy.deepcopy(dict(floor)),
                    "source": str(self.session.path_guard.__file__)}

        answer = self._ask("get_mode_policy", guard, keeps=True)
        return answer if isinstance(answer, dict) else None

    # -- generations --------------------------------------------------------------

    def report_generation(self, report: Mapping[str, Any]) -> None:
        """Record a generation's outcome (intent, program, provider, success, failure_mode...)."""
        self._ask("report_generation", self.session.report_generation, dict(report))

    def prompt_hints(self, model: str | None = None) -> list[str]:
        """What Kibitzer would tell a model's prompt, from the failures it saw (at most
        ``MAX_HINTS`` lines)."""
        hints = self._ask("get_prompt_hints", self.session.get_prompt_hints, model, default=[])
        return [str(hint.get("content", ""))[:HINT_CHARS] for hint in hints[:MAX_HINTS]
                if isinstance(hint, Mapping) and hint.get("content")]

    def correction_hint(self, errors: list[str], model: str | None, attempt: int) -> str | None:
        """A line for the correction chain from Kibitzer's signal for these ``errors`` (the
        failure mode's fix, and how often this model failed so), or None."""
        mode = classify_failure(errors)
        if mode is None:
            return None
        signal = self._ask("get_correction_hints", self.session.get_correction_hints, mode,
                           model, attempt, default={})
        if not isinstance(signal, Mapping) or not signal.get("known"):
            return None
        try:
            from kibitzer.failure_modes import HINT_MAP  # noqa: PLC0415 - the optional extra
        except ImportError:
            return None
        line = str(HINT_MAP.get(mode, {}).get("content", "")) or None
        history = signal.get("history")
        if line and isinstance(history, Mapping) and history.get("total"):
            line += f" (this model failed so {history.get('count')} of its last " \
                    f"{history.get('total')} programs)"
        return line

    # -- guarding -----------------------------------------------------------------

    def _ask(self, what: str, call: Callable[..., Any], *args: Any, default: Any = None,
             keeps: bool = False) -> Any:
        """``call(*args)`` on the watch's thread within ``timeout`` (``keeps``: it changes
        nothing Kibitzer saves); ``default`` when it raises (said once) or is late (said, and
        Kibitzer is set aside)."""
        if self._shared["off"]:
            return default
        from concurrent.futures import Future

        self._start()
        future: Future[Any] = Future()
        loading: Future[Any] | None = None
        with self._lock:  # asked from any thread that runs a tool or a cell
            # Kibitzer loads before the first question: the one who takes the load queues it
            # ahead of its own, inside the lock, so no other question can come before it
            if isinstance(load := self._shared.pop("load", None), str):
                loading = Future()
                self._shared["asked"] += 1
                self._jobs.put((self._load, (load,), loading, True))
            self._shared["asked"] += not keeps
            self._jobs.put((call, args, future, not keeps))
        if loading is not None:
            self._answer("load", loading, None)
        return self._answer(what, future, default)

    def _answer(self, what: str, future: Future[Any], default: Any) -> Any:
        """The result of the question ``what`` (``future``) within ``timeout``; ``default``
        when it raised (said once) or is late (said, and Kibitzer is set aside)."""
        from concurrent.futures import TimeoutError as FutureTimeout

        if self._shared["off"]:
            return default
        try:
            return future.result(timeout=self.timeout)
        except FutureTimeout:
            self._shared["off"] = True
            self._say("slow", f"Kibitzer took over {self.timeout:g} s to answer ({what}); "
                              "lackpy goes on without it in this session")
        except Exception as exc:
            self._say(what, f"Kibitzer failed ({what}: {type(exc).__name__}: {exc}); "
                            "lackpy goes on without its answer")
        return default

    def _save_later(self) -> None:
        """Queue a save of Kibitzer's state on the watch's thread, after the questions asked
        so far (none when it was saved since, or Kibitzer is set aside); not waited for."""
        if self._shared["asked"] > self._shared["saved"] and not self._shared["off"]:
            self._start()
            self._jobs.put((self._save, (), None, False))

    def _save(self) -> None:
        """Save Kibitzer's state (on the watch's thread)."""
        ran = self._shared["ran"]
        self.session.save()
        self._shared["saved"] = ran

    def close(self) -> None:
        """Save Kibitzer's state if a question was asked since, and stop the watch's thread
        once it has done what it was given, waiting for it up to ``timeout`` (a later
        question starts another)."""
        self._save_later()
        with self._lock:
            thread = self._shared["thread"]
            if thread is not None:
                self._shared["thread"] = None
                self._jobs.put(None)
                atexit.unregister(self._shared["owner"].close)
        if thread not in (None, threading.current_thread()) and not self._shared["off"]:
            thread.join(timeout=self.timeout)

    def _start(self) -> None:
        with self._lock:
            if self._shared["thread"] is None:
                thread = threading.Thread(target=self._serve, name="lackpy-kibitzer", daemon=True)
                thread.start()
                self._shared["thread"] = thread
                atexit.register(self._shared["owner"].close)  # its last save reaches disk

    def _serve(self) -> None:
        """Do the jobs queued, in order, until told to stop; a save waits until no job has
        come for ``SAVE_QUIET`` seconds (or the stop), so that no question waits for it."""
        save: Job | None = None  # a save asked for, waiting for a quiet moment
        while True:
            try:
                job = self._jobs.get(timeout=None if save is None else SAVE_QUIET)
            except queue.Empty:  # quiet: the save now
                assert save is not None
                job, save = save, None
                self._do(job)
                continue
            if job is None:
                if save is not None:
                    self._do(save)
                return
            if job[0] == self._save:
                save = job
            else:
                self._do(job)

    def _do(self, job: Job) -> None:
        call, args, future, counts = job
        self._shared["ran"] += counts
        try:
            result = call(*args)
        except BaseException as exc:  # handed to the caller, which says so once
            if future is None:
                self._say("save", f"Kibitzer failed (save: {type(exc).__name__}: {exc}); "
                                  "lackpy goes on without saving its state")
            else:
                future.set_exception(exc)
        else:
            if future is not None:
                future.set_result(result)

    def _say(self, key: str, message: str) -> None:
        if key not in self._said:
            self._said.add(key)
            self._notice(message[:1000])

    def _keep(self, answer: Any) -> None:
        context = getattr(answer, "context", "") if answer is not None else ""
        for line in str(context or "").splitlines():
            if line.strip():
                self.suggestions.append(line.strip()[:HINT_CHARS])
                self._fresh.append(line.strip()[:HINT_CHARS])

    def take_fresh(self) -> list[str]:
        """The suggestions made since this was last asked (at most ``MAX_NOTES``)."""
        fresh = list(self._fresh)
        self._fresh.clear()
        return fresh

    def describe(self) -> str:
        """Kibitzer's mode and latest suggestions, for ``%kibitzer``."""
        lines = [f"Kibitzer: {self.mode} mode"
                 + (" (set aside: it was too slow)" if self._shared["off"] else "")]
        lines += [f"  {suggestion}" for suggestion in self.suggestions] or ["  no suggestions yet"]
        return "\n".join(lines)


def _bounded(value: Any) -> Any:
    """A scalar as it is, a text up to ``HINT_CHARS``, anything else by its type."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return value[:HINT_CHARS]
    return f"<{type(value).__name__}>"


_watches: dict[int, Watch] = {}  # of the KibitzerSessions given as they are (the last few)


def watching(session: Any) -> Watch:
    """``session`` as a Watch: itself, or a KibitzerSession put behind one (the same one
    each time)."""
    if isinstance(session, Watch):
        return session
    watch = _watches.get(id(session))
    if watch is None or watch.session is not session:
        if len(_watches) >= MAX_SUGGESTIONS:
            _watches.clear()
        watch = _watches[id(session)] = Watch(session)
    return watch


Ask = Callable[[str, tuple[Any, ...], dict[str, Any]], None]  # (alias, args, kwargs)


def watched_kit(resolved: ResolvedKit, watch: Watch) -> ResolvedKit:
    """``resolved`` under ``watch``: each tool that runs in the kernel's process asks it
    before each call (a refusal fails the call); the rest, which run where the program
    runs, stage their writes, which :meth:`Watch.write_refusal` judges at the commit."""
    bound = watch.for_kit(resolved)

    def ask(alias: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        spec = resolved.tools.get(alias)
        names = [arg.name for arg in spec.args] if spec is not None else []
        named = {names[i] if i < len(names) else f"arg{i}": value for i, value in enumerate(args)}
        bound.before_call(alias, {**named, **kwargs})

    return replace(resolved, callables={
        alias: fn if resolved.tools[alias].where == CHILD else gated(alias, fn, ask)
        for alias, fn in resolved.callables.items()})


def gated(alias: str, fn: Callable[..., Any], ask: Ask) -> Callable[..., Any]:
    """``fn`` calling ``ask`` first; what ``ask`` raises (Kibitzer's refusal) fails the call."""

    @functools.wraps(fn)
    def asked(*args: Any, **kwargs: Any) -> Any:
        ask(alias, args, kwargs)
        return fn(*args, **kwargs)

    return asked


def literal_calls(tree: ast.Module, tools: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The calls of ``tools`` in ``tree`` whose first argument is a literal string, with it
    as ``path`` (or ``pattern``)."""
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in tools and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            spec = tools[node.func.id]
            first = spec.args[0].name if getattr(spec, "args", None) else "path"
            found.append((node.func.id, {first: node.args[0].value}))
    return found


_FAILURE_SIGNS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("stdlib_leak", ("the name 'open' is forbidden", "Import is not allowed",
                     "ImportFrom is not allowed")),
    ("implement_not_orchestrate", ("FunctionDef is not allowed", "ClassDef is not allowed")),
    ("syntax_artifact", ("syntax error",)),
    ("key_hallucination", ("KeyError",)),
    ("path_prefix", ("FileNotFoundError", "no such file")),
)


def classify_failure(errors: Iterable[str]) -> str | None:
    """The failure mode (lackpy's taxonomy, ``lackpy.lang.failure_modes``) these errors show,
    or None when none fits."""
    text = "\n".join(errors)
    for mode, signs in _FAILURE_SIGNS:
        if any(sign in text for sign in signs):
            return mode
    return None
