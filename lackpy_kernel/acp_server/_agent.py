"""The ACP agent: sessions (new, load, their bounds) and a prompt's answer."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    Client,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    SetSessionModeResponse,
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_tool_call,
    update_user_message_text,
)
from acp.helpers import update_available_commands
from acp.schema import (
    AgentCapabilities,
    ClientCapabilities,
    Implementation,
    McpCapabilities,
    PromptCapabilities,
    SessionMode,
    SessionModeState,
    SessionNotification,
)
from pydantic import ValidationError

import lackpy_kernel
from lackpy_kernel.config import load_config
from lackpy_kernel.errors import GenerationError, LackpyError, error_text
from lackpy_kernel.infer import GenerationEvent, ProgramStreaming
from lackpy_kernel.notebook.bundles import generation_progress, generation_summary
from lackpy_kernel.service import DelegateOptions, Delegation, LackpyService
from lackpy_kernel.session import LackpySession

from . import _store
from ._commands import available_commands, is_command, ratchet_note, run_command
from ._outbox import Outbox
from ._permission import PermissionAsker
from ._replies import (
    STOPPED,
    ContentBlock,
    fenced,
    generation_failure,
    held,
    intent_of,
    refusal,
    reply,
    shown,
    with_result,
)
from ._servers import client_servers

MODES = {
    "run": "write a program for the prompt, check it, and run it in the sandbox; the answer "
           "is its result, and its file changes land only when you approve them",
    "plan": "write a program for the prompt and show it, without running it",
    "agent": "let the configured model ([agent] model) call the kit's tools turn by turn, "
             "each call shown; a call's file changes land only when you approve them",
}
DEFAULT_MODE = "run"
MAX_SESSIONS = 8  # live at once: each holds a sandbox worker and its MCP servers
MAX_AWAY = 1_000  # sessions put away to make room, reopened by their next prompt
RECORDED = {"user_message_chunk", "agent_message_chunk", "tool_call", "tool_call_update"}
# Clients (their ``client_info`` name) that keep a chat's history themselves, and to which
# ``session/load`` replays nothing: jupyter-ai's ACP client (0.3) ignores updates only while
# its load request is pending, and the SDK hands a notification over in a task of its own,
# after the response; it would show the whole conversation again in its next reply.
KEEPS_ITS_OWN_HISTORY = frozenset({"Jupyter AI"})
_log = logging.getLogger(__name__)


@dataclass
class _Chat:
    """One live ACP session: its lackpy session, its record, and the prompt it answers."""

    session: LackpySession
    workspace: Path
    record: _store.SessionRecord
    servers: Sequence[Any] = ()  # the MCP servers the client passed (to reopen it)
    answering: asyncio.Task[None] | None = None
    cancelled: bool = False
    programs: int = 0
    running: set[str] = field(default_factory=set)  # the tool calls not finished yet
    asker: PermissionAsker | None = None  # asks about the running prompt's file changes
    used: float = field(default_factory=time.monotonic)


@dataclass(frozen=True)
class _Away:
    """A session closed to make room: where it lives and the servers it had."""

    workspace: Path
    servers: Sequence[Any]


class LackpyAgent:
    """The ACP agent: one ``LackpySession`` per ACP session, at most ``MAX_SESSIONS`` live
    (the least recently used idle one is put away for a new one, and its next prompt
    reopens it), each kept in its workspace for ``session/load``. The SDK answers "method
    not found" for the methods of ``acp.Agent`` it does not have (``authenticate``, ...)."""

    def __init__(self) -> None:
        self._client: Client | None = None
        self._chats: dict[str, _Chat] = {}
        self._away: OrderedDict[str, _Away] = OrderedDict()
        self._opening = 0  # sessions being opened now (they hold a place)
        self._later: set[asyncio.Task[None]] = set()
        self._replays = True  # session/load sends the conversation again (see KEEPS_ITS_OWN_HISTORY)

    def on_connect(self, conn: Client) -> None:
        self._client = conn

    async def initialize(self, protocol_version: int,
                         client_capabilities: ClientCapabilities | None = None,
                         client_info: Implementation | None = None,
                         **kwargs: Any) -> InitializeResponse:
        """What this agent supports: text prompts, loading a session (its working directory
        is the workspace), MCP servers over stdio and HTTP."""
        self._replays = client_info is None or client_info.name not in KEEPS_ITS_OWN_HISTORY
        return InitializeResponse(
            protocol_version=min(protocol_version, PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True,
                mcp_capabilities=McpCapabilities(http=True, sse=False),
                prompt_capabilities=PromptCapabilities(image=False, audio=False,
                                                       embedded_context=False)),
            agent_info=Implementation(name="lackpy", title="lackpy",
                                      version=lackpy_kernel.__version__),
        )

    async def new_session(self, cwd: str, additional_directories: list[str] | None = None,
                          mcp_servers: list[Any] | None = None,
                          **kwargs: Any) -> NewSessionResponse:
        """A session whose workspace is ``cwd``, with the client's MCP servers as tool
        sources (one that fails is left out, saying why). Raises invalid-params when ``cwd``
        is no absolute folder or its config is malformed, invalid-request when every live
        session is answering a prompt."""
        workspace = _workspace(cwd)
        session_id = uuid.uuid4().hex
        chat = await self._open(session_id, workspace, mcp_servers or (),
                                _store.SessionRecord(DEFAULT_MODE, None))
        _store.save(workspace, session_id, chat.record)
        return NewSessionResponse(session_id=session_id, modes=_modes(chat.record.mode))

    async def load_session(self, cwd: str, session_id: str,
                           mcp_servers: list[Any] | None = None,
                           additional_directories: list[str] | None = None,
                           **kwargs: Any) -> LoadSessionResponse:
        """Reopen the session ``session_id`` kept in the workspace ``cwd`` (its mode, kit
        and last program; its variables start empty), replay its conversation as session
        updates (not to a client that keeps it itself: ``KEEPS_ITS_OWN_HISTORY``), and use
        the client's MCP servers. Raises invalid-params for a ``cwd`` or a session that is
        not there, invalid-request while the session answers a prompt."""
        workspace = _workspace(cwd)
        try:
            record = _store.load(workspace, session_id)
        except _store.RecordError as exc:
            raise RequestError.invalid_params({"sessionId": str(exc)}) from None
        live = self._chats.get(session_id)
        if live is not None:
            if live.answering is not None:
                raise RequestError.invalid_request(
                    {"sessionId": "this session is answering a prompt; cancel it first"})
            await asyncio.to_thread(_close, self._chats.pop(session_id))
        self._away.pop(session_id, None)
        chat = await self._open(session_id, workspace, mcp_servers or (), record)
        if self._replays:
            await self._replay(session_id, record.history)
        return LoadSessionResponse(modes=_modes(chat.record.mode))

    async def set_session_mode(self, session_id: str, mode_id: str,
                               **kwargs: Any) -> SetSessionModeResponse:
        """Switch the session to ``mode_id``; raises invalid-params for an unknown mode or
        session."""
        chat = await self._live(session_id)
        if mode_id not in MODES:
            raise RequestError.invalid_params(
                {"modeId": f"unknown mode {mode_id!r}; the modes are {', '.join(MODES)}"})
        chat.record.mode = mode_id
        _store.save(chat.workspace, session_id, chat.record)
        return SetSessionModeResponse()

    async def prompt(self, session_id: str, prompt: list[ContentBlock],
                     **kwargs: Any) -> PromptResponse:
        """Answer ``prompt``: its stop reason is ``cancelled`` when ``session/cancel`` came
        first. Raises invalid-params for an unknown session, invalid-request while the
        session is still answering another prompt."""
        chat = await self._live(session_id)
        if chat.answering is not None:
            raise RequestError.invalid_request(
                {"sessionId": "this session is still answering a prompt; cancel it first"})
        chat.cancelled = False
        chat.running.clear()
        chat.answering = asyncio.ensure_future(self._answer(chat, session_id, prompt))
        try:
            await chat.answering
            return PromptResponse(stop_reason="end_turn")
        except asyncio.CancelledError:
            if not chat.cancelled:
                raise
            for call_id in sorted(chat.running):
                await self._update(session_id, update_tool_call(call_id, status="failed"))
            await self._say(session_id, STOPPED)
            return PromptResponse(stop_reason="cancelled")
        finally:
            chat.answering = None
            chat.used = time.monotonic()
            _store.save(chat.workspace, session_id, chat.record)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """Stop the session's prompt: the model call or the sandboxed program ends at once."""
        chat = self._chats.get(session_id)
        if chat is not None and chat.answering is not None:
            chat.cancelled = True
            chat.answering.cancel()
            if chat.asker is not None:
                chat.asker.stop()

    def close(self) -> None:
        """Close every session's sandbox and MCP servers."""
        for chat in self._chats.values():
            _close(chat)
        self._chats.clear()

    # -- sessions -----------------------------------------------------------------------

    async def _open(self, session_id: str, workspace: Path, servers: Sequence[Any],
                    record: _store.SessionRecord) -> _Chat:
        """A live session for ``record`` in ``workspace`` with the client's ``servers``;
        what went wrong with a server or the kit is said once the session exists."""
        put_away = self._make_room()
        self._opening += 1
        try:
            if put_away is not None:  # closed first, so no more than MAX_SESSIONS ever run
                await asyncio.to_thread(_close, put_away)
            try:
                config = load_config(workspace)
            except LackpyError as exc:
                raise RequestError.invalid_params({"cwd": error_text(exc)}) from None
            passed = client_servers(servers, config.tool_providers)
            config = dataclasses.replace(
                config, tool_providers={**config.tool_providers, **passed.settings})
            session = LackpySession(LackpyService(workspace, config))
            problems = [*passed.problems, *await _connect(session, list(passed.settings))]
        finally:
            self._opening -= 1
        problems += _restore(session, record)
        session.start()
        chat = _Chat(session, workspace, record, servers)
        self._chats[session_id] = chat
        self._soon(session_id, problems)
        return chat

    def _make_room(self) -> _Chat | None:
        """Put the least recently used idle session away when the live ones (and those being
        opened) fill ``MAX_SESSIONS``, returning it to close; raises invalid-request when
        none is idle."""
        if len(self._chats) + self._opening < MAX_SESSIONS:
            return None
        idle = [(chat.used, sid) for sid, chat in self._chats.items() if chat.answering is None]
        if not idle:
            raise RequestError.invalid_request({"sessions": (
                f"this agent holds at most {MAX_SESSIONS} sessions at once and each is "
                "answering a prompt; wait for one to end (or cancel it), then try again")})
        _, session_id = min(idle)
        chat = self._chats.pop(session_id)
        self._away[session_id] = _Away(chat.workspace, chat.servers)
        while len(self._away) > MAX_AWAY:
            self._away.popitem(last=False)  # still loadable with session/load
        return chat

    async def _live(self, session_id: str) -> _Chat:
        """The live session ``session_id``, reopened if it was put away; raises
        invalid-params for a session this agent does not know."""
        chat = self._chats.get(session_id)
        if chat is not None:
            chat.used = time.monotonic()
            return chat
        away = self._away.get(session_id)
        if away is None:
            raise RequestError.invalid_params(
                {"sessionId": f"unknown session {session_id[:80]!r}; start one with "
                              "session/new, or reopen a kept one with session/load"})
        try:
            record = _store.load(away.workspace, session_id)
        except _store.RecordError:
            record = _store.SessionRecord(DEFAULT_MODE, None)
        chat = await self._open(session_id, away.workspace, away.servers, record)
        self._away.pop(session_id, None)
        return chat

    async def _replay(self, session_id: str, history: list[Any]) -> None:
        """Send ``history`` (updates as JSON) again, skipping any that is not an update."""
        for update in history:
            try:
                parsed = SessionNotification.model_validate(
                    {"sessionId": session_id, "update": update}).update
            except ValidationError:
                continue
            await self._send(session_id, parsed)

    def _soon(self, session_id: str, problems: list[str]) -> None:
        """Right after the response that opens the session: the slash commands, and
        ``problems`` said."""
        self._spawn(self._after_response(session_id, problems))

    async def _after_response(self, session_id: str, problems: list[str]) -> None:
        await asyncio.sleep(0)  # the SDK sends the response first
        await self._send(session_id, update_available_commands(available_commands()))
        if problems:
            await self._say(session_id, "\n".join(f"lackpy: {problem}" for problem in problems))

    def _spawn(self, work: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(work)
        self._later.add(task)
        task.add_done_callback(self._later.discard)

    # -- a prompt -----------------------------------------------------------------------

    async def _answer(self, chat: _Chat, session_id: str, prompt: list[ContentBlock]) -> None:
        intent = intent_of(prompt)
        chat.record.add(_json(update_user_message_text(intent[:_store.MAX_HISTORY_CHARS // 10])))
        refused = refusal(prompt, intent)
        if refused or is_command(intent):
            await self._say(session_id, refused or await run_command(
                intent, chat.session, chat.record, chat.workspace))
            return
        if chat.record.mode == "agent":
            await self._answer_with_agent(chat, session_id, intent)
            return
        chat.programs += 1
        call_id = f"program-{chat.programs}"
        delegation = await self._write(chat, session_id, intent, call_id)
        if delegation is None:
            return
        summary = generation_summary(delegation.generated)
        title, content = f"lackpy program ({summary})", [shown(delegation.program)]
        raw_input = {"intent": intent, "program": delegation.program}
        await self._update(session_id, update_tool_call(
            call_id, title=title, content=content, raw_input=raw_input)
            if call_id in chat.running else start_tool_call(
            call_id, title, kind="execute", status="pending", content=content,
            raw_input=raw_input))
        calls = chat.session.validate(delegation.program).calls
        await self._update(session_id, update_agent_thought_text(
            f"checked: valid lackpy, calling {', '.join(calls) or 'no tool'}\n"))
        mode = chat.record.mode
        why = held(chat.session, delegation.program) if mode == "run" else ""
        if mode == "plan" or why:
            chat.running.discard(call_id)
            await self._update(session_id, update_tool_call(
                call_id, status="failed" if why else "completed",
                raw_output=with_result(delegation.program, why)))
            await self._say(session_id, why or f"plan mode: the program above was {summary} "
                                               "and not run. Switch to run mode to run it.")
            await self._note(session_id, delegation, ran_well=False)
            return
        chat.running.add(call_id)
        asker = PermissionAsker(self._client, session_id, chat.workspace, lambda: call_id,
                                [shown(delegation.program)])
        chat.session.approve = chat.asker = asker
        try:
            ran_well = await self._run(chat.session, session_id, call_id, delegation, asker)
        finally:
            chat.session.approve = chat.asker = None
        chat.running.discard(call_id)
        if ran_well:
            chat.record.last_program = delegation.program
        await self._note(session_id, delegation, ran_well=ran_well)

    async def _note(self, session_id: str, delegation: Delegation, *, ran_well: bool) -> None:
        """Say what the ratchet did for the prompt, or can do (see ``ratchet_note``)."""
        note = ratchet_note(delegation.generated, ran_well)
        if note:
            await self._say(session_id, f"\n\nlackpy: {note}")

    async def _write(self, chat: _Chat, session_id: str, intent: str,
                     call_id: str) -> Delegation | None:
        """The tiers' program for ``intent``, each tier tried sent as a thought and a model's
        program as it streams as the tool call ``call_id`` (its content growing; only its
        start is kept in the record); None, with the reason said, when none wrote one."""
        progress = Outbox(lambda update: self._update(session_id, update),
                          send_passing=lambda update: self._send(session_id, update))

        def tried(event: GenerationEvent) -> None:
            if not isinstance(event, ProgramStreaming):
                progress.put(update_agent_thought_text(generation_progress([event]) + "\n"))
                return
            title = f"lackpy program ({event.provider} is writing it: {event.step})"
            if call_id in chat.running:
                progress.put(update_tool_call(call_id, title=title,
                                              content=[shown(event.text)]), key=call_id)
                return
            chat.running.add(call_id)
            progress.put(start_tool_call(call_id, title, kind="execute", status="pending",
                                         content=[shown(event.text)]))

        try:
            delegation = await chat.session.delegate(intent, DelegateOptions(on_event=tried))
        except LackpyError as exc:
            if call_id in chat.running:
                chat.running.discard(call_id)
                progress.put(update_tool_call(call_id, status="failed"))
            await progress.flush()
            await self._say(session_id, generation_failure(exc) if isinstance(exc, GenerationError)
                            else error_text(exc))
            return None
        except asyncio.CancelledError:
            progress.cancel()
            raise
        await progress.flush()
        return delegation

    async def _answer_with_agent(self, chat: _Chat, session_id: str, intent: str) -> None:
        """Answer with the agent loop: its tool calls as tool calls, its answer as the
        message; the run's calls as one program become the last program (for /create)."""
        from ._loop import CALL, answer_with_agent  # noqa: PLC0415 - the engines load when used

        calls = Outbox(lambda update: self._update(session_id, update))
        chat.asker = PermissionAsker(self._client, session_id, chat.workspace, CALL.get)
        try:
            answer = await answer_with_agent(chat.session, intent, calls, chat.running,
                                             chat.asker)
        except LackpyError as exc:
            await calls.flush()
            await self._say(session_id, f"the agent cannot start: {error_text(exc)}")
            return
        except asyncio.CancelledError:
            calls.cancel()
            raise
        finally:
            chat.asker = None
        await calls.flush()
        await self._say(session_id, answer.text)
        if answer.program is not None:
            chat.record.last_program = answer.program
            await self._say(session_id, "\n\nlackpy: /create NAME saves the run's tool calls "
                                        "as one program, a template: the same request then "
                                        "needs no model call")

    async def _run(self, session: LackpySession, session_id: str, call_id: str,
                   delegation: Delegation, asker: PermissionAsker) -> bool:
        """Run the delegation's program in the session (kept by the ratchet as ``%delegate``
        keeps it; its file changes asked for through ``asker``) and answer with its result;
        returns whether it ran well."""
        await self._update(session_id, update_tool_call(call_id, status="in_progress"))
        started = time.perf_counter()
        result = await session.run(delegation.program)
        session.service.record_run(delegation, result, started)
        answer = reply(result, delegation.program)
        await self._update(session_id, update_tool_call(
            call_id, status="completed" if result.success else "failed",
            content=[shown(delegation.program), *asker.diffs.get(call_id, ()),
                     tool_content(text_block(fenced(answer)))],
            raw_output=with_result(delegation.program, answer)))
        await self._say(session_id, fenced(answer))
        return result.success

    async def _say(self, session_id: str, text: str) -> None:
        await self._update(session_id, update_agent_message_text(text))

    async def _update(self, session_id: str, update: Any) -> None:
        """Send ``update``, keeping it in the session's record when it is conversation."""
        chat = self._chats.get(session_id)
        if chat is not None and update.session_update in RECORDED:
            chat.record.add(_json(update))
        await self._send(session_id, update)

    async def _send(self, session_id: str, update: Any) -> None:
        if self._client is not None:
            await self._client.session_update(session_id=session_id, update=update)


def _workspace(cwd: str) -> Path:
    """``cwd`` as a workspace; raises invalid-params when it is no absolute folder."""
    workspace = Path(cwd)
    if "\x00" in cwd or not workspace.is_absolute() or not workspace.is_dir():
        raise RequestError.invalid_params(
            {"cwd": f"not an absolute path to a folder: {cwd[:200]!r}"})
    return workspace.resolve()


async def _connect(session: LackpySession, names: list[str]) -> list[str]:
    """Start the client's MCP servers ``names`` (in a thread: each may take its startup
    timeout) and add their tools to the session's kit; what failed, one line each."""
    if not names:
        return []
    statuses = await asyncio.to_thread(session.service.check_tool_sources)
    problems, tools = [], []
    for status in statuses:
        if status["name"] not in names:
            continue
        if not status["ok"]:
            problems.append(f"the MCP server {status['name']!r} is left out: {status['error']}")
        problems += [f"the MCP server {status['name']!r}: {p}" for p in status["problems"]]
        tools += status["tools"]
    if tools:
        try:
            default = {alias: spec.name for alias, spec in session.resolved_kit().tools.items()}
        except LackpyError as exc:
            problems.append(f"the default kit does not resolve ({error_text(exc)}); the "
                            "session's kit is the MCP servers' tools")
            default = {}
        session.kit = {**default, **{tool: tool for tool in tools}}
    return problems


def _restore(session: LackpySession, record: _store.SessionRecord) -> list[str]:
    """Give ``session`` the record's kit (and the record a known mode); what could not be
    restored, one line each."""
    if record.mode not in MODES:
        record.mode = DEFAULT_MODE
    if record.kit is None:
        return []
    try:
        session.set_kit(record.kit)
    except LackpyError as exc:
        record.kit = None
        return [f"the session's kit no longer resolves ({error_text(exc)}); it uses the "
                "default kit"]
    return []


def _close(chat: _Chat) -> None:
    chat.session.close()
    chat.session.service.close()


def _modes(current: str) -> SessionModeState:
    modes = [SessionMode(id=mode, name=mode, description=text) for mode, text in MODES.items()]
    return SessionModeState(current_mode_id=current, available_modes=modes)


def _json(update: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = update.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped
