"""The frames that cross the sandbox's pipes, as dataclasses, and the limits' defaults.

Each is made where it is sent and read back where it arrives, once, at the edge:
``to_frame()`` gives the plain data ``wire`` carries, ``from_frame()`` the dataclass again.
A frame names what it is by its ``op`` (a request to the worker) or its ``kind`` (the
others); ``read_request``, ``read_response``, ``read_taken`` and ``read_event`` read one that
may be any of several. Each ``from_frame`` checks every field's type and raises WireError
for a frame of another shape: a program's process may send anything.

- the kernel's requests (``read_request``; a waiting child reads them first): ``RunRequest``
  (a program and everything it runs with), ``Cancel``, ``Describe``, ``Reset``, ``Restore``,
  ``Verdict`` (a person's answer to a ``Question``), and for a forwarded tool call
  ``Asking`` and ``Asked`` (a person is asked about it: the program's clock stands
  meanwhile) and its ``Answer``, which the worker passes on down to the child;
- the worker's, to the kernel (``read_response``): ``Ready``, ``Ack`` (a request other than
  a run, done), ``Reply``, ``Question`` (may a program's file changes land?) and the
  child's ``ToolCall``, passed on up;
- a child's, to the worker: what it did with stdin (``read_taken``: ``Started``,
  ``HandedBack``, ``Closed``), then, while its program runs (``read_event``), ``Modified``,
  ``ToolCall`` and the program's ``Reply``; the worker sends a held child its ``Go``;
- inside them: ``ToolDescription`` (a tool of the kit that is not built in) and its
  ``PythonLoad``, ``Commit`` (the variables a program changed), and ``SandboxLimits`` (a
  program's limits, whose defaults both the kernel's requests and the worker's own, its
  first warm-up, use).

This module imports only what the worker, started with ``python -S``, imports anyway.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, TypeVar

from lackpy_kernel.kit.changes import Change

from . import wire
from .runner import ExecutionResult

_REQUIRED: Any = object()  # a field with no default: a frame must have it
_NONE = type(None)
_NUMBER = (int, float)  # a limit from the config (an int or float); never a bool
_T = TypeVar("_T")


# [sandbox] reuse: the programs one walled process runs before it is replaced (DESIGN.md's
# "Reuse": what one program could leave behind reaches at most the next nine of its key)
DEFAULT_REUSE = 10
DEFAULT_REUSE_IDLE = 60.0  # seconds a kept walled process waits for its key's next program


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """Per-program limits: wall-clock seconds, address-space MB, reply MB, tool calls, how
    many programs (of one key, see ``RunRequest.reuse``) one walled process may run, and how
    many seconds it waits for the next before it is replaced (``reuse_idle``)."""

    timeout: float = 120.0
    memory_mb: int = 512
    max_result_mb: int = 64
    max_tool_calls: int = 10_000
    reuse: int = DEFAULT_REUSE
    reuse_idle: float = DEFAULT_REUSE_IDLE

    @property
    def max_result_bytes(self) -> int:
        """The reply's limit in bytes."""
        return self.max_result_mb * 1_000_000


DEFAULT_LIMITS = SandboxLimits()
BuiltinKit = str | list[str] | dict[str, Any]  # a kit's name, its tool names, or alias -> name


