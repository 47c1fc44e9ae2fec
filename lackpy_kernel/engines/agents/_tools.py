"""The tools an agent may call, and how a model's tool call runs: as safely as a program.

A :class:`Toolset` holds kit tools, Python callables, agents (``agent.as_tool``) and, when
asked for, the ``lackpy`` tool (run a lackpy program on the kit). A call is checked against
the tool's schema (unknown tools and malformed arguments are error results, never
exceptions) and against the approval ceiling (a write tool needs ``auto_run="write"``). A
kit tool's call runs as the one-line lackpy program ``tool(arg=arg_arg, ...)``, with the
arguments as parameters, through the service's run pipeline (``lackpy_kernel.execution``)
like every other program: validated, traced, confined to the workspace, plain data only,
under the call cap, a write-graded tool asked at its call, watched by the pipeline's hooks
(Kibitzer), and, where the service sandboxes programs, in a sandbox worker under its time
and memory limits (one worker per concurrent call). A ``lackpy`` call's program goes the
same way.
Python callables and agents run in this process: they are the caller's own code.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import dataclasses
import inspect
import json
import threading
import time
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from lackpy_kernel.errors import (
    KitError,
    LackpyError,
    LimitError,
    ProgramInterrupted,
    SandboxError,
    ToolApprovalError,
    UsageError,
)
from lackpy_kernel.execution import Place, PoolPlace, validate_for
from lackpy_kernel.infer.models import ToolSchema
from lackpy_kernel.kit import ResolvedKit
from lackpy_kernel.run import ExecutionResult, TraceEntry, find_non_plain, summarize
from lackpy_kernel.run.kernel_side import Approver
from lackpy_kernel.run.plain import jsonable
from lackpy_kernel.service import LackpyService
from lackpy_kernel.timing import ms_since as _ms_since

from ..plans import did_you_mean, error_info

__all__ = [
    "GRADES",
    "LACKPY_TOOL",
    "AgentTool",
    "CallOutcome",
    "Toolset",
    "argument_problem",
    "build_toolset",
    "ceiling_of",
    "result_text",
    "tool_pool",
]

LACKPY_TOOL = "lackpy"
GRADES = {"pure": 0, "read": 1, "exec": 2, "write": 3}  # auto_run names -> ToolSpec.grade_w
DEFAULT_CEILING = "read"
_P = ParamSpec("_P")
_T = TypeVar("_T")
MAX_RESULT_CHARS = 20_000  # the most of one tool result a model is sent
_JSON_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean",
               "list": "array", "tuple": "array", "set": "array", "dict": "object"}
_LACKPY_SCHEMA = {"type": "object", "properties": {"program": {
    "type": "string", "description": "a lackpy program: Python without imports, def, class, "
                                     "while or try; its last expression is the result"}},
    "required": ["program"]}


@dataclass
class AgentTool:
    """One tool an agent may call: its name, description and JSON schema, what kind it is
    (``kit``, ``lackpy``, ``callable`` or ``agent``), its grade (0 pure ... 3 write) and, for
    a callable or an agent, what to call."""

    name: str
    description: str
    parameters: dict[str, Any]
    kind: str
    grade_w: int = 0
    target: Any = None

    @property
    def schema(self) -> ToolSchema:
        """The tool as a model sees it."""
        return ToolSchema(self.name, self.description, self.parameters)


@dataclass
class CallOutcome:
    """A tool call's end: the text the model gets, whether it is an error, the value it
    returned (plain data) and the call's trace entry (the arguments exactly as sent)."""

    content: str
    is_error: bool
    entry: TraceEntry
    output: Any = None

    @classmethod
    def failed(cls, name: str, arguments: Any, error: BaseException | str, ms: float = 0.0,
               kind: str | None = None) -> CallOutcome:
        """The outcome of a call that did not succeed; ``error`` an exception or a message
        (whose type is ``kind``)."""
        if isinstance(error, BaseException):
            info = error_info(error)
            text = f"{info.type}: {info.message}"
        else:
            text = f"{kind}: {error}" if kind else error
        args = arguments if isinstance(arguments, dict) else {"arguments": arguments}
        return cls(text, True, TraceEntry(0, name, args, None, ms, False, text))


