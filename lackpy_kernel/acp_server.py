"""The lackpy ACP server: ``lackpy acp``, an Agent Client Protocol agent over stdio.

An editor or chat (Zed, jupyter-ai, marimo) starts ``lackpy acp`` and speaks ACP on its
stdin and stdout. Each ACP session is a ``LackpySession`` in the session's working
directory (the workspace). A prompt is delegated as ``%delegate`` does it (templates,
rules, replay, models): each tier tried is reported as the agent's thought, the program
as a tool call whose content is the program, and the program's result as the agent's
message. Two modes: ``run`` (the default) runs a program that only reads in the sandbox;
``plan`` shows the program and stops. A program that writes is shown and not run:
asking the person to approve a write comes with the transactional-files work.

This module only translates; the session and the service do the work.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

try:
    from acp import (
        PROTOCOL_VERSION,
        Agent,
        Client,
        InitializeResponse,
        NewSessionResponse,
        PromptResponse,
        RequestError,
        SetSessionModeResponse,
        run_agent,
        start_tool_call,
        stdio_streams,
        text_block,
        tool_content,
        update_agent_message_text,
        update_agent_thought_text,
        update_tool_call,
    )
    from acp.schema import (
        AgentCapabilities,
        AudioContentBlock,
        ClientCapabilities,
        ContentToolCallContent,
        EmbeddedResourceContentBlock,
        ImageContentBlock,
        Implementation,
        PromptCapabilities,
        ResourceContentBlock,
        SessionMode,
        SessionModeState,
        TextContentBlock,
    )
except ImportError as exc:
    raise ImportError(
        f"the lackpy ACP server needs the Agent Client Protocol SDK ({exc}); "
        "install it with: pip install 'lackpy-kernel[acp]'"
    ) from exc

import lackpy_kernel
from lackpy_kernel.config import AUTO_RUN_LEVELS, load_config
from lackpy_kernel.errors import GenerationError, LackpyError, error_text
from lackpy_kernel.infer import GenerationEvent, ProgramStreaming
from lackpy_kernel.notebook.bundles import (
    generation_progress,
    generation_summary,
    output_text,
    program_error,
)
from lackpy_kernel.run import ExecutionResult
from lackpy_kernel.service import Delegation, LackpyService
from lackpy_kernel.session import LackpySession

__all__ = ["MODES", "LackpyAgent", "main"]

ContentBlock = (TextContentBlock | ImageContentBlock | AudioContentBlock | ResourceContentBlock
                | EmbeddedResourceContentBlock)

MODES = {
    "run": "write a program for the prompt, check it, and run it in the sandbox when it only "
           "reads; the answer is its result",
    "plan": "write a program for the prompt and show it, without running it",
}
DEFAULT_MODE = "run"
MAX_PROMPT_CHARS = 100_000  # a longer prompt is refused before any tier sees it
MAX_LINE_BYTES = 50 * 1024 * 1024  # a longer JSON-RPC line is dropped (the SDK's own limit)
PARSE_ERROR = json.dumps({"jsonrpc": "2.0", "id": None, "error": {
    "code": -32700, "message": "Parse error: each line must be one JSON-RPC object"}}).encode() + b"\n"
READ = AUTO_RUN_LEVELS["read"]  # the highest tool grade a program run from the chat may call
WRITES_NOT_RUN = ("not run: it calls {tools}, which change files. Approving a write from the "
                  "chat comes with lackpy's transactional files (a program's changes staged, "
                  "shown as a diff and committed only when you say yes); until then this agent "
                  "runs only programs that read. Run it yourself with `lackpy run` if you mean it.")
STOPPED = "stopped: the prompt was cancelled; nothing it started is still running."
_log = logging.getLogger(__name__)


@dataclass
class _Chat:
    """One ACP session: its lackpy session, its mode, and the prompt it is answering."""

    session: LackpySession
    mode: str = DEFAULT_MODE
    answering: asyncio.Task[None] | None = None
    cancelled: bool = False
    programs: int = 0
    running: str | None = None  # the tool call of the program running now


class LackpyAgent:
    """The ACP agent: one ``LackpySession`` per ACP session, closed with the agent. The
    SDK answers "method not found" for the methods of ``acp.Agent`` it does not have
    (``session/load``, ``authenticate``, ...)."""

    def __init__(self) -> None:
        self._client: Client | None = None
        self._chats: dict[str, _Chat] = {}

    def on_connect(self, conn: Client) -> None:
        self._client = conn

    async def initialize(self, protocol_version: int,
                         client_capabilities: ClientCapabilities | None = None,
                         client_info: Implementation | None = None,
                         **kwargs: Any) -> InitializeResponse:
        """What this agent supports: text prompts, no session loading, no MCP servers yet."""
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=False,
                prompt_capabilities=PromptCapabilities(image=False, audio=False,
                                                       embedded_context=False)),
            agent_info=Implementation(name="lackpy", title="lackpy",
                                      version=lackpy_kernel.__version__),
        )

    async def new_session(self, cwd: str, additional_directories: list[str] | None = None,
                          mcp_servers: list[Any] | None = None,
                          **kwargs: Any) -> NewSessionResponse:
        """A session whose workspace is ``cwd``; raises an invalid-params error when ``cwd``
        is no absolute folder or its ``.lackpy/config.toml`` is malformed."""
        workspace = Path(cwd)
        if not workspace.is_absolute() or not workspace.is_dir():
            raise RequestError.invalid_params({"cwd": f"not an absolute path to a folder: {cwd}"})
        try:
            service = LackpyService(workspace, load_config(workspace))
        except (LackpyError, OSError) as exc:
            raise RequestError.invalid_params({"cwd": error_text(exc)}) from exc
        session = LackpySession(service)
        session.start()
        session_id = uuid.uuid4().hex
        self._chats[session_id] = _Chat(session)
        modes = [SessionMode(id=mode, name=mode, description=text) for mode, text in MODES.items()]
        return NewSessionResponse(session_id=session_id, modes=SessionModeState(
            current_mode_id=DEFAULT_MODE, available_modes=modes))

    async def set_session_mode(self, session_id: str, mode_id: str,
                               **kwargs: Any) -> SetSessionModeResponse:
        """Switch the session to ``mode_id``; raises invalid-params for an unknown mode or
        session."""
        chat = self._chat(session_id)
        if mode_id not in MODES:
            raise RequestError.invalid_params(
                {"modeId": f"unknown mode {mode_id!r}; the modes are {', '.join(MODES)}"})
        chat.mode = mode_id
        return SetSessionModeResponse()

    async def prompt(self, session_id: str, prompt: list[ContentBlock],
                     **kwargs: Any) -> PromptResponse:
        """Answer ``prompt``: its stop reason is ``cancelled`` when ``session/cancel`` came
        first. Raises invalid-params for an unknown session, invalid-request while the
        session is still answering another prompt."""
        chat = self._chat(session_id)
        if chat.answering is not None:
            raise RequestError.invalid_request(
                {"sessionId": "this session is still answering a prompt; cancel it first"})
        chat.cancelled, chat.running = False, None
        chat.answering = asyncio.ensure_future(self._answer(chat, session_id, prompt))
        try:
            await chat.answering
            return PromptResponse(stop_reason="end_turn")
        except asyncio.CancelledError:
            if not chat.cancelled:
                raise
            if chat.running is not None:
                await self._update(session_id, update_tool_call(chat.running, status="failed"))
            await self._say(session_id, STOPPED)
            return PromptResponse(stop_reason="cancelled")
        finally:
            chat.answering = None

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """Stop the session's prompt: the model call or the sandboxed program ends at once."""
        chat = self._chats.get(session_id)
        if chat is not None and chat.answering is not None:
            chat.cancelled = True
            chat.answering.cancel()

    def close(self) -> None:
        """Close every session's sandbox."""
        for chat in self._chats.values():
            chat.session.close()
        self._chats.clear()

    # -- a prompt ---------------------------------------------------------------------

    async def _answer(self, chat: _Chat, session_id: str, prompt: list[ContentBlock]) -> None:
        intent = _intent(prompt)
        refusal = _refusal(intent)
        if refusal:
            await self._say(session_id, refusal)
            return
        delegation = await self._write(chat.session, session_id, intent)
        if delegation is None:
            return
        chat.programs += 1
        call_id = f"program-{chat.programs}"
        summary = generation_summary(delegation.generated)
        await self._update(session_id, start_tool_call(
            call_id, f"lackpy program ({summary})", kind="execute", status="pending",
            content=[_shown(delegation.program)],
            raw_input={"intent": intent, "program": delegation.program}))
        held = _held(chat.session, delegation.program) if chat.mode == "run" else ""
        if chat.mode == "plan" or held:
            await self._update(session_id, update_tool_call(
                call_id, status="failed" if held else "completed"))
            await self._say(session_id, held or f"plan mode: the program above was {summary} "
                                                "and not run. Switch to run mode to run it.")
            return
        chat.running = call_id
        await self._run(chat.session, session_id, call_id, delegation)
        chat.running = None

    async def _write(self, session: LackpySession, session_id: str,
                     intent: str) -> Delegation | None:
        """The tiers' program for ``intent``, each tier tried sent as a thought; None, with
        the reason said, when none wrote one."""
        progress = _Progress(lambda line: self._update(session_id,
                                                       update_agent_thought_text(line)))
        try:
            delegation = await session.delegate(intent, on_event=progress.add)
        except LackpyError as exc:
            await progress.flush()
            failed = "no tier could write a program: " if isinstance(exc, GenerationError) else ""
            await self._say(session_id, failed + error_text(exc))
            return None
        except asyncio.CancelledError:
            progress.cancel()
            raise
        await progress.flush()
        return delegation

    async def _run(self, session: LackpySession, session_id: str, call_id: str,
                   delegation: Delegation) -> None:
        """Run the delegation's program in the session (kept by the ratchet as ``%delegate``
        keeps it) and answer with its result."""
        await self._update(session_id, update_tool_call(call_id, status="in_progress"))
        started = time.perf_counter()
        result = await session.run(delegation.program)
        session.service.ran(delegation, result, started)
        reply = _reply(result, delegation.program)
        await self._update(session_id, update_tool_call(
            call_id, status="completed" if result.success else "failed",
            content=[_shown(delegation.program), tool_content(text_block(reply))]))
        await self._say(session_id, reply)

    def _chat(self, session_id: str) -> _Chat:
        chat = self._chats.get(session_id)
        if chat is None:
            raise RequestError.invalid_params(
                {"sessionId": f"unknown session {session_id!r}; start one with session/new"})
        return chat

    async def _say(self, session_id: str, text: str) -> None:
        await self._update(session_id, update_agent_message_text(text))

    async def _update(self, session_id: str, update: Any) -> None:
        if self._client is not None:
            await self._client.session_update(session_id=session_id, update=update)


