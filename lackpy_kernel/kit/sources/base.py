"""What every tool source shares: its status, grades, the files of its code, the deadline
of the call in progress, and the plain-data check on results."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from typing import Any

from lackpy_kernel.errors import ToolCallError, ToolSourceError

from ..builtin_specs import READ_GRADE, WRITE_GRADE
from ..plain import find_non_plain, not_plain_message
from ..spec import Grade, ToolSpec

GRADES: dict[str, Grade] = {"read": READ_GRADE, "write": WRITE_GRADE}
NOT_LOADED, LOADED, FAILED = "not loaded", "loaded", "failed"
_deadline: ContextVar[float | None] = ContextVar("lackpy_call_deadline", default=None)
_protecting: ContextVar[dict[str, str] | None] = ContextVar("lackpy_protecting", default=None)


@contextmanager
def call_deadline(deadline: float | None) -> Iterator[None]:
    """Calls made inside the block end by ``deadline`` (a ``time.monotonic()`` value, None:
    no deadline), whatever their own timeout: the program that made them stops then."""
    token = _deadline.set(deadline)
    try:
        yield
    finally:
        _deadline.reset(token)


@contextmanager
def protections_added() -> Iterator[dict[str, str]]:
    """What the sources protect inside the block, in this context (path -> source): what a
    tool that runs in the kernel imported from the workspace during a call, so that the
    program that made the call cannot write it either (its request's protected files were
    copied before the call)."""
    added: dict[str, str] = {}
    token = _protecting.set(added)
    try:
        yield added
    finally:
        _protecting.reset(token)


def time_left(limit: float) -> float:
    """``limit`` seconds, or fewer when the call in progress must end sooner (``call_deadline``)."""
    deadline = _deadline.get()
    return limit if deadline is None else max(0.0, min(limit, deadline - time.monotonic()))


@dataclass
class SourceStatus:
    """Where a tool source stands: ``state`` is "not loaded", "loaded" or "failed".

    ``tools`` are the names it registered, ``error`` why it failed, ``problems`` the tools
    it could not offer (a function that cannot be described, a name that is taken) and
    ``warnings`` names that mask a Python builtin or a standard library module.
    """

    name: str
    plugin: str
    origin: str
    state: str = NOT_LOADED
    tools: list[str] = field(default_factory=list)
    error: str | None = None
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether it loaded (possibly with problems in some of its tools)."""
        return self.state == LOADED

    def to_dict(self) -> dict[str, Any]:
        """Plain data, for JSON."""
        return {**asdict(self), "ok": self.ok}


class ToolSource:
    """The base of the configured sources: a name, settings, a status; ``load`` lists the
    tools (raising ToolSourceError when the source cannot be used) and ``resolve`` gives a
    tool's callable. Subclasses set ``plugin`` and implement ``origin``, ``_load`` and
    ``resolve``."""

    plugin = ""

    def __init__(self, name: str, settings: Mapping[str, Any],
                 protected: dict[str, str] | None = None) -> None:
        self.name = name
        self.settings = dict(settings)
        self.status = SourceStatus(name, self.plugin, self.origin)
        # The files and folders of the source's code in the workspace, which programs must
        # not rewrite, each with the source it is code of (shared by the sources of a
        # workspace; see ToolSources.protected).
        self.protected = protected if protected is not None else {}

    @property
    def origin(self) -> str:
        """What the source loads from, as people read it (a path, a module, a command)."""
        raise NotImplementedError

    @property
    def label(self) -> str:
        """``tool source 'NAME' (plugin: origin)``, for messages."""
        return f"tool source {self.name!r} ({self.plugin}: {self.origin})"

    def load(self) -> list[ToolSpec]:
        """The source's tool specs; records the outcome in ``status``.

        Raises ToolSourceError, naming the source and what to do, when it cannot be used.
        """
        self.status.problems.clear()
        try:
            specs = self._load()
        except ToolSourceError as exc:
            self.status.state, self.status.error = FAILED, str(exc)
            raise
        self.status.state, self.status.error = LOADED, None
        return specs

    def _load(self) -> list[ToolSpec]:
        """The specs, recording per-tool problems in ``status``; raises ToolSourceError."""
        raise NotImplementedError

    def resolve(self, spec: ToolSpec) -> Callable[..., Any]:
        """The callable behind one of this source's specs."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the source holds (a server); it may load again afterwards."""

    def error(self, problem: str) -> ToolSourceError:
        """A ToolSourceError saying ``problem`` about this source."""
        return ToolSourceError(f"{self.label}: {problem}")

    def grade_of(self, tool: str, default: str) -> Grade:
        """The grade fields of ``tool``: its override, else the source's ``grade``, else
        ``default``."""
        override = self.overrides.get(tool, {}).get("grade")
        return GRADES[override or self.settings.get("grade") or default].copy()

    @property
    def overrides(self) -> dict[str, dict[str, Any]]:
        """Per-tool settings: tool -> {grade, where, timeout}."""
        return dict(self.settings.get("overrides") or {})

    def protect(self, workspace: str, paths: Iterable[str]) -> None:
        """Add those of ``paths`` that lie inside ``workspace`` (a real path), as real paths,
        to ``protected``, and each one's folder (its real path and a separator: every file
        under it, see ``Workspace``), whether or not the file exists yet."""
        added = _protecting.get()
        for path in paths:
            real = os.path.realpath(path)
            if os.path.commonpath([workspace, real]) != workspace:
                continue
            for entry in (real, os.path.join(os.path.dirname(real), "")):
                if entry not in self.protected:
                    self.protected[entry] = self.label
                    if added is not None:
                        added[entry] = self.label

    def unused_overrides(self, offered: set[str]) -> list[str]:
        """A problem for each override that names a tool the source does not offer."""
        return [f"overrides names {tool!r}, which this source does not offer "
                f"(it offers: {', '.join(sorted(offered)) or 'nothing'})"
                for tool in self.overrides if tool not in offered]


def plain_results(fn: Callable[..., Any], tool: str, source: str) -> Callable[..., Any]:
    """``fn``, refusing any result that is not plain data with a ToolCallError naming the
    tool and its source."""

    @functools.wraps(fn)
    def checked(*args: Any, **kwargs: Any) -> Any:
        result = fn(*args, **kwargs)
        bad = find_non_plain(result)
        if bad is not None:
            raise ToolCallError(not_plain_message(tool, source, bad))
        return result

    return checked
