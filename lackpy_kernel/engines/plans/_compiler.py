"""The plan compiler: every check a plan must pass before it runs, each with a 'did you mean'."""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import re
import typing
from collections.abc import Callable, Container, Sequence
from typing import Any

from lackpy_kernel.errors import KitError, PlanCompileError, error_text
from lackpy_kernel.kit import Kit
from lackpy_kernel.lang import ALLOWED_BUILTINS
from lackpy_kernel.run import summarize
from lackpy_kernel.service import LackpyService

from ._sentinels import FromParallelAll, FromStep, Sentinel
from ._step import Step, target_kind

__all__ = ["PROGRAM_PARAMS", "compile_steps", "kit_tools", "output_fields"]

PROGRAM_PARAMS = ("task", "context")
MAX_SUGGESTIONS = 10  # problems that get a "did you mean": each searches every name once
_UNKNOWN_NAME = re.compile(r"unknown (?:name|function) '([^']+)'")


def compile_steps(steps: Sequence[Step], *, kit: Kit, service: Callable[[], LackpyService],
                  checkpoint_key: str | None = None) -> None:
    """Raise PlanCompileError listing every problem of ``steps``; return None when there is none.

    ``service`` is called (once, and only when a step needs a kit) for the LackpyService that
    resolves kits and validates programs.
    """
    problems = _Checker(list(steps), kit, service, checkpoint_key).problems()
    if problems:
        count = f"{len(problems)} problems" if len(problems) > 1 else "1 problem"
        raise PlanCompileError(f"the plan cannot run ({count}):\n" +
                               "\n".join(f"  - {problem}" for problem in problems))


def kit_tools(service: LackpyService, kit: Kit) -> dict[str, str]:
    """The kit's tools as ``{alias: tool name}``; KitError when it cannot be resolved."""
    return {alias: spec["name"] for alias, spec in service.kit_info(kit)["tools"].items()}


def output_fields(kind: Any) -> list[str] | None:
    """The field names of a TypedDict or dataclass type, or None for any other type."""
    if isinstance(kind, type) and typing.is_typeddict(kind):
        return list(typing.get_type_hints(kind))
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        return [f.name for f in dataclasses.fields(kind)]
    return None


def did_you_mean(name: str, candidates: Sequence[str], what: str = "") -> str:
    """'; did you mean 'x'?' for the closest candidates, else the list of them."""
    close = difflib.get_close_matches(name, list(candidates), n=3, cutoff=0.7)
    if close:
        return "; did you mean " + " or ".join(repr(c) for c in close) + "?"
    if candidates:
        listed = ", ".join(repr(c) for c in list(candidates)[:20])
        return f"; did you mean one of the {what or 'names'}: {listed}?"
    return ""


