"""A plan's wire form: steps as JSON data, callables and types by name through a registry."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lackpy_kernel.errors import PlanCompileError, PlanRegistryError, UsageError
from lackpy_kernel.run import summarize

from ._sentinels import reference_from_data, reference_to_data
from ._step import Approval, Delegate, Program, Step, target_kind

__all__ = ["PLAN_FORMAT", "step_from_dict", "step_to_dict"]

PLAN_FORMAT = 1
_BUILTIN_TYPES: dict[str, Any] = {
    "Any": Any, "str": str, "int": int, "float": float, "bool": bool,
    "list": list, "dict": dict, "tuple": tuple, "NoneType": type(None),
}


def step_to_dict(step: Step) -> dict[str, Any]:
    """``step`` as JSON data; UsageError for a callable without a name to find it by."""
    context = step.context
    return {
        "name": step.name,
        "target": _target_to_dict(step),
        "task": reference_to_data(step.task),
        "context": [reference_to_data(c) for c in context] if isinstance(context, list)
        else reference_to_data(context),
        "writes": step.writes,
        "input": _type_name(step.input, step, "input"),
        "output": _type_name(step.output, step, "output"),
        "parallel": step.parallel,
        "routes": None if step.routes is None else [
            [target, _callable_name(predicate, step, f"the route to {target!r}")]
            for target, predicate in step.routes.items()],
        "routes_by": step.routes_by,
        "after_branches": step.after_branches,
    }


def step_from_dict(data: Mapping[str, Any], registry: Mapping[str, Any]) -> Step:
    """The Step ``step_to_dict`` wrote; PlanRegistryError naming a callable or type the
    registry lacks, PlanCompileError for data that is not a step."""
    if not isinstance(data, Mapping):
        raise PlanCompileError(f"not a saved plan step: {summarize(data)}")
    try:
        context = data.get("context")
        return Step(
            _target_from_dict(data["target"], registry),
            task=reference_from_data(data.get("task", {"sentinel": "from_prev"})),
            context=[reference_from_data(c) for c in context] if isinstance(context, list)
            else reference_from_data(context),
            writes=data.get("writes"),
            input=_type_from_name(data.get("input", "Any"), registry),
            output=_type_from_name(data.get("output", "str"), registry),
            parallel=bool(data.get("parallel", False)),
            name=data.get("name"),  # type: ignore[arg-type]  # None: named after its target
            routes=None if data.get("routes") is None else {
                target: _lookup(name, registry, f"the route predicate to {target!r}")
                for target, name in data["routes"]},
            routes_by=data.get("routes_by"),
            after_branches=data.get("after_branches"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, PlanRegistryError):
            raise
        raise PlanCompileError(f"not a saved plan step: {exc!r} in {summarize(dict(data))}") \
            from None


def _target_to_dict(step: Step) -> dict[str, Any]:
    target = step.target
    kind = target_kind(target)
    if kind == "program":
        return {"kind": kind, "source": target.source, "kit": target.kit}
    if kind == "delegate":
        return {"kind": kind, "intent": target.intent, "kit": target.kit}
    if kind == "approval":
        return {"kind": kind, "prompt": target.prompt}
    if kind == "tool":
        return {"kind": kind, "tool": target}
    return {"kind": "callable", "name": _callable_name(target, step, "its target")}


def _target_from_dict(data: Mapping[str, Any], registry: Mapping[str, Any]) -> Any:
    kind = data["kind"]
    if kind == "program":
        return Program(data["source"], kit=data.get("kit"))
    if kind == "delegate":
        return Delegate(data["intent"], kit=data.get("kit"))
    if kind == "approval":
        return Approval(data["prompt"])
    if kind == "tool":
        return str(data["tool"])
    if kind == "callable":
        return _lookup(data["name"], registry, "a step's callable")
    raise ValueError(f"unknown target kind {kind!r}")


def _callable_name(function: Any, step: Step, what: str) -> str:
    name = getattr(function, "__name__", None)
    if not isinstance(name, str) or not name.isidentifier():
        raise UsageError(
            f"step {step.name!r}: {what} has no name to save it by ({function!r}); give it one "
            f"with def, so from_dict can find it in its registry")
    return name


def _type_name(kind: Any, step: Step, what: str) -> str:
    if kind is Any:
        return "Any"
    name = getattr(kind, "__name__", None)
    if not isinstance(name, str):
        raise UsageError(f"step {step.name!r}: its {what} type {kind!r} has no name to save it by")
    return name


def _type_from_name(name: str, registry: Mapping[str, Any]) -> Any:
    if name in _BUILTIN_TYPES:
        return _BUILTIN_TYPES[name]
    return _lookup(name, registry, "a step's input or output type")


def _lookup(name: str, registry: Mapping[str, Any], what: str) -> Any:
    try:
        return registry[name]
    except KeyError:
        known = ", ".join(sorted(registry)) or "none"
        raise PlanRegistryError(
            f"{name!r} ({what}) is not in the registry (it has: {known}); pass "
            f"registry={{{name!r}: {name}}} to from_dict") from None
