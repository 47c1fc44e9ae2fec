"""Sentinels: where a step's task and context come from."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "FromParallelAll",
    "FromPrev",
    "FromStart",
    "FromStep",
    "Sentinel",
    "from_parallel_all",
    "from_prev",
    "from_start",
    "from_step",
    "reference_from_data",
    "reference_to_data",
]


class Sentinel:
    """A reference to a value the plan has when the step runs, resolved then."""


@dataclass(frozen=True)
class FromPrev(Sentinel):
    """The previous step's output (the plan's task for the first step)."""

    def __repr__(self) -> str:
        return "from_prev"


@dataclass(frozen=True)
class FromStart(Sentinel):
    """The task the plan was run with."""

    def __repr__(self) -> str:
        return "from_start"


@dataclass(frozen=True)
class FromStep(Sentinel):
    """The output of the named step (its latest run)."""

    name: str

    def __repr__(self) -> str:
        return f"from_step({self.name!r})"


@dataclass(frozen=True)
class FromParallelAll(Sentinel):
    """Every output of the parallel band that starts at the named step, as ``{name: output}``."""

    name: str

    def __repr__(self) -> str:
        return f"from_parallel_all({self.name!r})"


from_prev = FromPrev()
from_start = FromStart()


def from_step(name: str) -> FromStep:
    """The output of step ``name``, which must come earlier in the plan."""
    return FromStep(name)


def from_parallel_all(name: str) -> FromParallelAll:
    """The outputs of the parallel band starting at step ``name``, as ``{step name: output}``."""
    return FromParallelAll(name)


_BY_KIND: dict[str, type[Sentinel]] = {
    "from_prev": FromPrev, "from_start": FromStart,
    "from_step": FromStep, "from_parallel_all": FromParallelAll,
}
_KIND_OF = {cls: kind for kind, cls in _BY_KIND.items()}


def reference_to_data(reference: Any) -> Any:
    """A task or context reference as JSON data: a sentinel, a string, or another literal."""
    if isinstance(reference, Sentinel):
        data = {"sentinel": _KIND_OF[type(reference)]}
        if isinstance(reference, (FromStep, FromParallelAll)):
            data["name"] = reference.name
        return data
    if isinstance(reference, str) or reference is None:
        return reference
    return {"value": reference}


def reference_from_data(data: Any) -> Any:
    """The reference ``reference_to_data`` wrote; ValueError for anything else."""
    if data is None or isinstance(data, str):
        return data
    if isinstance(data, dict) and set(data) == {"value"}:
        return data["value"]
    if isinstance(data, dict) and data.get("sentinel") in _BY_KIND:
        cls = _BY_KIND[data["sentinel"]]
        if cls in (FromStep, FromParallelAll):
            if not isinstance(data.get("name"), str):
                raise ValueError(f"{data['sentinel']} needs a step name: {data!r}")
            return cls(data["name"])
        return cls()
    raise ValueError(f"not a task or context reference: {data!r}")
