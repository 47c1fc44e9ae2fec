"""The agent magics, for both hosts: ``%agent`` lets a model call the kit's tools turn by
turn, with each turn shown as it happens, and offers the run's calls as the next cell;
``%replan`` has a planner model decide each round. The stop button ends a run cleanly (a
``%replan --key`` run is then paused with a checkpoint)."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from lackpy_kernel.errors import UsageError
from lackpy_kernel.notebook.bundles import turns_bundle
from lackpy_kernel.notebook.declare import (
    AGENT_OPTIONS,
    AGENT_SUMMARY,
    REPLAN_OPTIONS,
    REPLAN_SUMMARY,
    magic,
)
from lackpy_kernel.notebook.family import MagicFamily
from lackpy_kernel.notebook.plans import (
    LiveDisplay,
    envelope_failure,
    envelope_state,
    whole_number,
)
from lackpy_kernel.notebook.port import NotebookError, ProgramCell
from lackpy_kernel.notebook.syntax import MagicLine

if TYPE_CHECKING:  # the engines load with the first %agent or %replan: start-up stays short
    from lackpy_kernel.engines import Agent, AgentEvent, Envelope

__all__ = ["AgentMagics"]

UPDATE_EVERY_S = 0.1  # streamed text updates the display at most this often
Run = Callable[[LiveDisplay], Awaitable["Envelope"]]


class AgentMagics(MagicFamily):
    """``%agent`` and ``%replan`` over the notebook's session and service."""

    @magic("agent", AGENT_SUMMARY, options=AGENT_OPTIONS, rest="INTENT")
    async def agent(self, line: MagicLine) -> None:
        intent = line.rest
        if not intent:
            raise UsageError(f"what should the agent do? usage: {self._magic('agent').usage}")
        options = line.options
        from lackpy_kernel.notebook.turns import notebook_agent

        agent = notebook_agent(
            self.service, options.get("--kit") or self.session.kit,
            model=options.get("--model"), provider=options.get("--provider"),
            max_turns=whole_number(options, "--max-turns"),
            allow_writes=bool(options.get("--allow-writes")))
        with agent:
            envelope = await self._live_run(f"agent: {intent}", "turn", lambda live: agent.arun(
                intent, on_event=_listening(live), on_text=_streaming(live)))
        self._run_outcome(agent, intent, envelope, "turn", options.get("--kit"))

    @magic("replan", REPLAN_SUMMARY, options=REPLAN_OPTIONS, rest="INTENT")
    async def replan(self, line: MagicLine) -> None:
        options = line.options
        key, resume = options.get("--key"), bool(options.get("--resume"))
        intent = line.rest or (self._checkpointed_task(key) if resume else "")
        if not intent:
            raise UsageError(f"what should the plan do? usage: {self._magic('replan').usage}")
        from lackpy_kernel.notebook.turns import notebook_replan

        agent = notebook_replan(
            self.service, options.get("--kit") or self.session.kit, key=key, resume=resume,
            max_rounds=whole_number(options, "--max-rounds"), model=options.get("--model"),
            provider=options.get("--provider"), allow_writes=bool(options.get("--allow-writes")))
        title = f"replan: {intent}" + (f" (key {key})" if key else "")
        with agent:
            envelope = await self._live_run(title, "round", lambda live: agent.arun(
                intent, on_event=_listening(live)), key)
        self._run_outcome(agent, intent, envelope, "round", options.get("--kit"))

    # -- helpers ----------------------------------------------------------------

    async def _live_run(self, title: str, label: str, run: Run, key: str | None = None) -> Envelope:
        """Run with a display updated at each event (streamed text at most every
        UPDATE_EVERY_S); the final table follows it."""
        from lackpy_kernel.notebook.turns import TurnLog

        log = TurnLog(label)
        live = LiveDisplay(self.port, title, log, functools.partial(turns_bundle, label=label),
                           every=UPDATE_EVERY_S)
        try:
            envelope = await run(live)
        except asyncio.CancelledError:
            log.interrupted()
            live.finish("interrupted")
            where = f"in {label} {log.turns}" if log.turns else "before its first turn"
            after = (f"; it is paused with a checkpoint: %replan --resume --key {key} goes on"
                     if key else "")
            raise NotebookError("KeyboardInterrupt", f"interrupted: the run stopped {where}; the "
                                f"tool calls in flight were stopped{after}") from None
        live.finish(envelope_state(envelope))
        return envelope

    def _run_outcome(self, agent: Agent, intent: str, envelope: Envelope, label: str,
                     kit: str | None) -> None:
        if envelope.error is not None:
            raise envelope_failure(envelope)
        from lackpy_kernel.notebook.turns import offer_program, run_summary

        self.port.stream("stdout", f"done: {run_summary(envelope, label)}\n")
        program = offer_program(self.service, agent, intent, envelope)
        if program is not None:
            self.port.stream("stdout", "the run's tool calls, as one program, are in the "
                                       "next cell; %%create NAME saves it as a template\n")
            cell = ProgramCell(program.rstrip("\n"), kit=_cell_kit(kit))
            self.port.next_input(self.port.program_cell(cell))
        self.port.result(_plain(envelope.payload))

    def _checkpointed_task(self, key: str | None) -> str:
        if key is None:
            raise UsageError("--resume needs --key K: the key the run was checkpointed under")
        from lackpy_kernel.engines.plans import PlanLibrary

        run = PlanLibrary(self.service.workspace).run(key)
        if run is None:
            raise UsageError(f"no run under the key {key!r}; %plan status lists them")
        return str(run.task)


def _listening(live: LiveDisplay) -> Callable[[AgentEvent], None]:
    """An agent's ``on_event``: each turn and tool call is shown as it starts and ends."""
    def on_event(event: AgentEvent) -> None:
        live.log(event)
        live.redraw(now=True)

    return on_event


def _streaming(live: LiveDisplay) -> Callable[[str], None]:
    """An agent's ``on_text``: the streamed text, shown at most every UPDATE_EVERY_S."""
    def on_text(piece: str) -> None:
        live.log.text(piece)
        live.redraw()

    return on_text


def _cell_kit(kit: str | None) -> str | None:
    """The kit a cell runs the offered program with: the ``--kit`` given, less the
    ``lackpy`` tool (the program inlines the programs its calls ran)."""
    from lackpy_kernel.notebook.turns import kit_words

    return ",".join(kit_words(kit) or []) or None


def _plain(payload: Any) -> Any:
    if dataclasses.is_dataclass(payload) and not isinstance(payload, type):
        return dataclasses.asdict(payload)
    return payload