@dataclass
class Toolset:
    """The tools of one agent, the kit they resolve in, the service that runs programs, the
    approval ceiling (the highest grade that runs without asking) and who approves a call's
    file changes (``approve``; None refuses them, see ``Approver``)."""

    tools: dict[str, AgentTool]
    service: LackpyService
    kit: ResolvedKit | None = None
    ceiling: str = DEFAULT_CEILING
    pool: PoolPlace | None = None  # kit calls' workers (made on first use; its maker closes it)
    approve: Approver | None = None

    def __bool__(self) -> bool:
        return bool(self.tools)

    @property
    def names(self) -> list[str]:
        """The tools' names, in order."""
        return list(self.tools)

    def schemas(self, exclude: tuple[str, ...] = ()) -> list[ToolSchema]:
        """What the model is told about the tools."""
        return [tool.schema for name, tool in self.tools.items() if name not in exclude]

    async def call(self, name: str, arguments: Any, problem: str | None = None) -> CallOutcome:
        """Run one tool call. ``problem`` says why the model's arguments could not be read,
        when they could not (``arguments`` is then their text). Every failure (an unknown
        tool, malformed arguments, a refusal, the tool's own error, a limit) is an error
        outcome, not an exception."""
        tool = self.tools.get(name)
        if tool is None:
            return CallOutcome.failed(name, arguments, f"there is no tool {name!r}"
                                      + did_you_mean(name, self.names, "tools"), kind="UnknownTool")
        reason = problem or argument_problem(tool, arguments)
        if reason is not None:
            return CallOutcome.failed(name, arguments, f"{name}: {reason}", kind="BadArguments")
        assert arguments is not None
        started = time.perf_counter()
        try:
            outcome = await self._run(tool, arguments)
        except LackpyError as exc:
            return CallOutcome.failed(name, arguments, exc, _ms_since(started))
        outcome.entry.duration_ms = _ms_since(started)
        return outcome

    # -- running ------------------------------------------------------------------

    async def _run(self, tool: AgentTool, arguments: dict[str, Any]) -> CallOutcome:
        if tool.kind == "kit":
            self._check_grade(tool.name, tool.grade_w)
            params = {f"arg_{key}": value for key, value in arguments.items()}
            call = ", ".join(f"{key}=arg_{key}" for key in arguments)
            program = f"{tool.name}({call})"
            return _from_result(tool.name, arguments, await self._run_program(program, params),
                                program)
        if tool.kind == LACKPY_TOOL:
            program = arguments["program"]
            return _from_result(tool.name, arguments, await self._run_lackpy(program), program)
        if tool.kind == "agent":
            envelope = await tool.target.arun(arguments["task"])
            if not envelope.ok:
                error = envelope.error
                return CallOutcome.failed(tool.name, arguments, error.message, kind=error.type)
            return _success(tool.name, arguments, _plain(envelope.payload))
        return await _call_python(tool, arguments)

    async def _run_lackpy(self, program: str) -> ExecutionResult:
        kit = self._kit()
        check = validate_for(program, kit, set(), None)
        if not check.valid:
            listed = "; ".join(str(issue) for issue in check.issues)
            raise UsageError(f"the program is not valid lackpy, nothing ran: {listed}")
        for name in _tools_named(check.tree, kit):
            self._check_grade(name, kit.tools[name].grade_w)
        return await self._run_program(program, {})

    async def _run_program(self, program: str, params: dict[str, Any]) -> ExecutionResult:
        runs = self.service.runs
        spec = runs.spec(program, self._kit(), params=params, approve=self.approve, unseen=True)
        return await runs.run(spec, self._place())

    def _place(self) -> Place:
        """Where the calls' programs run: the sandbox workers of this toolset (one per
        concurrent call), or this process, each program on a daemon thread of its own."""
        runs = self.service.runs
        if not runs.sandboxed():
            return runs.here(on_thread=in_daemon_thread)
        if self.pool is None:
            self.pool = tool_pool(self.service)
        return self.pool

    def _kit(self) -> ResolvedKit:
        if self.kit is None:
            raise KitError("this agent has no kit tools, so it cannot run lackpy programs")
        return self.kit

    def _check_grade(self, name: str, grade_w: int) -> None:
        limit = GRADES[self.ceiling]
        if grade_w > limit:
            grade = next(word for word, level in GRADES.items() if level >= grade_w)
            raise ToolApprovalError(
                f"{name} is a {grade} tool, and this agent runs tools up to {self.ceiling!r} "
                f"without asking, so it did not run; tell the user, who can allow it with "
                f"Agent(..., auto_run={grade!r}) or %agent --allow-writes")


