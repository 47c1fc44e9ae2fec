"""Mode ``agent``: the agent loop ``%agent`` runs (a model calling the kit's tools turn by
turn), each tool call reported as an ACP tool call, the answer as the agent's message. A
call's file changes are asked for on that call (``session/request_permission`` with the
diff) and land only when the person applies them; tools that change things without
staging them (an MCP server's that writes) are left out of the agent's kit."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from acp import start_tool_call, text_block, tool_content, update_agent_thought_text, update_tool_call

from lackpy_kernel.engines import AgentEvent, Envelope
from lackpy_kernel.notebook.bundles import output_text
from lackpy_kernel.notebook.turns import notebook_agent, offer_program, run_summary
from lackpy_kernel.session import LackpySession

from ._outbox import Outbox
from ._permission import PermissionAsker
from ._replies import unstaged_writers

MAX_SHOWN = 4_000  # characters of a call's arguments or result shown in its tool call
CALL: ContextVar[str] = ContextVar("lackpy_acp_call", default="")  # the call a task runs


@dataclass
class AgentAnswer:
    """The run's reply, and its tool calls as one program (None when it made none a
    program can make)."""

    text: str
    program: str | None = None


@dataclass
class _Calls:
    """The run's tool calls as ACP tool calls: their ids, and those still open."""

    outbox: Outbox
    diffs: dict[str, list[Any]]  # the changes asked for, by call
    ids: dict[tuple[int, str], str] = field(default_factory=dict)
    open: set[str] = field(default_factory=set)

    def __call__(self, event: AgentEvent) -> None:
        if event.kind == "call_started" and event.call is not None:
            call_id = f"agent-call-{len(self.ids) + 1}"
            self.ids[(event.turn, event.call.id)] = call_id
            self.open.add(call_id)
            CALL.set(call_id)  # in the call's own task, where its changes are asked for
            self.outbox.put(start_tool_call(
                call_id, _bounded(_call_title(event.call.name, event.call.arguments)),
                kind="execute" if event.call.name == "lackpy" else "other",
                status="in_progress", raw_input=event.call.arguments))
        elif event.kind == "call_finished" and event.call is not None and event.outcome:
            call_id = self.ids.get((event.turn, event.call.id), "")
            self.open.discard(call_id)
            self.outbox.put(update_tool_call(
                call_id, status="failed" if event.outcome.is_error else "completed",
                content=[*self.diffs.get(call_id, ()),
                         tool_content(text_block(_bounded(event.outcome.content)))]))
        elif event.kind == "turn_finished" and event.model_turn and event.model_turn.calls \
                and event.model_turn.text.strip():
            self.outbox.put(update_agent_thought_text(_bounded(event.model_turn.text)))
        elif event.kind == "retry":
            self.outbox.put(update_agent_thought_text(_bounded(event.text)))


async def answer_with_agent(session: LackpySession, intent: str, outbox: Outbox,
                            open_calls: set[str], asker: PermissionAsker) -> AgentAnswer:
    """Run the agent loop on ``intent`` with the session's kit, less the tools that change
    things unstaged (said as a thought), its tool calls put in ``outbox`` and their file
    changes asked for through ``asker`` (whose call is ``CALL``); ``open_calls`` holds the
    ids of those that have not finished (for a cancel to close). Raises LackpyError when
    the agent cannot start (no model configured, a bad kit)."""
    resolved = session.resolved_kit()
    left_out = unstaged_writers(resolved)
    if left_out:
        outbox.put(update_agent_thought_text(
            f"left out of the agent's tools: {', '.join(sorted(left_out))} (they change "
            "things without a diff to approve first)\n"))
    kit = {alias: spec.name for alias, spec in resolved.tools.items() if alias not in left_out}
    agent = notebook_agent(session.service, kit, allow_writes=True)
    agent.approve = asker
    calls = _Calls(outbox, asker.diffs, open=open_calls)
    with agent:
        envelope = await agent.arun(intent, on_event=calls)
    return _answer(session, agent, intent, envelope)


def _answer(session: LackpySession, agent: Any, intent: str, envelope: Envelope) -> AgentAnswer:
    if envelope.error is not None:
        return AgentAnswer(f"the agent stopped: {envelope.error.type}: {envelope.error.message}")
    payload = envelope.payload
    text = payload if isinstance(payload, str) else output_text(payload)
    program = offer_program(session.service, agent, intent, envelope)
    return AgentAnswer(f"{text}\n\n({run_summary(envelope)})", program)


def _call_title(name: str, arguments: Any) -> str:
    if isinstance(arguments, dict):
        return f"{name}({', '.join(f'{key}={value!r}' for key, value in arguments.items())})"
    return f"{name}({arguments!r})"


def _bounded(text: str) -> str:
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN - 3] + "..."
