"""The frames that cross the sandbox's pipes, as dataclasses, and the limits' defaults.

Each is made where it is sent and read back where it arrives, once, at the edge:
``to_frame()`` gives the plain data ``wire`` carries, ``from_frame()`` the dataclass again.

- ``RunRequest``: kernel -> worker -> child: a program and everything it runs with;
- ``Reply``: child -> worker -> kernel: the program's result and, when it changed the
  session, its ``Commit``;
- ``Commit``: the units (pickles of a few variables) a program changed, and the names it
  deleted;
- ``SandboxLimits``: a program's limits, whose defaults both the kernel's requests and the
  worker's own (its first warm-up) use.

The smaller frames (``cancel``, ``reset``, a tool call and its answer, the child's events,
an approval's question ``{"approve": Change.to_frame()}`` and its answer
``{"op": "approve", "apply": bool, "reason": str}``) are dicts named where they are made.
This module imports only what the worker, started with ``python -S``, imports anyway.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from . import wire


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """Per-program limits: wall-clock seconds, address-space MB, reply MB, tool calls."""

    timeout: float = 120.0
    memory_mb: int = 512
    max_result_mb: int = 64
    max_tool_calls: int = 10_000

    @property
    def max_result_bytes(self) -> int:
        """The reply's limit in bytes."""
        return self.max_result_mb * 1_000_000


DEFAULT_LIMITS = SandboxLimits()
BuiltinKit = str | list[str] | dict[str, Any]  # a kit's name, its tool names, or alias -> name


@dataclass(slots=True)
class RunRequest:
    """A program to run in the worker's session (``keep``) or on an empty one, with its kit:
    ``kit`` (the built-in tools), ``tools`` (alias -> the plain-data description of each other
    tool, see ``kernel_side.plan_kit``), ``import_path`` (for the worker that imports Python
    tools), the files and folders the write tools refuse (``protected``: a list, or each
    with the tool source it is code of), its limits, and whether its file changes wait
    for a person's approval before they land (``approve``, ``[sandbox] approve``)."""

    program: str
    workspace: str
    kit: BuiltinKit = field(default_factory=list)
    tools: dict[str, dict[str, Any]] = field(default_factory=dict)
    import_path: list[str] = field(default_factory=list)
    protected: dict[str, str] | list[str] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)
    keep: bool = True
    return_variables: bool = False
    kits_dir: str | None = None
    timeout: float = DEFAULT_LIMITS.timeout
    memory_mb: int = DEFAULT_LIMITS.memory_mb
    max_result_bytes: int = DEFAULT_LIMITS.max_result_bytes
    max_tool_calls: int | None = DEFAULT_LIMITS.max_tool_calls
    approve: bool = False

    def to_frame(self) -> dict[str, Any]:
        """Plain data for the wire (``op`` is ``"run"``)."""
        return {"op": "run", "program": self.program, "workspace": self.workspace,
                "kit": self.kit, "tools": self.tools, "import_path": self.import_path,
                "protected": self.protected, "params": self.params, "keep": self.keep,
                "return_variables": self.return_variables, "kits_dir": self.kits_dir,
                "timeout": self.timeout, "memory_mb": self.memory_mb,
                "max_result_bytes": self.max_result_bytes, "max_tool_calls": self.max_tool_calls,
                "approve": self.approve}

    @classmethod
    def from_frame(cls, frame: Mapping[str, Any]) -> RunRequest:
        """The request ``to_frame`` gave (a missing key takes its default). Raises WireError
        when ``frame`` is no run request."""
        try:
            if frame["op"] != "run":
                raise KeyError("op")
            return cls(frame.get("program", ""), frame["workspace"], frame.get("kit", []),
                       frame.get("tools") or {}, frame.get("import_path") or [],
                       frame.get("protected") or [], frame.get("params") or {},
                       frame.get("keep", True), frame.get("return_variables", False),
                       frame.get("kits_dir"), frame.get("timeout", DEFAULT_LIMITS.timeout),
                       frame.get("memory_mb", DEFAULT_LIMITS.memory_mb),
                       frame.get("max_result_bytes", DEFAULT_LIMITS.max_result_bytes),
                       frame.get("max_tool_calls"), approve=frame.get("approve") is True)
        except (KeyError, TypeError, AttributeError) as exc:
            raise wire.WireError(f"malformed run request: {type(exc).__name__}") from None

    def without_program(self) -> RunRequest:
        """What a child is prepared for: this request less its program and values."""
        return replace(self, program="", params={}, return_variables=False)

    def walled_for(self) -> tuple[str, list[str]]:
        """What a child's walls are built for: the workspace, and what it reads outside."""
        return os.path.realpath(self.workspace), self.readable()

    def readable(self) -> list[str]:
        """What a program's process reads besides the workspace and Python: the kits folder,
        unless it is in the workspace (``.lackpy/kits``, as a service's is)."""
        if not self.kits_dir:
            return []
        workspace, kits = os.path.realpath(self.workspace), os.path.realpath(self.kits_dir)
        return [] if os.path.commonpath([workspace, kits]) == workspace else [kits]


@dataclass(slots=True)
class Commit:
    """What a program changed: new units (names and pickle) and the names it deleted."""

    units: list[tuple[list[str], bytes]] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    types: dict[str, str] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        """Whether the program changed nothing."""
        return not self.units and not self.deleted

    @property
    def size(self) -> int:
        """Bytes of all the unit pickles."""
        return sum(len(blob) for _, blob in self.units)

    def to_frame(self) -> dict[str, Any]:
        """Plain data for the wire."""
        return {"units": [[names, blob] for names, blob in self.units],
                "deleted": list(self.deleted), "types": dict(self.types)}

    @classmethod
    def from_frame(cls, frame: Mapping[str, Any]) -> Commit:
        """The commit ``to_frame`` gave. Raises WireError when its shape is wrong."""
        try:
            units = [(list(names), blob) for names, blob in frame["units"]]
            deleted, types = [str(name) for name in frame["deleted"]], dict(frame["types"])
        except (KeyError, TypeError, ValueError) as exc:
            raise wire.WireError(f"malformed commit: {type(exc).__name__}") from None
        if not all(type(blob) is bytes and all(type(n) is str for n in names)
                   for names, blob in units):
            raise wire.WireError("a commit unit must be a list of names and a pickle")
        return cls(units, deleted, types)


@dataclass(slots=True)
class Reply:
    """A program's outcome: its result (``ExecutionResult.to_dict()``) and, for a program that
    ran in the session and changed it, its commit."""

    result: dict[str, Any]
    commit: Commit | None = None

    def to_frame(self) -> dict[str, Any]:
        """Plain data for the wire."""
        return {"result": self.result,
                "commit": None if self.commit is None else self.commit.to_frame()}

    @classmethod
    def from_frame(cls, frame: Mapping[str, Any]) -> Reply:
        """The reply ``to_frame`` gave. Raises WireError when its commit is malformed, KeyError
        when it has no result."""
        commit = frame.get("commit")
        return cls(frame["result"], None if commit is None else Commit.from_frame(commit))
