"""Mode ``agent``: the agent loop ``%agent`` runs (a model calling the kit's tools turn by
turn), each tool call reported as an ACP tool call, the answer as the agent's message."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from acp import start_tool_call, text_block, tool_content, update_agent_thought_text, update_tool_call

from lackpy_kernel.engines import AgentEvent, Envelope
from lackpy_kernel.notebook.bundles import output_text
from lackpy_kernel.notebook.turns import notebook_agent, offer_program, run_summary
from lackpy_kernel.session import LackpySession

from ._outbox import Outbox

MAX_SHOWN = 4_000  # characters of a call's arguments or result shown in its tool call


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
    ids: dict[tuple[int, str], str] = field(default_factory=dict)
    open: set[str] = field(default_factory=set)

    def __call__(self, event: AgentEvent) -> None:
        if event.kind == "call_started" and event.call is not None:
            call_id = f"agent-call-{len(self.ids) + 1}"
            self.ids[(event.turn, event.call.id)] = call_id
            self.open.add(call_id)
            self.outbox.put(start_tool_call(
                call_id, _bounded(_call_title(event.call.name, event.call.arguments)),
                kind="execute" if event.call.name == "lackpy" else "other",
                status="in_progress", raw_input=event.call.arguments))
        elif event.kind == "call_finished" and event.call is not None and event.outcome:
            call_id = self.ids.get((event.turn, event.call.id), "")
            self.open.discard(call_id)
            self.outbox.put(update_tool_call(
                call_id, status="failed" if event.outcome.is_error else "completed",
                content=[tool_content(text_block(_bounded(event.outcome.content)))]))
        elif event.kind == "turn_finished" and event.model_turn and event.model_turn.calls \
                and event.model_turn.text.strip():
            self.outbox.put(update_agent_thought_text(_bounded(event.model_turn.text)))
        elif event.kind == "retry":
            self.outbox.put(update_agent_thought_text(_bounded(event.text)))


async def answer_with_agent(session: LackpySession, intent: str, outbox: Outbox,
                            open_calls: set[str]) -> AgentAnswer:
    """Run the agent loop on ``intent`` with the session's kit (tools that write are refused,
    the model is told so), its tool calls put in ``outbox``; ``open_calls`` holds the ids
    of those that have not finished (for a cancel to close). Raises LackpyError when the
    agent cannot start (no model configured, a bad kit)."""
    agent = notebook_agent(session.service, session.kit)
    calls = _Calls(outbox, open=open_calls)
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
