"""The lackpy MCP server: LackpyService's operations as MCP tools, over stdio.

``build_server(workspace)`` makes the server (one ``LackpyService`` for its
whole life, closed when the server stops); ``main(workspace)`` runs it over
stdio. ``python -m lackpy_kernel.mcp_server [--workspace DIR]`` does the same
from a shell, and ``lackpy mcp`` calls ``main``.

This module only translates: MCP arguments in, the service's results out as
JSON-safe dicts, and the failures a caller can act on (an unknown kit or
tool, no provider able to write a program, a template that cannot be saved)
as MCP tool errors carrying the service's message. A program that fails
validation or raises while it runs is a normal result with ``success``
false, because that is an answer, not a failure of the call.

A program's file changes land only once the person approves them (``[sandbox] approve =
"write"``, the default): ``run_program`` and ``delegate`` ask through MCP elicitation
(a form with one ``apply`` field; the message shows the diff) where the client supports
it, and otherwise refuse them naming the setting. Up to protocol 2025-11-25 the question is
a request sent while the tool runs; from 2026-07-28, which has no such request, the tool
call answers ``input_required`` with the question (keyed by the change's digest), and the
client's retry with the answer runs the program again: the change lands when it is the one
approved (another change is asked again; a ``delegate`` whose model writes another program
on the retry may so be asked more than once). A refused change is a failed program
(``success`` false, ``error_type`` ChangeRefusedError), nothing written. A call of a
kernel-side tool graded write is asked for the same way, before it runs; refused, that call
fails (``ToolCallError``) and the tool never runs.
"""

import argparse
import dataclasses
import inspect
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, ParamSpec, TypeVar

from pydantic import BaseModel, Field

try:
    from mcp.server.elicitation import render_elicitation_schema
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.shared.exceptions import NoBackChannelError
    from mcp_types import (
        ClientCapabilities,
        ElicitationCapability,
        ElicitRequest,
        ElicitRequestFormParams,
        ElicitResult,
        FormElicitationCapability,
        InputRequiredResult,
        ToolAnnotations,
    )
    from mcp_types.version import is_version_at_least
except ImportError as exc:  # no SDK, or a 1.x SDK (where the server class was FastMCP)
    raise ImportError(
        f"the lackpy MCP server needs the official MCP SDK, version 2 or later ({exc}); "
        "install it with: pip install 'lackpy-kernel[mcp]'"
    ) from exc

import lackpy_kernel
from lackpy_kernel.errors import ChangeRefusedError, GenerationError, LackpyError, error_text
from lackpy_kernel.infer import GenerationResult, failure_text
from lackpy_kernel.kit import Kit as KitSpec
from lackpy_kernel.kit.changes import Change, change_digest
from lackpy_kernel.run.kernel_side import NO_ONE_TO_ASK
from lackpy_kernel.service import DelegateOptions, LackpyService, jsonable
from lackpy_kernel.telemetry import span

SERVER_NAME = "lackpy"
_P = ParamSpec("_P")
_T = TypeVar("_T")

INSTRUCTIONS = """\
lackpy is a small, validated subset of Python in which a program composes tools \
(read_file, find_files, find_definitions, ...) and plain data. Programs have no imports, \
no attribute access to private names and no I/O except through the kit's tools; the \
value of the last expression is the program's output. A kit names the tools a program \
may call: a kit name such as "debug", a comma-separated list such as \
"read_file,find_files", a list of tool names, or a dict of alias -> tool name.

Typical use: `delegate` with an intent in plain words (lackpy writes the program and \
runs it), or `run_program` with a program you wrote (check it first with `validate`). \
`create` saves a program that worked as a template, so the same intent later runs \
without a model. `kit_list`, `kit_info`, `toolbox_list`, `docs_index` and `resolve_doc` \
describe what is available."""

# The service raises LackpyError for things the caller can fix (unknown kit or
# tool, bad names, every provider failing); anything else is a bug and is left to
# the SDK, which logs its traceback and tells the client only that the tool failed.