class _Checker:
    def __init__(self, steps: list[Step], kit: Kit, service: Callable[[], LackpyService],
                 checkpoint_key: str | None) -> None:
        self.steps = steps
        self.kit = kit
        self.service = service
        self.checkpoint_key = checkpoint_key
        # "" for an argument that is not a Step: problems() says what it is instead
        self.names = [step.name if isinstance(step, Step) else "" for step in steps]
        self.position = {name: index for index, name in reversed(list(enumerate(self.names)))
                         if isinstance(name, str)}
        self.found: list[str] = []
        self.suggested = 0

    def suggest(self, name: str, candidates: Sequence[str], what: str = "") -> str:
        """``did_you_mean`` for the first MAX_SUGGESTIONS problems, then nothing: a plan of
        thousands of broken steps costs one search of its names per problem, not more."""
        self.suggested += 1
        return did_you_mean(name, candidates, what) if self.suggested <= MAX_SUGGESTIONS else ""

    def problems(self) -> list[str]:
        if not self.steps:
            return ["a plan needs at least one step; did you mean Plan(Step(target), ...)?"]
        self._check_names()
        for index, step in enumerate(self.steps):
            if not isinstance(step, Step):
                self.found.append(f"argument {index + 1} is {type(step).__name__}, not a Step; "
                                  f"did you mean Step({step!r})?")
                continue
            self._check_target(step)
            self._check_references(index, step)
            self._check_routing(step)
            self._check_writes(step)
        return self.found

    # -- names ------------------------------------------------------------------

    def _check_names(self) -> None:
        seen: dict[str, int] = {}
        for index, (step, name) in enumerate(zip(self.steps, self.names, strict=True)):
            if not isinstance(step, Step):
                continue
            if not isinstance(name, str) or not name:
                self.found.append(f"step {index + 1} has no name; did you mean name='step{index + 1}'?")
                continue
            if name in seen:
                self.found.append(
                    f"two steps are named {name!r} (steps {seen[name] + 1} and {index + 1}); "
                    f"did you mean name={_free_name(name, seen)!r} for step {index + 1}?")
            seen.setdefault(name, index)

    # -- targets ----------------------------------------------------------------

    def _check_target(self, step: Step) -> None:
        kind = target_kind(step.target)
        if kind == "unknown":
            self.found.append(
                f"step {step.name!r}: its target {step.target!r} is not a tool name, a callable, a "
                f"Program, a Delegate or an Approval; did you mean Program({step.target!r})?")
        elif kind == "tool":
            self._check_tool(step)
        elif kind == "callable":
            self._check_callable(step)
        elif kind == "program":
            self._check_program(step)
        elif kind == "delegate":
            self._check_delegate(step)
        elif not isinstance(step.target.prompt, str):
            self.found.append(f"step {step.name!r}: Approval's prompt is {step.target.prompt!r}; "
                              f"did you mean Approval('publish the report?')?")

    def _kit_of(self, step: Step, own: Kit = None) -> dict[str, str] | None:
        chosen = own if own is not None else self.kit
        try:
            return kit_tools(self.service(), chosen)
        except KitError as exc:
            self.found.append(f"step {step.name!r}: its kit cannot be used: {error_text(exc)}")
            return None

    def _check_tool(self, step: Step) -> None:
        tools = self._kit_of(step)
        if tools is not None and step.target not in tools:
            self.found.append(
                f"step {step.name!r}: no tool {step.target!r} in the plan's kit"
                + self.suggest(step.target, list(tools), "kit's tools"))

    def _check_callable(self, step: Step) -> None:
        try:
            signature = inspect.signature(step.target)
        except (TypeError, ValueError):
            return  # builtins without a signature: called as they are
        arguments = ("task",) if step.context is None else ("task", "context")
        try:
            if step.context is None:
                signature.bind(None)
            else:
                signature.bind(None, context=None)
        except TypeError as exc:
            self.found.append(
                f"step {step.name!r}: its callable cannot be called with "
                f"({', '.join(arguments)}): {exc}; did you mean def {step.name}"
                f"({', '.join(arguments)})?")

    def _check_program(self, step: Step) -> None:
        program = step.target
        if not isinstance(program.source, str):
            self.found.append(f"step {step.name!r}: Program needs the program's text (a str); "
                              f"did you mean Program(source)?")
            return
        tools = self._kit_of(step, program.kit)
        if tools is None:
            return
        kit = program.kit if program.kit is not None else self.kit
        check = self.service().validate(program.source, kit, param_names=PROGRAM_PARAMS)
        allowed = [*tools, *PROGRAM_PARAMS, *sorted(ALLOWED_BUILTINS)]
        for issue in check.issues:
            self.found.append(f"step {step.name!r}: {_with_suggestion(str(issue), allowed)}")

    def _check_delegate(self, step: Step) -> None:
        intent = step.target.intent
        if not isinstance(intent, str) or not intent.strip():
            self.found.append(f"step {step.name!r}: Delegate needs an intent (a sentence); "
                              f"did you mean Delegate('read the file notes.txt')?")
            return
        self._kit_of(step, step.target.kit)

    # -- task and context -------------------------------------------------------

    def _check_references(self, index: int, step: Step) -> None:
        contexts = step.context if isinstance(step.context, list) else [step.context]
        for where, reference in [("task", step.task), *(("context", c) for c in contexts)]:
            if isinstance(reference, (FromStep, FromParallelAll)):
                self._check_reference(index, step, where, reference)
            elif isinstance(reference, type) and issubclass(reference, Sentinel):
                self.found.append(f"step {step.name!r}: {where}={reference.__name__} is the class; "
                                  f"did you mean from_prev or from_step('name')?")

    def _check_reference(self, index: int, step: Step, where: str,
                         reference: FromStep | FromParallelAll) -> None:
        target = reference.name
        said = f"step {step.name!r}: {where}={reference!r}"
        if target not in self.position:
            self.found.append(f"{said} names no step" + self.suggest(target, self.names, "steps"))
            return
        at = self.position[target]
        if at >= index:
            place = "is this step" if at == index else f"comes later (step {at + 1})"
            self.found.append(
                f"{said}, but {target!r} {place}, so it has not run when {step.name!r} runs; "
                f"did you mean from_prev, or to move {target!r} before {step.name!r}?")
        elif isinstance(reference, FromParallelAll) and not self.steps[at].parallel:
            self.found.append(f"{said}, but {target!r} is not a parallel step; "
                              f"did you mean from_step({target!r})?")

    # -- routing ----------------------------------------------------------------

    def _check_routing(self, step: Step) -> None:
        said = f"step {step.name!r}"
        if step.routes is not None and step.routes_by is not None:
            self.found.append(f"{said} has both routes= and routes_by=; did you mean routes= alone "
                              f"(predicates on the output) or routes_by= alone (a field of it)?")
        if step.after_branches is not None and not (step.routes or step.routes_by):
            self.found.append(f"{said}: after_branches={step.after_branches!r} without routes= or "
                              f"routes_by= has nothing to rejoin; did you mean to add routes=?")
        for option in ("routes_by", "after_branches"):
            value = getattr(step, option)
            if value is not None and not isinstance(value, str):
                self.found.append(f"{said}: {option}={summarize(value)} is not a name; did you "
                                  f"mean {option}='next'?")
                return
        if step.after_branches is not None and step.after_branches not in self.position:
            self.found.append(f"{said}: after_branches={step.after_branches!r} names no step"
                              + self.suggest(step.after_branches, self.names, "steps"))
        if (step.routes or step.routes_by) and step.parallel:
            self.found.append(f"{said} is parallel, and a band always goes on to the step after it, "
                              f"so its routes would never be read; did you mean parallel=False?")
        if step.routes is not None:
            self._check_routes(step)
        if step.routes_by is not None:
            self._check_routes_by(step)

    def _check_routes(self, step: Step) -> None:
        if not isinstance(step.routes, dict):
            self.found.append(f"step {step.name!r}: routes must be a dict of step name -> "
                              f"predicate; did you mean routes={{'next': lambda out: ...}}?")
            return
        for target, predicate in step.routes.items():
            if target not in self.position:
                self.found.append(f"step {step.name!r}: routes to {target!r}, which names no step"
                                  + self.suggest(str(target), self.names, "steps"))
            if not callable(predicate):
                self.found.append(f"step {step.name!r}: the route to {target!r} is {predicate!r}, "
                                  f"not a predicate; did you mean lambda output: ...?")

    def _check_routes_by(self, step: Step) -> None:
        fields = output_fields(step.output)
        if fields is not None and step.routes_by not in fields:
            self.found.append(
                f"step {step.name!r}: routes_by={step.routes_by!r}, but its output "
                f"{step.output.__name__} has no such field"
                + self.suggest(str(step.routes_by), fields, "fields"))

    def _check_writes(self, step: Step) -> None:
        if step.writes is None:
            return
        if not isinstance(step.writes, str) or not step.writes:
            self.found.append(f"step {step.name!r}: writes={step.writes!r} is not a key; "
                              f"did you mean writes={step.name!r}?")
        elif step.writes == self.checkpoint_key:
            self.found.append(f"step {step.name!r} writes {step.writes!r}, the plan's checkpoint "
                              f"key, which would overwrite the checkpoint; did you mean "
                              f"writes={step.name!r}?")


def _free_name(name: str, taken: Container[str]) -> str:
    number = 2
    while f"{name}_{number}" in taken:
        number += 1
    return f"{name}_{number}"


def _with_suggestion(issue: str, allowed: list[str]) -> str:
    match = _UNKNOWN_NAME.search(issue)
    if match is None or "did you mean" in issue:
        return issue
    close = difflib.get_close_matches(match.group(1), allowed, n=3)
    return issue + (f"; did you mean {', '.join(close)}?" if close else "")