class _Fields:
    """A frame's fields, each read checked: a frame of another shape raises WireError saying
    ``what`` it should have been and which field is wrong. ``tag`` is the ``op`` or ``kind``
    the frame must have."""

    def __init__(self, frame: Any, what: str, **tag: str) -> None:
        if type(frame) is not dict:
            raise wire.WireError(f"malformed {what}: a {type(frame).__name__}, not a dict")
        self.frame, self.what = frame, what
        for key, value in tag.items():
            if frame.get(key) != value:
                raise self.error(f"its {key} is {str(frame.get(key))[:40]!r}, not {value!r}")

    def get(self, key: str, *types: type, default: Any = _REQUIRED) -> Any:
        """The field ``key``, whose type is exactly one of ``types``; ``default`` when it is
        missing, if one is given."""
        if key not in self.frame:
            if default is _REQUIRED:
                raise self.error(f"it has no {key!r}")
            return default
        value = self.frame[key]
        if type(value) not in types:
            wanted = " or ".join(_named(kind) for kind in types)
            raise self.error(f"{key!r} is {_named(type(value))}, not {wanted}")
        return value

    def strings(self, key: str, default: Any = _REQUIRED) -> list[str]:
        """The field ``key``, a list of strings (a copy); ``default`` when it is missing."""
        values = self.get(key, list, tuple, default=default)
        if not all(type(value) is str for value in values):
            raise self.error(f"{key!r} holds something other than strings")
        return list(values)

    def named(self, key: str, read: Callable[[Any], _T], default: Any = _REQUIRED
              ) -> dict[str, _T]:
        """The field ``key``, a dict from strings to what ``read`` reads from each value."""
        values = self.get(key, dict, default=default)
        if not all(type(name) is str for name in values):
            raise self.error(f"{key!r} has a key that is not a string")
        return {name: read(value) for name, value in values.items()}

    def named_strings(self, key: str, default: Any = _REQUIRED) -> dict[str, str]:
        """The field ``key``, a dict from strings to strings (a copy)."""
        values = self.get(key, dict, default=default)
        if not all(type(name) is str and type(value) is str for name, value in values.items()):
            raise self.error(f"{key!r} holds something other than strings")
        return dict(values)

    def error(self, problem: str) -> wire.WireError:
        """The error for this frame, of which ``problem`` is wrong."""
        return wire.WireError(f"malformed {self.what}: {problem}")


def _named(kind: type) -> str:
    """The name of the type ``kind`` as a message shows it."""
    return "None" if kind is _NONE else kind.__name__


@dataclass(frozen=True, slots=True)
class PythonLoad:
    """Where a Python tool that runs in the program's process comes from: its source
    (``provider``), the module's ``path`` or ``module`` name, the ``function``, and the
    ``content`` of the module's file as the kernel last saw it (a digest; "" where it has
    none): a change of it is a new key, so the tool's new code runs in a new process."""

    provider: str
    path: str | None
    module: str | None
    function: str
    content: str = ""

    def to_frame(self) -> wire.Frame:
        """Plain data for the wire."""
        return {"provider": self.provider, "path": self.path, "module": self.module,
                "function": self.function, "content": self.content}

    @classmethod
    def from_frame(cls, frame: Any) -> PythonLoad:
        """The load ``to_frame`` gave. Raises WireError for another shape."""
        fields = _Fields(frame, "tool's load")
        return cls(provider=fields.get("provider", str), path=fields.get("path", str, _NONE),
                   module=fields.get("module", str, _NONE), function=fields.get("function", str),
                   content=fields.get("content", str))