class _Progress:
    """The tiers tried for a prompt, each sent as the agent's thought as it happens, in
    order (one task sends them)."""

    def __init__(self, send: Callable[[str], Awaitable[None]]) -> None:
        self._lines: asyncio.Queue[str | None] = asyncio.Queue()
        self._sender = asyncio.ensure_future(self._send_all(send))

    def add(self, event: GenerationEvent) -> None:
        """Send ``event``'s line (a model's streamed text is not sent)."""
        if not isinstance(event, ProgramStreaming):
            self._lines.put_nowait(generation_progress([event]))

    async def flush(self) -> None:
        """Wait until every line is sent."""
        self._lines.put_nowait(None)
        await self._sender

    def cancel(self) -> None:
        """Stop sending (the prompt was cancelled)."""
        self._sender.cancel()

    async def _send_all(self, send: Callable[[str], Awaitable[None]]) -> None:
        while (line := await self._lines.get()) is not None:
            await send(line)


def _intent(prompt: list[ContentBlock]) -> str:
    """The prompt's text blocks, joined; "" when it has none."""
    texts = [block.text for block in prompt if isinstance(block, TextContentBlock)]
    return "\n".join(texts).strip()


def _shown(program: str) -> ContentToolCallContent:
    """``program`` as a tool call's content: a Markdown code block, so the client shows it
    as code."""
    fence = "````" if "```" in program else "```"
    return tool_content(text_block(f"{fence}python\n{program}\n{fence}"))


