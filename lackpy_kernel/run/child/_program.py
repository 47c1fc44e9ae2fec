"""A program's run inside the child: its tools, the restricted runner, and its reply (the
result in plain data, and what it changed in the session as a commit)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from lackpy_kernel.kit import FileToolsProvider
from lackpy_kernel.kit.builtin_tools import PACKAGE_ROOT
from lackpy_kernel.kit.staging import Stage, stage_folder, staging

from .. import wire
from ..commit import UnitLog, changed_names, make_commit
from ..failures import failed_after, failure, too_big_message
from ..plain import display_problem, find_non_plain
from ..protocol import Reply, RunRequest, sealed
from ..runner import ExecutionResult, RestrictedRunner, names_in
from ..trace import summarize
from ._prepared import named_kits, resolve
from ._snapshot import Snapshot
from ._tools import child_tools

WARM_UP_TOOL = "lackpy_warm_up"  # a tool only the warm-up has: it returns its argument
WARM_UP_READ = "lackpy_warm_up_read"  # and read_file, reading lackpy's own files
WARM_UP_SHIPPED = "kit/docs/read_file.md"  # what it reads: read_file's own page
WARM_UP_PROGRAM = f"{WARM_UP_TOOL}(sorted([len({WARM_UP_READ}({WARM_UP_SHIPPED!r})), 1 + 1]))"
WARM_UP_SOURCES = {WARM_UP_TOOL: "warm-up", WARM_UP_READ: "warm-up"}
Tools = tuple[dict[str, Callable[..., Any]], dict[str, str]]  # callables, and their sources


def run_request(request: RunRequest, snapshot: Snapshot, on_modified: Callable[[str], None],
                *, warming_up: bool = False) -> Reply:
    """Run the request's program with its tools in the snapshot's session (or an empty one);
    its reply. ``warming_up`` adds the warm-up's own tools."""
    session, log = snapshot.session, snapshot.log
    try:
        tools, sources = kit_for(request, snapshot)
        if warming_up:  # a traced tool call, the path every tool call takes after it
            tools, sources = {**tools, **_warm_up_tools()}, {**sources, **WARM_UP_SOURCES}
    except Exception as exc:
        return failure("KitError", f"{type(exc).__name__}: {exc}")
    root = snapshot.walled_for[0]  # the workspace's real path: ``fits`` held it to the walls'
    folder = stage_folder(root, os.getpid())
    stage = Stage(root, folder, made=folder == snapshot.stage, protected=request.protected)
    with staging(stage):  # the worker commits it
        result = RestrictedRunner(max_tool_calls=request.max_tool_calls).run(
            request.program, tools, request.params, variables=session if request.keep else {},
            on_file_modified=on_modified, sources=sources,
        )
    if result.error_type == "MemoryError" and result.error is not None:
        result.error += (f"; the limit is {request.memory_mb} MB "
                         "([sandbox] memory_mb in .lackpy/config.toml)")
    return _reply(result, request, session if request.keep else {}, log)


def kit_for(request: RunRequest, snapshot: Snapshot) -> Tools:
    """The request's tools (alias -> callable) and their sources: its kit's built-in tools
    (their writes refusing the request's protected files), then the tools it describes, in
    this process or forwarded to the kernel's. Raises KitError, ToolSourceError."""
    kit = named_kits.get(request) if isinstance(request.kit, (list, dict)) else resolve(request)
    sources = {alias: spec.source for alias, spec in kit.tools.items()}
    more, more_sources = child_tools(request.tools, request.workspace, snapshot.python_tools,
                                     snapshot.channel,
                                     lambda: snapshot.walls_up)  # up after the warm-up
    return {**kit.callables, **more}, {**sources, **more_sources}


def encode(reply: Reply, request: RunRequest, nonce: int = 0) -> bytes:
    """The child's final frame (its ``Reply``, ``sealed`` with ``nonce``), or a failure's
    when it cannot be sent whole."""
    try:
        data = wire.dumps(sealed(reply.to_frame(), nonce))
    except (RecursionError, MemoryError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else "too large"
        message = f"the program's result is {reason} to send back"
    else:
        if len(data) <= request.max_result_bytes:
            return data
        message = too_big_message(request)
    failed = failed_after(reply.result.trace, "ResultTooLarge", message)
    return wire.dumps(sealed(failed.to_frame(), nonce))


def _echo(value: Any) -> Any:
    return value


def _warm_up_tools() -> dict[str, Callable[..., Any]]:
    """The warm-up's own tools: the probe, and read_file for the package's folder (the
    file tools' read path, which programs use most, then costs them no first use)."""
    return {WARM_UP_TOOL: _echo, WARM_UP_READ: FileToolsProvider(PACKAGE_ROOT).read_file}


def _reply(result: ExecutionResult, request: RunRequest, before: dict[str, Any],
           log: UnitLog) -> Reply:
    """The result in plain data, and what changed in the session when kept."""
    commit = None
    if result.success:
        named = names_in(request.program)
        changed, deleted = changed_names(before, result.variables, named, log)
        kept, dropped = _plain_values({name: result.variables[name] for name in changed})
        if dropped:
            result.notes.append(
                "not kept (only plain data persists; wrap iterators in list(...)): "
                + ", ".join(f"{name} ({kind})" for name, kind in dropped)
            )
        deleted += [name for name, _ in dropped if name in before]
        if request.return_variables:
            result.variables = _shown({name: value for name, value in result.variables.items()
                                       if name not in dict(dropped)})
        else:
            result.variables = {}
        if request.keep:
            try:
                commit = make_commit(kept, deleted)
            except RecursionError:
                return failed_after(result.trace, "RecursionError", "a variable is nested too "
                                    "deeply to keep between programs; flatten it or set it to None")
            if log.size_after(commit) > request.max_result_bytes:
                return failed_after(result.trace, "ResultTooLarge", _session_too_big(request))
        if find_non_plain(result.output) is not None:
            result.notes.append(f"the output, of type {type(result.output).__name__}, is shown as text")
            result.output = summarize(result.output)
    return Reply(result, commit)


def _session_too_big(request: RunRequest) -> str:
    limit = request.max_result_bytes / 1_000_000
    return (f"the session's variables would be over the {limit:g} MB limit; "
            "set big variables to None (or %reset) and keep smaller values")


def _shown(variables: dict[str, Any]) -> dict[str, Any]:
    """The variables, each that cannot be shown in full replaced by its summary."""
    return {name: value if display_problem(value) is None else summarize(value)
            for name, value in variables.items()}


def _plain_values(variables: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    kept, dropped = {}, []
    for name, value in variables.items():
        bad = find_non_plain(value)
        if bad is None:
            kept[name] = value
        else:
            dropped.append((name, bad.__name__))
    return kept, dropped