@dataclass(frozen=True, slots=True)
class ToolDescription:
    """A tool of a request's kit that is not built in, as the program's process needs it:
    its name (``tool``), its ``source``, the names of the arguments a call may pass by
    position (``params``, for the trace), its own ``timeout`` in seconds (None: none), and,
    for a tool that runs in the program's process, where it is imported from (``load``;
    None: it runs in the kernel's, each call forwarded)."""

    tool: str
    source: str
    params: tuple[str, ...] = ()
    timeout: float | None = None
    load: PythonLoad | None = None

    @property
    def in_child(self) -> bool:
        """Whether the tool runs in the program's process."""
        return self.load is not None

    def to_frame(self) -> wire.Frame:
        """Plain data for the wire."""
        return {"tool": self.tool, "source": self.source, "params": list(self.params),
                "timeout": self.timeout,
                "load": None if self.load is None else self.load.to_frame()}

    @classmethod
    def from_frame(cls, frame: Any) -> ToolDescription:
        """The description ``to_frame`` gave. Raises WireError for another shape."""
        fields = _Fields(frame, "tool description")
        load = fields.get("load", dict, _NONE, default=None)
        return cls(tool=fields.get("tool", str), source=fields.get("source", str),
                   params=tuple(fields.strings("params", default=())),
                   timeout=fields.get("timeout", *_NUMBER, _NONE, default=None),
                   load=None if load is None else PythonLoad.from_frame(load))


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRequest:
    """A program to run in the worker's session (``keep``) or on an empty one, with its kit:
    ``kit`` (the built-in tools), ``tools`` (alias -> each other tool, see
    ``kernel_side.plan_kit``), ``import_path`` (for the worker that imports Python tools),
    the files and folders the write tools refuse (``protected``: a list, or each with the
    tool source it is code of), its limits, and whether its file changes wait for a
    person's approval before they land (``approve``, ``[sandbox] approve``)."""

    OP: ClassVar[str] = "run"
    program: str
    workspace: str
    kit: BuiltinKit = field(default_factory=list)
    tools: dict[str, ToolDescription] = field(default_factory=dict)
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
    dry: bool = False  # a dry run: whatever the program staged is dropped, never committed
    approve: bool = False
    path_guard: dict[str, Any] | None = None
    # the most programs of this request's key (all its fields but the program's, and the
    # session as it stands) one walled process runs: 1 for a program nobody has seen run
    reuse: int = 1
    reuse_idle: float = DEFAULT_REUSE_IDLE  # seconds it waits for the next before it is replaced
    session: str = ""  # whose one-shot runs these are ("": a session's own worker's)

    def to_frame(self) -> wire.Frame:
        """Plain data for the wire."""
        return {"op": self.OP, "program": self.program, "workspace": self.workspace,
                "kit": self.kit,
                "tools": {alias: tool.to_frame() for alias, tool in self.tools.items()},
                "import_path": self.import_path, "protected": self.protected,
                "params": self.params, "keep": self.keep,
                "return_variables": self.return_variables, "kits_dir": self.kits_dir,
                "timeout": self.timeout, "memory_mb": self.memory_mb,
                "max_result_bytes": self.max_result_bytes, "max_tool_calls": self.max_tool_calls,
                "dry": self.dry, "approve": self.approve, "path_guard": self.path_guard,
                "reuse": self.reuse,
                "reuse_idle": self.reuse_idle, "session": self.session}

    @classmethod
    def from_frame(cls, frame: Any) -> RunRequest:
        """The request ``to_frame`` gave (a missing field takes its default). Raises WireError
        for any other frame."""
        fields = _Fields(frame, "run request", op=cls.OP)
        return cls(
            program=fields.get("program", str, default=""),
            workspace=fields.get("workspace", str),
            kit=fields.get("kit", str, list, dict, default=[]),
            tools=fields.named("tools", ToolDescription.from_frame, default={}),
            import_path=fields.strings("import_path", default=()),
            protected=_protected(fields),
            params=fields.get("params", dict, default={}),
            keep=fields.get("keep", bool, default=True),
            return_variables=fields.get("return_variables", bool, default=False),
            kits_dir=fields.get("kits_dir", str, _NONE, default=None),
            timeout=fields.get("timeout", *_NUMBER, default=DEFAULT_LIMITS.timeout),
            memory_mb=fields.get("memory_mb", *_NUMBER, default=DEFAULT_LIMITS.memory_mb),
            max_result_bytes=fields.get("max_result_bytes", *_NUMBER,
                                        default=DEFAULT_LIMITS.max_result_bytes),
            max_tool_calls=fields.get("max_tool_calls", *_NUMBER, _NONE,
                                      default=DEFAULT_LIMITS.max_tool_calls),
            dry=fields.get("dry", bool, default=False),
            approve=fields.get("approve", bool, default=False),
            path_guard=fields.get("path_guard", dict, _NONE, default=None),
            reuse=fields.get("reuse", int, default=1),
            reuse_idle=fields.get("reuse_idle", *_NUMBER, default=DEFAULT_REUSE_IDLE),
            session=fields.get("session", str, default=""),
        )

    def without_program(self) -> RunRequest:
        """What a child is prepared for: this request less its program and values."""
        return replace(self, program="", params={}, return_variables=False)

    def same_key(self, other: RunRequest) -> bool:
        """Whether ``other`` is of this request's key: every field equal but the program's,
        its values' and the commit's path guard."""
        return all(getattr(self, name) == getattr(other, name) for name in _KEY_FIELDS)

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