def _refusal(intent: str) -> str:
    """Why a prompt whose text is ``intent`` gets no program ("" when it may have one)."""
    if not intent:
        return ("lackpy reads text only: write what the program should do in words (images "
                "and other blocks are not read).")
    if len(intent) > MAX_PROMPT_CHARS:
        return (f"the prompt is {len(intent)} characters long; lackpy takes at most "
                f"{MAX_PROMPT_CHARS}. Say what the program should do in fewer words.")
    return ""


def _held(session: LackpySession, program: str) -> str:
    """Why ``program`` is not run from the chat ("" when it may run): it calls a tool that
    writes, or one beyond the config's ``[delegate] auto_run``."""
    resolved = session.resolved_kit()
    calls = session.validate(program).calls
    writes = sorted({name for name in calls if name in resolved.tools
                     and resolved.tools[name].grade_w > READ})
    if writes:
        return WRITES_NOT_RUN.format(tools=", ".join(writes))
    check = session.service.run_check(program, resolved)
    return "" if check.allowed else f"not run: {check.reason}."


def _reply(result: ExecutionResult, program: str) -> str:
    """A run's answer as the notebook renders it: what it printed, its notes, then its
    output (bounded) or its error."""
    parts = [result.stdout.rstrip("\n")] if result.stdout else []
    parts += [f"lackpy: {note}" for note in result.notes]
    if result.success:
        parts.append(output_text(result.output) if result.output is not None else "(no output)")
    else:
        parts.append("\n".join(program_error(result, program).traceback))
    return "\n".join(parts)