Kit = Annotated[
    KitSpec,
    Field(description=(
        "The tools the program may call: a kit name (e.g. 'debug'), a comma-separated tool "
        "list ('read_file,find_files'), a list of tool names, or a dict of alias -> tool name "
        "(or alias -> {'tool': name}). Omitted: the workspace's default kit."
    )),
]
Params = Annotated[
    dict[str, Any] | None,
    Field(description="Named input values (plain JSON data) the program can use as variables."),
]
Program = Annotated[str, Field(description="The lackpy program source.")]
Intent = Annotated[str, Field(description="What the program should do, in plain words.")]
Variables = Annotated[
    dict[str, Any] | None,
    Field(description=(
        "Values (plain JSON data) from the caller's session the program may use by name: "
        "the model's prompt describes them (names, types, sizes, short previews)."
    )),
]
IncludeVariables = Annotated[bool, Field(description=(
    "Also return the variables the program assigned (each bounded like the output)."))]

_READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                             open_world_hint=False)
# Generating may ask a configured model (open world) and writes the ratchet's intent log
# (and, with [inference] record, the replay file) under .lackpy/: not read-only, but it
# only adds to lackpy's own bookkeeping, never changes the user's files.
_GENERATES = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False,
                             open_world_hint=True)
# A kit may hold write_file/edit_file, so running a program can change files.
_RUNS_PROGRAMS = ToolAnnotations(read_only_hint=False, destructive_hint=True,
                                 idempotent_hint=False, open_world_hint=False)
_DELEGATES = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                             open_world_hint=True)
_WRITES_CONFIG = ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                 idempotent_hint=True, open_world_hint=False)
_ELICITS = ClientCapabilities(elicitation=ElicitationCapability(form=FormElicitationCapability()))
ASKS_BY_RETRY = "2026-07-28"  # from this protocol on, a tool asks by answering input_required
APPROVAL_QUESTION = "lackpy: apply these changes to the files?"


class Approval(BaseModel):
    """The form a person answers to let a program's file changes land."""

    apply: bool = Field(description="Apply the changes shown (false: discard them)")