# the fields of a request that make its key: all but its program's and its values', and the
# commit's path guard, which the worker applies and the program's process never sees
_KEY_FIELDS = tuple(each.name for each in fields(RunRequest)
                    if each.name not in {"program", "params", "return_variables", "path_guard"})


def _protected(fields: _Fields) -> dict[str, str] | list[str]:
    """A run request's ``protected``: a list of paths, or a dict of each to its source."""
    if type(fields.frame.get("protected")) is dict:
        return fields.named_strings("protected")
    return fields.strings("protected", default=())


@dataclass(frozen=True, slots=True)
class Cancel:
    """Stop the program that runs (between programs it is ignored)."""

    OP: ClassVar[str] = "cancel"

    def to_frame(self) -> wire.Frame:
        """Plain data for the wire."""
        return {"op": self.OP}

    @classmethod
    def from_frame(cls, frame: Any) -> Cancel:
        """The cancel ``to_frame`` gave. Raises WireError for any other frame."""
        _Fields(frame, "cancel", op=cls.OP)
        return cls()


@dataclass(frozen=True, slots=True)
class Describe:
    """Describe the session's variables for a prompt (with ``previews`` of their values);
    answered by an ``Ack`` with the description."""

    OP: ClassVar[str] = "describe"
    previews: bool = True

    def to_frame(self) -> wire.Frame:
        """Plain data for the wire."""
        return {"op": self.OP, "previews": self.previews}

    @classmethod
    def from_frame(cls, frame: Any) -> Describe:
        """The request ``to_frame`` gave. Raises WireError for any other frame."""
        return cls(_Fields(frame, "describe request", op=cls.OP).get("previews", bool,
                                                                      default=True))


@dataclass(frozen=True, slots=True)
class Reset:
    """Forget the session's variables."""

    OP: ClassVar[str] = "reset"

    def to_frame(self) -> wire.Frame:
        """Plain data for the wire."""
        return {"op": self.OP}

    @classmethod
    def from_frame(cls, frame: Any) -> Reset:
        """The reset ``to_frame`` gave. Raises WireError for any other frame."""
        _Fields(frame, "reset", op=cls.OP)
        return cls()


Units = list[tuple[list[str], bytes]]  # pickles of a few variables each, with their names


def _units(fields: _Fields) -> Units:
    """The field ``units``: each a list of names and a pickle."""
    return [_unit(unit) for unit in fields.get("units", list, tuple)]


def _unit(unit: Any) -> tuple[list[str], bytes]:
    """A unit read back: its names and its pickle. Raises WireError for another shape."""
    if not (type(unit) in (list, tuple) and len(unit) == 2 and type(unit[1]) is bytes
            and type(unit[0]) in (list, tuple) and all(type(name) is str for name in unit[0])):
        raise wire.WireError("a commit unit must be a list of names and a pickle")
    return list(unit[0]), unit[1]


@dataclass(frozen=True, slots=True)
class Restore:
    """Hold the session that ``units`` hold (a new worker, after one died)."""

    OP: ClassVar[str] = "restore"
    units: Units

    def to_frame(self) -> wire.Frame:
        """Plain data for the wire."""
        return {"op": self.OP, "units": [[names, blob] for names, blob in self.units]}

    @classmethod
    def from_frame(cls, frame: Any) -> Restore:
        """The request ``to_frame`` gave. Raises WireError for any other frame."""
        return cls(_units(_Fields(frame, "restore request", op=cls.OP)))


@dataclass(frozen=True, slots=True)
class Verdict:
    """A person's answer to a ``Question``: ``apply`` the change, or not, and why not."""

    OP: ClassVar[str] = "approve"
    apply: bool
    reason: str = ""

    def to_frame(self) -> wire.Frame:
        """Plain data for the wire."""
        return {"op": self.OP, "apply": self.apply, "reason": self.reason}

    @classmethod
    def from_frame(cls, frame: Any) -> Verdict:
        """The verdict ``to_frame`` gave. Raises WireError for any other frame."""
        fields = _Fields(frame, "verdict", op=cls.OP)
        return cls(fields.get("apply", bool), fields.get("reason", str))


@dataclass(frozen=True, slots=True)
class Answer:
    """The outcome of a forwarded ``ToolCall`` (kernel -> worker -> child): its ``value`` when
    ``ok``, else the ``error_type`` and ``error_args`` of what it raised; and the files the
    kernel protected during it (``protect``: path -> the tool source it is code of)."""

    OP: ClassVar[str] = "answer"
    call_id: int
    ok: bool
    value: Any = None
    error_type: str = ""
    error_args: list[Any] = field(default_factory=list)
    protect: dict[str, str] = field(default_factory=dict)

    def to_frame(self) -> wire.Frame:
        """Plain data for the wire."""
        return {"op": self.OP, "id": self.call_id, "ok": self.ok, "value": self.value,
                "error_type": self.error_type, "error_args": self.error_args,
                "protect": self.protect}

    @classmethod
    def from_frame(cls, frame: Any) -> Answer:
        """The answer ``to_frame`` gave. Raises WireError for any other frame."""
        fields = _Fields(frame, "tool call's answer", op=cls.OP)
        return cls(fields.get("id", int), fields.get("ok", bool),
                   fields.frame.get("value"),
                   fields.get("error_type", str, default=""),
                   fields.get("error_args", list, default=[]),
                   fields.named_strings("protect", default={}))


@dataclass(frozen=True, slots=True)
class Asking:
    """A person is being asked whether the call ``call_id`` may run: its program's clock
    stands until ``Asked`` or the call's ``Answer``."""

    OP: ClassVar[str] = "asking"
    call_id: int

    def to_frame(self) -> wire.Frame:
        """Plain data for the wire."""
        return {"op": self.OP, "id": self.call_id}

    @classmethod
    def from_frame(cls, frame: Any) -> Asking:
        """The frame ``to_frame`` gave. Raises WireError for any other frame."""
        return cls(_Fields(frame, "asking", op=cls.OP).get("id", int))