async def serve(agent: LackpyAgent) -> None:
    """Run ``agent`` over this process's stdin and stdout until the client leaves. Python's
    ``print`` goes to stderr meanwhile, so that nothing but the protocol reaches stdout."""
    reader, writer = await stdio_streams(limit=MAX_LINE_BYTES)
    sys.stdout = sys.stderr
    objects = asyncio.StreamReader(limit=MAX_LINE_BYTES)
    pump = asyncio.ensure_future(_pump_objects(reader, objects, writer))
    try:
        await run_agent(cast(Agent, agent), writer, objects)
    finally:
        pump.cancel()


async def _pump_objects(reader: asyncio.StreamReader, objects: asyncio.StreamReader,
                        writer: asyncio.StreamWriter) -> None:
    """Feed ``objects`` the lines of ``reader`` that are JSON objects. Any other line (not
    JSON, a JSON list or number, a line over ``MAX_LINE_BYTES``) gets JSON-RPC's parse
    error on ``writer`` and goes no further, so that it cannot stop the SDK's receive loop."""
    while True:
        try:
            line = await reader.readline()
        except ValueError:  # over the limit: asyncio has dropped what it held of the line
            line = b"\x00"
        if not line:
            break
        if _is_object(line):
            objects.feed_data(line)
        elif line.strip():
            _log.warning("dropped a line that is not a JSON-RPC message (%d bytes)", len(line))
            writer.write(PARSE_ERROR)
    objects.feed_eof()


def _is_object(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than json parses
        return False


def main() -> int:
    """``lackpy acp``: serve over stdio until the client closes stdin; returns the exit
    code (each session's ``cwd`` is its workspace)."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    agent = LackpyAgent()
    try:
        asyncio.run(serve(agent))
    except KeyboardInterrupt:
        pass
    finally:
        agent.close()
    return 0