def build_server(workspace: str | os.PathLike[str] | None = None) -> MCPServer:
    """An MCP server named "lackpy" whose tools call one LackpyService for ``workspace``.

    The service is created now (so a malformed ``.lackpy/config.toml`` raises
    here, naming the file) and closed when the server's run ends. It is also
    reachable as ``server.lackpy_service``.
    """
    service = LackpyService(workspace)

    @asynccontextmanager
    async def lifespan(_server: MCPServer) -> AsyncIterator[dict[str, Any]]:
        try:
            yield {"service": service}
        finally:
            service.close()

    server = MCPServer(
        SERVER_NAME,
        title="lackpy",
        description="Validate, generate and run lackpy programs in a workspace.",
        instructions=INSTRUCTIONS,
        version=lackpy_kernel.__version__,
        lifespan=lifespan,
        log_level="WARNING",  # stderr is the client's log; tool errors already reach the client
    )
    server.lackpy_service = service  # type: ignore[attr-defined]

    def tool(annotations: ToolAnnotations) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        def register(fn: Callable[..., Any]) -> Callable[..., Any]:
            # the docstring without its code indentation, as a client shows it
            return server.tool(description=inspect.cleandoc(fn.__doc__ or ""),
                               annotations=annotations, structured_output=True)(fn)
        return register

    @tool(_READ_ONLY)
    def validate(program: Program, kit: Kit = None) -> dict[str, Any]:
        """Check a lackpy program against the grammar and the kit's tools, without running it.

        Returns {valid, errors, calls, variables}: `errors` are messages of the form
        "line L, col C: what is wrong, and what to do"; `calls` the functions the program
        calls; `variables` the names it assigns. An invalid program is a normal result
        (valid false); an unknown kit is an error.
        """
        result = _call(service.validate, program, kit)
        return {"valid": result.valid, "errors": list(result.errors), "calls": list(result.calls),
                "variables": list(result.variables)}

    @tool(_GENERATES)
    async def generate(intent: Intent, kit: Kit = None, params: Params = None,
                       variables: Variables = None) -> dict[str, Any]:
        """Write a lackpy program for an intent, validated against the kit, without running it.

        Tries the inference tiers in order (saved templates, built-in rules, then any
        configured models) and returns {program, provider_name, generation_time_ms,
        correction_strategy, correction_attempts, attempts_log}. It is an error when no
        provider produces a valid program; the message says why each one failed.
        """
        result = await _acall(_generate, intent, kit, params, variables)
        return _json_dict(dataclasses.asdict(result))

    async def _generate(intent: str, kit: KitSpec, params: dict[str, Any] | None,
                        variables: dict[str, Any] | None) -> GenerationResult:
        return await service.generate(intent, kit, params, variables=variables)

    async def _delegate(intent: str, kit: KitSpec, params: dict[str, Any] | None,
                        variables: dict[str, Any] | None, ctx: Context
                        ) -> dict[str, Any] | InputRequiredResult:
        asking = Eliciting(ctx)
        result = (await service.delegation(intent, DelegateOptions(
            kit=kit, params=params, variables=variables, approve=asking))).to_dict()
        return asking.input_required() or result

    @tool(_RUNS_PROGRAMS)
    async def run_program(ctx: Context, program: Program, kit: Kit = None,
                          params: Params = None,
                          include_variables: IncludeVariables = False
                          ) -> dict[str, Any] | InputRequiredResult:
        """Validate, then run a lackpy program with the kit's tools (in the sandbox when enabled).

        Returns {success, output, error, error_type, error_line, stdout, trace, variables,
        issues, notes}: `output` is the last expression's value, `trace` has one entry per
        tool call plus the files read and modified. A program that fails validation or
        raises at run time is a normal result with success false and the error text.
        Values that are not JSON (sets, objects) come back as their repr; values too large
        to send come back as a short text saying so. `variables` is empty unless
        include_variables is true. An unknown kit or tool is a tool error (isError): the
        request was wrong, not the program. File changes land only once the user approves
        them (asked through elicitation; refused where the client cannot ask).
        """
        asking = Eliciting(ctx)
        result = await _acall(service.run_program, program, kit, params, approve=asking,
                              unseen=True)
        if (question := asking.input_required()) is not None:
            return question
        if not include_variables:
            result.variables = {}
        return _json_dict(result.to_dict())

    @tool(_DELEGATES)
    async def delegate(ctx: Context, intent: Intent, kit: Kit = None, params: Params = None,
                       variables: Variables = None) -> dict[str, Any] | InputRequiredResult:
        """Generate a lackpy program for an intent and run it, in one step.

        Returns {success, program, grade, generation_tier, generation_time_ms,
        execution_time_ms, total_time_ms, trace, files_read, files_modified, output, stdout,
        error, correction_strategy, uses}. `generation_tier` names the provider that wrote
        the program ("templates", "rules", a model tier, ...); `uses` lists the variables it
        reads. A program that fails at run time is a normal result with success false; no
        provider producing a valid program, or an unknown kit, is a tool error (isError).
        File changes land only once the user approves them, as for run_program.
        """
        result = await _acall(_delegate, intent, kit, params, variables, ctx)
        return result if isinstance(result, InputRequiredResult) else _json_dict(result)

    @tool(_WRITES_CONFIG)
    async def create(program: Program,
                     name: Annotated[str, Field(description=(
                         "Template name: letters, digits, '_' and '-'; saved as "
                         ".lackpy/templates/<name>.tmpl."))],
                     kit: Kit = None,
                     pattern: Annotated[str | None, Field(description=(
                         "The intent the template answers, with {placeholders} for the parts "
                         "that vary, e.g. 'read the file {path}' (matched whole and "
                         "case-insensitively). Omitted: the intent that last produced this "
                         "program through delegate."))] = None,
                     ) -> dict[str, Any]:
        """Save a working program as a template, so the same intent later needs no model.

        The program is validated against the kit first. Returns {success, path, pattern}.
        An invalid program, a bad name or a missing pattern is an error listing what is
        wrong.
        """
        result = await _acall(service.create, program, kit, name, pattern)
        if not result.get("success"):
            errors = result.get("errors") or ["unknown error"]
            raise ToolError(f"could not save template {name!r}:\n" + "\n".join(map(str, errors)))
        return _json_dict(result)

    @tool(_READ_ONLY)
    def kit_info(kit: Annotated[str | list[str] | dict[str, Any], Field(description=(
            "A kit name, a comma-separated tool list, a list of tool names, or a dict of "
            "alias -> tool name."))]) -> dict[str, Any]:
        """Describe a kit: {tools (alias -> spec with args, returns, grades, docs), grade {w, d},
        description (the namespace text a model sees)}. An unknown kit or tool is an error."""
        return _json_dict(_call(service.kit_info, kit))

    @tool(_READ_ONLY)
    def kit_list() -> dict[str, Any]:
        """List the kits a name can refer to: {kits: [{name, path, source}]}, where source is
        "workspace" (.lackpy/kits) or "shipped" (with the package)."""
        return {"kits": jsonable(_call(service.kit_list))}

    @tool(_WRITES_CONFIG)
    def kit_create(name: Annotated[str, Field(description=(
                       "Kit name: letters, digits, '_' and '-'; saved as .lackpy/kits/<name>.kit."))],
                   tools: Annotated[list[str], Field(description="The tool names the kit holds.")],
                   description: Annotated[str | None, Field(
                       description="A line saying what the kit is for.")] = None,
                   ) -> dict[str, Any]:
        """Create (or replace) a workspace kit: {name, path, tools}. Every tool must exist
        (see toolbox_list); an unknown tool or a bad name is an error."""
        return _json_dict(_call(service.kit_create, name, tools, description))

    @tool(_READ_ONLY)
    def toolbox_list() -> dict[str, Any]:
        """List every registered tool: {tools: [{name, provider, source, description, grade_w,
        effects_ceiling}]}; source says where a tool comes from ("builtin", or a tool source
        of the workspace's config such as "mine (python: tools/mine.py)"). Kits choose among
        these."""
        return {"tools": jsonable(_call(service.toolbox_list))}

    @tool(_READ_ONLY)
    def docs_index(kit: Kit = None) -> dict[str, Any]:
        """Where a kit's documentation is: {tool_docs (tool -> doc path), kit_docs [paths]}.
        Read a path with resolve_doc."""
        return _json_dict(_call(service.docs_index, kit))

    @tool(_READ_ONLY)
    def resolve_doc(doc_path: Annotated[str, Field(description=(
            "A relative doc path, as docs_index gives it."))]) -> dict[str, Any]:
        """Read a documentation file: {doc_path, found, content}. Paths resolve in the
        workspace, then in the package's own docs, never outside them; a path that is not
        there (or points outside) gives found false and content null."""
        content = _call(service.resolve_doc, doc_path)
        return {"doc_path": doc_path, "found": content is not None, "content": content}

    return server