@dataclass(frozen=True, slots=True)
class Asked:
    """The person let the call ``call_id`` run: its program's clock runs again."""

    OP: ClassVar[str] = "asked"
    call_id: int

    def to_frame(self) -> wire.Frame:
        """Plain data for the wire."""
        return {"op": self.OP, "id": self.call_id}

    @classmethod
    def from_frame(cls, frame: Any) -> Asked:
        """The frame ``to_frame`` gave. Raises WireError for any other frame."""
        return cls(_Fields(frame, "asked", op=cls.OP).get("id", int))


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A program's call of a tool that runs in the kernel (child -> worker -> kernel): the
    ``call_id``-th of its run, of the kit's ``tool`` (its alias), with plain ``args`` and
    ``kwargs``."""

    KIND: ClassVar[str] = "call"
    KEYS: ClassVar[frozenset[str]] = frozenset({"kind", "id", "tool", "args", "kwargs"})
    call_id: int
    tool: str
    args: list[Any]
    kwargs: dict[str, Any]

    def to_frame(self) -> wire.Frame:
        """Plain data for the wire."""
        return {"kind": self.KIND, "id": self.call_id, "tool": self.tool, "args": self.args,
                "kwargs": self.kwargs}

    @classmethod
    def from_frame(cls, frame: Any) -> ToolCall:
        """The call ``to_frame`` gave, with nothing more. Raises WireError for any other."""
        if (type(frame) is not dict or frame.keys() != cls.KEYS or frame["kind"] != cls.KIND
                or type(frame["id"]) is not int or type(frame["tool"]) is not str
                or type(frame["args"]) is not list or type(frame["kwargs"]) is not dict
                or not all(type(key) is str for key in frame["kwargs"])):
            raise wire.WireError("a malformed tool call")
        return cls(frame["id"], frame["tool"], frame["args"], frame["kwargs"])


@dataclass(slots=True)
class Commit:
    """What a program changed: new units (names and pickle) and the names it deleted."""

    units: Units = field(default_factory=list)
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

    def to_frame(self) -> wire.Frame:
        """Plain data for the wire."""
        return {"units": [[names, blob] for names, blob in self.units],
                "deleted": list(self.deleted), "types": dict(self.types)}

    @classmethod
    def from_frame(cls, frame: Any) -> Commit:
        """The commit ``to_frame`` gave. Raises WireError when its shape is wrong."""
        fields = _Fields(frame, "commit")
        return cls(_units(fields), fields.strings("deleted"), fields.named_strings("types"))


# The types of the fields of a result (``ExecutionResult.to_dict``), each checked when it is
# there; ``ExecutionResult.from_dict`` checks the rest.
_RESULT_FIELDS: dict[str, tuple[type, ...]] = {
    "error": (str, _NONE), "trace": (dict,), "variables": (dict,), "stdout": (str,),
    "error_type": (str, _NONE), "error_line": (int, _NONE), "issues": (list,),
}


def _result(frame: Any) -> ExecutionResult:
    """The result ``ExecutionResult.to_dict`` gave. Raises WireError for another shape."""
    fields = _Fields(frame, "result")
    fields.get("success", bool)
    for key, types in _RESULT_FIELDS.items():
        fields.get(key, *types, default=None)
    fields.strings("notes", default=())
    trace = _Fields(fields.frame.get("trace", {}), "result's trace")
    trace.get("entries", list, default=None)
    trace.strings("files_read", default=())
    trace.strings("files_modified", default=())
    try:
        return ExecutionResult.from_dict(frame)
    except (TypeError, ValueError) as exc:
        raise wire.WireError(f"malformed result: {type(exc).__name__}") from None


@dataclass(slots=True)
class Reply:
    """A program's outcome (child -> worker -> kernel): its result and, for a program that
    ran in the session and changed it, its commit."""

    KIND: ClassVar[str] = "done"
    result: ExecutionResult
    commit: Commit | None = None

    def to_frame(self) -> wire.Frame:
        """Plain data for the wire."""
        return {"kind": self.KIND, "result": self.result.to_dict(),
                "commit": None if self.commit is None else self.commit.to_frame()}

    @classmethod
    def from_frame(cls, frame: Any) -> Reply:
        """The reply ``to_frame`` gave. Raises WireError for any other frame."""
        fields = _Fields(frame, "reply", kind=cls.KIND)
        commit = fields.get("commit", dict, _NONE, default=None)
        return cls(_result(fields.get("result", dict)),
                   None if commit is None else Commit.from_frame(commit))


@dataclass(frozen=True, slots=True)
class Ready:
    """The worker (process ``pid``) is ready for requests: its first frame."""

    KIND: ClassVar[str] = "ready"
    pid: int

    def to_frame(self) -> wire.Frame:
        """Plain data for the wire."""
        return {"kind": self.KIND, "pid": self.pid}

    @classmethod
    def from_frame(cls, frame: Any) -> Ready:
        """The frame ``to_frame`` gave. Raises WireError for any other frame."""
        return cls(_Fields(frame, "ready", kind=cls.KIND).get("pid", int))


@dataclass(frozen=True, slots=True)
class Ack:
    """A request other than a run is done; a ``Describe`` is answered with the
    ``description``."""

    KIND: ClassVar[str] = "ack"
    description: str | None = None

    def to_frame(self) -> wire.Frame:
        """Plain data for the wire."""
        return {"kind": self.KIND, "description": self.description}

    @classmethod
    def from_frame(cls, frame: Any) -> Ack:
        """The frame ``to_frame`` gave. Raises WireError for any other frame."""
        fields = _Fields(frame, "acknowledgement", kind=cls.KIND)
        return cls(fields.get("description", str, _NONE, default=None))


@dataclass(frozen=True, slots=True)
class Question:
    """May the program's file changes, ``change``, land? The worker waits for the kernel's
    ``Verdict``."""

    KIND: ClassVar[str] = "approve"
    change: Change

    def to_frame(self) -> wire.Frame:
        """Plain data for the wire."""
        return {"kind": self.KIND, "change": self.change.to_frame()}

    @classmethod
    def from_frame(cls, frame: Any) -> Question:
        """The question ``to_frame`` gave. Raises WireError for any other frame."""
        fields = _Fields(frame, "question", kind=cls.KIND)
        try:
            return cls(Change.from_frame(fields.get("change", dict)))
        except ValueError as exc:
            raise wire.WireError(f"the worker asked about {exc}") from None


@dataclass(frozen=True, slots=True)
class Started:
    """A waiting child took ``request`` (less its program and values) from stdin, and read
    ``leftover`` past it."""

    KIND: ClassVar[str] = "started"
    request: RunRequest
    leftover: bytes

    def to_frame(self) -> wire.Frame:
        """Plain data for the wire."""
        return {"kind": self.KIND, "request": self.request.to_frame(),
                "leftover": self.leftover}

    @classmethod
    def from_frame(cls, frame: Any) -> Started:
        """The frame ``to_frame`` gave. Raises WireError for any other frame."""
        fields = _Fields(frame, "started", kind=cls.KIND)
        return cls(RunRequest.from_frame(fields.get("request", dict)),
                   fields.get("leftover", bytes))


@dataclass(frozen=True, slots=True)
class HandedBack:
    """A waiting child read ``request`` from stdin, which it does not run (the worker
    answers it, or forks a child that runs it), and ``leftover`` past it."""

    KIND: ClassVar[str] = "handoff"
    request: Request
    leftover: bytes

    def to_frame(self) -> wire.Frame:
        """Plain data for the wire."""
        return {"kind": self.KIND, "request": self.request.to_frame(),
                "leftover": self.leftover}

    @classmethod
    def from_frame(cls, frame: Any) -> HandedBack:
        """The frame ``to_frame`` gave. Raises WireError for any other frame."""
        fields = _Fields(frame, "handoff", kind=cls.KIND)
        return cls(read_request(fields.get("request", dict)), fields.get("leftover", bytes))


@dataclass(frozen=True, slots=True)
class Closed:
    """A waiting child found stdin closed (the kernel went), having read ``leftover``."""

    KIND: ClassVar[str] = "closed"
    leftover: bytes

    def to_frame(self) -> wire.Frame:
        """Plain data for the wire."""
        return {"kind": self.KIND, "leftover": self.leftover}

    @classmethod
    def from_frame(cls, frame: Any) -> Closed:
        """The frame ``to_frame`` gave. Raises WireError for any other frame."""
        return cls(_Fields(frame, "closed", kind=cls.KIND).get("leftover", bytes))


@dataclass(frozen=True, slots=True)
class Modified:
    """The program modified the workspace's file ``path`` (staged)."""

    KIND: ClassVar[str] = "modified"
    path: str

    def to_frame(self) -> wire.Frame:
        """Plain data for the wire."""
        return {"kind": self.KIND, "path": self.path}

    @classmethod
    def from_frame(cls, frame: Any) -> Modified:
        """The frame ``to_frame`` gave. Raises WireError for any other frame."""
        return cls(_Fields(frame, "modified", kind=cls.KIND).get("path", str))