def tool_pool(service: LackpyService) -> PoolPlace:
    """Sandbox workers for an agent's kit calls: each call gets a worker no other call is
    using, a new one when all are busy (the loop's ``max_parallel_tools`` bounds the calls);
    programs run on an empty namespace, so a worker carries nothing from one call to the
    next. The extra workers stop once idle, the first when the pool is closed."""
    return service.runs.new_pool()


# -- building a toolset ---------------------------------------------------------------


def build_toolset(tools: Any, service: LackpyService, *, ceiling: str | None = None,
                  lackpy: bool = False, pool: PoolPlace | None = None,
                  approve: Approver | None = None) -> Toolset:
    """The Toolset for ``tools``: None (the config's default kit), a kit spec (a kit name,
    ``"a,b"``, a list of tool names, an alias dict), or a list mixing kit tool names,
    Python callables and agents. The name ``lackpy`` (or ``lackpy=True``) adds the tool
    that runs a lackpy program on the kit.

    Raises KitError for a kit that does not resolve, UsageError for a tool the list cannot
    use (two tools of one name, an agent without a name, an unknown ceiling).
    """
    chosen = ceiling_of(ceiling, service)
    tools = service.config.kit_default if tools is None else tools
    kit_spec, others = _split(tools)
    if isinstance(kit_spec, list) and LACKPY_TOOL in kit_spec:
        kit_spec = [name for name in kit_spec if name != LACKPY_TOOL]
        lackpy = True
    if isinstance(kit_spec, list) and len(kit_spec) == 1 and isinstance(tools, str):
        kit_spec = kit_spec[0]  # "debug,lackpy": a kit's name, or one tool's
    resolved = service.resolve_kit(kit_spec) if kit_spec else None
    found: dict[str, AgentTool] = {}
    for alias, spec in (resolved.tools.items() if resolved else ()):
        found[alias] = AgentTool(alias, spec.description, _schema_of_args(spec.args), "kit",
                                 spec.grade_w)
    if lackpy:
        grade = resolved.grade.w if resolved else 0
        found[LACKPY_TOOL] = AgentTool(LACKPY_TOOL, "Run a lackpy program with the tools above "
                                       "as functions; returns its last expression.",
                                       _LACKPY_SCHEMA, LACKPY_TOOL, grade)
    for other in others:
        tool = _python_tool(other)
        if tool.name in found:
            raise UsageError(f"two tools are named {tool.name!r}; give one another name "
                             f"(agent.as_tool('other_name'))")
        found[tool.name] = tool
    return Toolset(found, service, resolved if resolved or lackpy else None, chosen, pool,
                   approve)


def ceiling_of(ceiling: str | None, service: LackpyService) -> str:
    """The approval ceiling: ``ceiling``, else the config's ``[delegate] auto_run`` when it
    has one, else ``read``; UsageError for a word that is not a grade."""
    chosen = ceiling or getattr(service.config, "delegate_auto_run", None) or DEFAULT_CEILING
    if chosen not in GRADES:
        raise UsageError(f"auto_run={chosen!r} is not a grade; use one of {', '.join(GRADES)}")
    return chosen


