"""Step, a plan's unit, and the lackpy targets a step can run: Program and Delegate."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lackpy_kernel.kit import Kit

from ._sentinels import from_prev

__all__ = ["Approval", "Delegate", "Program", "Step", "target_kind", "target_label"]


@dataclass(frozen=True)
class Program:
    """A lackpy program as a step: it sees ``task`` and ``context`` as parameters, and its
    last expression is the step's output. ``kit`` defaults to the plan's kit."""

    source: str
    kit: Kit = None


@dataclass(frozen=True)
class Delegate:
    """An intent as a step: the inference tiers write the program (templates first, so the
    ratchet applies), which then runs with ``task`` and ``context`` as parameters."""

    intent: str
    kit: Kit = None


@dataclass(frozen=True)
class Approval:
    """A gate as a step: the first time a run reaches it, the run pauses (``PlanPaused`` with
    ``prompt``); resuming the run is the approval, and the gate passes its task on."""

    prompt: str = "waiting for approval"


@dataclass
class Step:
    """One node of a Plan.

    ``target`` is what runs: the name of a tool in the plan's kit (called with the task), a
    Python callable (called with the task, and ``context=`` when the step has one), a
    ``Program``, a ``Delegate``, an ``Approval`` or an ``Agent`` (run on the task through
    ``agent.as_tool``: its answer is the output). ``task`` and ``context`` say where the inputs come from
    (sentinels such as ``from_prev``, or literal values; a list of contexts is joined as text
    with blank lines). ``writes`` names the Store key the output is saved under. Consecutive
    ``parallel=True`` steps form one band that runs concurrently. ``routes`` (ordered
    ``{step name: predicate(output)}``, first true wins) or ``routes_by`` (a field of the
    output naming the next step) send the plan elsewhere; without ``after_branches`` a route is
    a detour, after which the plan goes on from the routed-to step's place. ``name`` defaults
    to the tool's or callable's name (``program`` / ``delegate`` for those targets).
    ``input`` and ``output`` are checked when they are not ``Any`` (``output=str``, the
    default, accepts any output, as an unstructured answer).
    """

    target: Any
    task: Any = field(default_factory=lambda: from_prev)
    context: Any = None
    writes: str | None = None
    input: Any = Any
    output: Any = str
    parallel: bool = False
    name: str = None  # type: ignore[assignment]  # None: __post_init__ names it after its target
    routes: dict[str, Callable[[Any], Any]] | None = None
    routes_by: str | None = None
    after_branches: str | None = None

    def __post_init__(self) -> None:
        if callable(getattr(self.target, "as_tool", None)):  # an Agent runs as its tool
            self.target = self.target.as_tool(self.name or self.target.name or "agent")
        if self.name is None:
            self.name = default_step_name(self.target)


def default_step_name(target: Any) -> str:
    """The name a step gets from its target."""
    if isinstance(target, str):
        return target
    if isinstance(target, Program):
        return "program"
    if isinstance(target, Delegate):
        return "delegate"
    if isinstance(target, Approval):
        return "approval"
    return getattr(target, "__name__", None) or type(target).__name__


def target_kind(target: Any) -> str:
    """``program``, ``delegate``, ``approval``, ``tool`` or ``callable`` (else ``unknown``)."""
    if isinstance(target, Program):
        return "program"
    if isinstance(target, Delegate):
        return "delegate"
    if isinstance(target, Approval):
        return "approval"
    if isinstance(target, str):
        return "tool"
    return "callable" if callable(target) else "unknown"


def target_label(target: Any) -> str:
    """A short description of a target for messages and tables."""
    kind = target_kind(target)
    if kind == "program":
        lines = [line.strip() for line in target.source.splitlines() if line.strip()]
        first = lines[0] if lines else ""
        more = "..." if len(first) > 40 or len(lines) > 1 else ""
        return f"Program({first[:40]!r}{more})"
    if kind == "delegate":
        return f"Delegate({target.intent!r})"
    if kind == "approval":
        return f"Approval({target.prompt!r})"
    if kind == "tool":
        return f"tool {target!r}"
    return f"callable {getattr(target, '__qualname__', None) or default_step_name(target)}"