@dataclass(frozen=True, slots=True)
class Go:
    """A held child may read stdin, after ``pending`` (what the worker read of it)."""

    KIND: ClassVar[str] = "go"
    pending: bytes

    def to_frame(self) -> wire.Frame:
        """Plain data for the wire."""
        return {"kind": self.KIND, "pending": self.pending}

    @classmethod
    def from_frame(cls, frame: Any) -> Go:
        """The frame ``to_frame`` gave. Raises WireError for any other frame."""
        return cls(_Fields(frame, "go", kind=cls.KIND).get("pending", bytes))


@dataclass(frozen=True, slots=True)
class Next:
    """The worker hands a child that ran programs of ``request``'s key the next one, whose
    frames the child seals with ``nonce`` (a first program's: 0)."""

    KIND: ClassVar[str] = "next"
    request: RunRequest
    nonce: int

    def to_frame(self) -> wire.Frame:
        """Plain data for the wire."""
        return {"kind": self.KIND, "request": self.request.to_frame(), "nonce": self.nonce}

    @classmethod
    def from_frame(cls, frame: Any) -> Next:
        """The frame ``to_frame`` gave. Raises WireError for any other frame."""
        fields = _Fields(frame, "next", kind=cls.KIND)
        return cls(RunRequest.from_frame(fields.get("request", dict)), fields.get("nonce", int))