def _split(tools: Any) -> tuple[Any, list[Any]]:
    """The kit part of ``tools`` (a kit spec, or a list of tool names) and the rest."""
    if isinstance(tools, str):
        names = [name.strip() for name in tools.split(",") if name.strip()]
        return names, []
    if isinstance(tools, dict):
        return tools, []
    if not isinstance(tools, list | tuple):
        raise UsageError(f"tools must be a kit (a name, a list of tool names, an alias dict) "
                         f"or a list of tool names, callables and agents, not {tools!r}")
    names = [item for item in tools if isinstance(item, str)]
    return names, [item for item in tools if not isinstance(item, str)]


def _python_tool(target: Any) -> AgentTool:
    agent = getattr(target, "lackpy_agent", None)
    if agent is not None or hasattr(target, "as_tool"):
        if agent is None:
            if not getattr(target, "name", None):
                raise UsageError("an agent used as a tool needs a name: Agent(..., name='research') "
                                 "or agent.as_tool('research')")
            target = target.as_tool()
        return AgentTool(target.__name__, target.__doc__ or "", {
            "type": "object", "properties": {"task": {"type": "string",
                                                      "description": "what to do"}},
            "required": ["task"]}, "agent", target=target.lackpy_agent)
    if not callable(target):
        raise UsageError(f"{target!r} is not a tool: give kit tool names, callables or agents")
    name = getattr(target, "__name__", None)
    if not name or not name.isidentifier():
        raise UsageError(f"the callable {target!r} has no usable name; wrap it in a def")
    return AgentTool(name, _summary(inspect.getdoc(target)), _schema_of_callable(target),
                     "callable", target=target)


# -- schemas and arguments --------------------------------------------------------------


def _schema_of_args(args: list[Any]) -> dict[str, Any]:
    properties = {arg.name: {**_json_type(arg.type), **({"description": arg.description}
                                                          if arg.description else {})}
                  for arg in args}
    return {"type": "object", "properties": properties, "required": [arg.name for arg in args]}


def _schema_of_callable(function: Callable[..., Any]) -> dict[str, Any]:
    try:
        hints = typing.get_type_hints(function)
    except Exception:  # unresolvable annotations: describe the names only
        hints = {}
    properties, required = {}, []
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        properties[parameter.name] = _json_type(hints.get(parameter.name, Any))
        if parameter.default is parameter.empty:
            required.append(parameter.name)
    return {"type": "object", "properties": properties, "required": required}


def _json_type(annotation: Any) -> dict[str, Any]:
    """The JSON schema type of an annotation (a type or ArgSpec's text, such as
    ``list[str]``); ``{}`` (anything) when there is none."""
    if isinstance(annotation, str):
        base = annotation.split("[", 1)[0].strip()
    else:
        origin = typing.get_origin(annotation) or annotation
        base = getattr(origin, "__name__", "")
    kind = _JSON_TYPES.get(base)
    return {"type": kind} if kind else {}


_CHECKS: dict[str, Callable[[Any], bool]] = {
    "string": lambda value: isinstance(value, str),
    "integer": lambda value: isinstance(value, int) and not isinstance(value, bool),
    "number": lambda value: isinstance(value, int | float) and not isinstance(value, bool),
    "boolean": lambda value: isinstance(value, bool),
    "array": lambda value: isinstance(value, list),
    "object": lambda value: isinstance(value, dict),
}


def argument_problem(tool: AgentTool, arguments: Any) -> str | None:
    """What is wrong with ``arguments`` for ``tool`` (unknown or missing names, a value of
    the wrong JSON type), or None."""
    if not isinstance(arguments, dict):
        return f"the arguments must be a JSON object, not {type(arguments).__name__}"
    properties = tool.parameters.get("properties", {})
    takes = ", ".join(properties) or "no arguments"
    for name in arguments:
        if name not in properties:
            return (f"there is no argument {name!r}" + did_you_mean(name, list(properties),
                                                                    "arguments")
                    + f" ({tool.name} takes {takes})")
    for name in tool.parameters.get("required", []):
        if name not in arguments:
            return f"the argument {name!r} is missing ({tool.name} takes {takes})"
    for name, value in arguments.items():
        wanted = properties[name].get("type")
        if wanted in _CHECKS and not _CHECKS[wanted](value):
            return f"the argument {name!r} must be a JSON {wanted}, not {type(value).__name__}"
    return None