def main(workspace: str | os.PathLike[str] | None = None) -> int:
    """Serve lackpy over stdio for ``workspace`` (default: the current directory) until the
    client closes the connection. Returns the exit status."""
    try:
        server = build_server(workspace)
    except (OSError, ValueError) as exc:  # a malformed config, an unreadable workspace
        print(f"lackpy mcp: {exc}", file=sys.stderr)
        return 2
    try:
        server.run("stdio")
    except KeyboardInterrupt:
        pass
    finally:
        server.lackpy_service.close()  # type: ignore[attr-defined]
    return 0


class Eliciting:
    """The approver of one tool call: it shows the change and asks through MCP elicitation
    (accepting with ``apply`` true applies it; declining, cancelling or false discards it),
    and refuses it, naming ``[sandbox] approve``, where the client cannot elicit.

    From protocol 2026-07-28 a change is looked up among the answers the call's retry
    carries (``input_responses``, keyed by the change's digest); one not answered yet is
    declined and kept, and ``input_required`` then asks for it in place of the result."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.unasked: dict[str, Change] = {}

    async def __call__(self, change: Change) -> bool:
        ctx = self.ctx
        change = change.in_full()  # the client is sent all of it, and may fold it
        if not change.complete:
            raise ChangeRefusedError("the change is too large to send whole ("
                                     + "; ".join(change.unseen()) + "), so it was not applied")
        if not ctx.session.check_client_capability(_ELICITS):
            raise ChangeRefusedError(f"this MCP client does not support elicitation, so "
                                     f"{NO_ONE_TO_ASK}")
        if ctx.protocol_version is not None and is_version_at_least(ctx.protocol_version,
                                                                    ASKS_BY_RETRY):
            return self._answered(change)
        try:
            answer = await ctx.elicit(_question(change), Approval)
        except NoBackChannelError:
            raise ChangeRefusedError(
                f"this MCP session (protocol {ctx.protocol_version}) cannot ask while a tool "
                f"runs, so {NO_ONE_TO_ASK}") from None
        return answer.action == "accept" and answer.data.apply

    def _answered(self, change: Change) -> bool:
        """Whether the retry's answer for ``change`` applies it; False, keeping it to ask,
        when there is none."""
        digest = change_digest(change)
        answer = (self.ctx.input_responses or {}).get(digest)
        if not isinstance(answer, ElicitResult):
            self.unasked[digest] = change
            return False
        content = answer.content or {}
        return answer.action == "accept" and content.get("apply") is True

    def input_required(self) -> InputRequiredResult | None:
        """The questions for the changes no answer covered yet (the call's result then), or
        None."""
        if not self.unasked:
            return None
        schema = render_elicitation_schema(Approval)
        return InputRequiredResult(input_requests={
            digest: ElicitRequest(params=ElicitRequestFormParams(
                message=_question(change), requested_schema=schema))
            for digest, change in self.unasked.items()})


def _question(change: Change) -> str:
    """What the person is asked: files' changes under ``APPROVAL_QUESTION`` (with the files
    that run code); a write tool's call as the other surfaces ask it (``lackpy: Call
    NAME?``); then all of the change."""
    asked = (f"{APPROVAL_QUESTION} {change.warnings()}".rstrip() if change.call is None
             else f"lackpy: {change.question()}")
    return f"{asked}\n\n{change.to_text()}"


def _call(fn: Callable[_P, _T], *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """``fn``'s result, in a span; a LackpyError becomes a ToolError carrying its message."""
    try:
        with span(f"lackpy.mcp {fn.__name__.lstrip('_')}"):
            return fn(*args, **kwargs)
    except LackpyError as exc:
        raise ToolError(_message(exc)) from exc


async def _acall(fn: Callable[_P, Awaitable[_T]], *args: _P.args, **kwargs: _P.kwargs) -> _T:
    """``fn``'s result, awaited in a span; a LackpyError becomes a ToolError carrying its message."""
    try:
        with span(f"lackpy.mcp {fn.__name__.lstrip('_')}"):
            return await fn(*args, **kwargs)
    except LackpyError as exc:
        raise ToolError(_message(exc)) from exc


def _message(exc: LackpyError) -> str:
    """What a ToolError says: the error's message, a GenerationError's next step in MCP's terms."""
    return failure_text(exc, "mcp") if isinstance(exc, GenerationError) else error_text(exc)


def _json_dict(value: Mapping[str, Any]) -> dict[str, Any]:
    """``value`` as JSON data (see ``jsonable``), which keeps a dict a dict."""
    data: dict[str, Any] = jsonable(value)
    return data


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m lackpy_kernel.mcp_server",
        description="Serve lackpy's tools over MCP (stdio).")
    parser.add_argument("--workspace", type=Path, default=None,
                        help="folder the tools work in (default: the current directory)")
    return parser.parse_args(argv)


if __name__ == "__main__":
    sys.exit(main(_parse_args(None).workspace))