# What the kernel sends during a program, found between programs when it came too late
LATE = (Cancel, Answer, Asking, Asked, Verdict)
Request = RunRequest | Cancel | Describe | Reset | Restore | Verdict | Answer | Asking | Asked
Response = Ready | Ack | Reply | Question | ToolCall
Taken = Started | HandedBack | Closed
Event = Modified | ToolCall | Reply

_REQUESTS: dict[str, Callable[[Any], Request]] = {
    RunRequest.OP: RunRequest.from_frame, Cancel.OP: Cancel.from_frame,
    Describe.OP: Describe.from_frame, Reset.OP: Reset.from_frame,
    Restore.OP: Restore.from_frame, Verdict.OP: Verdict.from_frame,
    Answer.OP: Answer.from_frame, Asking.OP: Asking.from_frame, Asked.OP: Asked.from_frame}
_RESPONSES: dict[str, Callable[[Any], Response]] = {
    Ready.KIND: Ready.from_frame, Ack.KIND: Ack.from_frame, Reply.KIND: Reply.from_frame,
    Question.KIND: Question.from_frame, ToolCall.KIND: ToolCall.from_frame}
_TAKEN: dict[str, Callable[[Any], Taken]] = {
    Started.KIND: Started.from_frame, HandedBack.KIND: HandedBack.from_frame,
    Closed.KIND: Closed.from_frame}
_EVENTS: dict[str, Callable[[Any], Event]] = {
    Modified.KIND: Modified.from_frame, ToolCall.KIND: ToolCall.from_frame,
    Reply.KIND: Reply.from_frame}


def read_request(frame: Any) -> Request:
    """The kernel's request ``frame`` is. Raises WireError for any other frame."""
    return _read(frame, "op", _REQUESTS, "request")


def read_response(frame: Any) -> Response:
    """The worker's frame ``frame`` is, to the kernel. Raises WireError for any other."""
    return _read(frame, "kind", _RESPONSES, "frame from the worker")


def read_taken(frame: Any) -> Taken:
    """What a waiting child did with stdin, as ``frame`` says. Raises WireError for any other
    frame."""
    return _read(frame, "kind", _TAKEN, "frame from the waiting child")


def sealed(frame: wire.Frame, nonce: int) -> wire.Frame:
    """``frame`` as a program's process sends it during the program whose ``nonce`` it is."""
    return {"nonce": nonce, "event": frame}


def read_event(frame: Any, nonce: int) -> Event:
    """The event a running program's process sent, ``sealed`` with ``nonce`` (the current
    program's). Raises WireError for any other frame, or one of another program."""
    if type(frame) is not dict or frame.keys() != {"nonce", "event"}:
        raise wire.WireError("a frame from the program's process that is not sealed")
    if frame["nonce"] != nonce:
        raise wire.WireError("a frame from the program's process that is not the current "
                             "program's")
    return _read(frame["event"], "kind", _EVENTS, "frame from the program's process")


def _read(frame: Any, key: str, readers: Mapping[str, Callable[[Any], _T]], what: str) -> _T:
    """``frame`` read by the reader its ``key`` names. Raises WireError when none does."""
    tag = frame.get(key) if type(frame) is dict else None
    read = readers.get(tag) if type(tag) is str else None
    if read is None:
        shown = repr(str(tag)[:40]) if type(frame) is dict else f"a {type(frame).__name__}"
        raise wire.WireError(f"unexpected {what}: {shown}")
    return read(frame)