# -- outcomes ---------------------------------------------------------------------------


async def _call_python(tool: AgentTool, arguments: dict[str, Any]) -> CallOutcome:
    function = tool.target
    try:
        if inspect.iscoroutinefunction(function):
            output = await function(**arguments)
        else:
            output = await in_daemon_thread(function, **arguments)
        if inspect.isawaitable(output):
            output = await output
    except Exception as exc:  # the tool's own failure goes back to the model
        return CallOutcome.failed(tool.name, arguments, f"{type(exc).__name__}: {exc}")
    if dataclasses.is_dataclass(output) and not isinstance(output, type):
        output = dataclasses.asdict(output)
    bad = find_non_plain(output)
    if bad is not None:
        return CallOutcome.failed(tool.name, arguments, f"{tool.name} returned a {bad.__name__}, "
                                  f"not plain data (str, numbers, bool, None, lists, dicts)",
                                  kind="TypeError")
    return _success(tool.name, arguments, output)


def _from_result(name: str, arguments: dict[str, Any], result: ExecutionResult,
                 program: str) -> CallOutcome:
    """A kit call's or a program's outcome: a limit or an interrupt as its lackpy error, the
    tool's own error as the tool raised it (a one-line call without its line)."""
    try:
        result.raise_for_error()
    except (LimitError, ProgramInterrupted, SandboxError, KitError) as exc:
        return CallOutcome.failed(name, arguments, exc)
    except LackpyError:
        text = result.error or "the call failed"
        if result.error_type and not text.startswith(f"{result.error_type}:"):
            text = f"{result.error_type}: {text}"  # refused before a line ran (Kibitzer)
        return CallOutcome.failed(name, arguments, text.removesuffix(f" (line 1: {program})"))
    return _success(name, arguments, result.output)


def _success(name: str, arguments: dict[str, Any], output: Any) -> CallOutcome:
    return CallOutcome(result_text(output), False,
                       TraceEntry(0, name, dict(arguments), summarize(output), 0.0, True, None),
                       output)


async def in_daemon_thread(function: Callable[_P, _T], /, *args: _P.args,
                           **kwargs: _P.kwargs) -> _T:
    """``function(*args, **kwargs)`` in a daemon thread of its own. A call that never returns
    (abandoned at a timeout or an interrupt) keeps only its thread: it does not hold up the
    event loop's shutdown, as a thread of the default executor would."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[_T] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if not future.done():
            future.set_exception(error) if error is not None else future.set_result(result)

    def work() -> None:
        try:
            result, error = function(*args, **kwargs), None
        except BaseException as exc:  # handed to the awaiting coroutine
            result, error = None, exc
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody waits any more
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=work, name=f"lackpy-tool-{getattr(function, '__name__', 'call')}",
                     daemon=True).start()
    return await future


def result_text(output: Any) -> str:
    """What a model is told a tool returned: text as it is, other data as JSON, at most
    MAX_RESULT_CHARS characters."""
    text = output if isinstance(output, str) else json.dumps(jsonable(output), ensure_ascii=False)
    if len(text) > MAX_RESULT_CHARS:
        cut = len(text) - MAX_RESULT_CHARS
        text = f"{text[:MAX_RESULT_CHARS]}\n[... {cut} more characters not shown]"
    return text


def _tools_named(tree: ast.Module | None, kit: ResolvedKit) -> list[str]:
    """The kit's tools that a validated program names anywhere, called or not: a tool bound
    to a variable (``w = write_file``) or put in a list is called under another name, so
    the approval ceiling looks at every name, not only at the calls."""
    names = (node.id for node in ast.walk(tree) if isinstance(node, ast.Name)) if tree else ()
    return [name for name in dict.fromkeys(names) if name in kit.tools]


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    return value


def _summary(doc: str | None) -> str:
    return (doc or "").strip().split("\n\n", 1)[0].replace("\n", " ")
