"""Agents in a notebook: what ``%agent`` and ``%replan`` build, and how a run looks as it goes.

``%agent`` and ``%replan`` (``notebook.agents``) build on this: :func:`notebook_agent` and
:func:`notebook_replan` make the agent a magic's options ask for (the model from the options,
else ``[agent]`` in the workspace's config); a :class:`TurnLog` follows a run event by event
(model text as it streams, each tool call with its arguments, outcome and time), for a
display updated as it changes; :func:`offer_program` turns a finished run into the next cell.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lackpy_kernel.engines import (
    Agent,
    AgentEvent,
    Envelope,
    LLMEngine,
    PlanRound,
    ReplanEngine,
    trace_to_program,
)
from lackpy_kernel.engines.agents import DEFAULT_MAX_ROUNDS, LACKPY_TOOL, remember_program
from lackpy_kernel.engines.plans import PlanLibrary
from lackpy_kernel.errors import UsageError
from lackpy_kernel.kit import Kit
from lackpy_kernel.service import LackpyService

__all__ = ["TurnLog", "kit_words", "notebook_agent", "notebook_engine", "notebook_replan", "offer_program",
           "run_summary"]

TEXT_SHOWN = 70  # characters of a model's text in a row


def notebook_engine(service: LackpyService, model: str | None = None,
                    provider: str | None = None, **knobs: Any) -> LLMEngine:
    """The LLMEngine for a magic: ``model`` and ``provider`` as given, else the config's
    ``[agent]`` ones (a provider alone uses its own configured model). UsageError when
    neither names a model."""
    config = service.config
    provider = provider or config.agent_provider
    model = model or config.agent_model
    if model is None and provider is not None:
        # The plugin's name is an alias: the engine keeps the provider's configured model.
        model = str(config.inference_providers.get(provider, {}).get("plugin", provider))
    if model is None:
        raise UsageError("which model? set [agent] model (and provider) in .lackpy/config.toml, "
                         "or pass --model M (--provider P)")
    return LLMEngine(model, provider=provider, workspace=service.workspace, **knobs)


def notebook_agent(service: LackpyService, kit: Kit, *, model: str | None = None,
                   provider: str | None = None, max_turns: int | None = None,
                   allow_writes: bool = False) -> Agent:
    """The agent ``%agent`` runs: the kit's tools, read-only unless ``allow_writes``."""
    knobs = {"max_turns": max_turns} if max_turns is not None else {}
    engine = notebook_engine(service, model, provider, **knobs)
    return Agent(engine, tools=kit, service=service, auto_run="write" if allow_writes else None)


def notebook_replan(service: LackpyService, kit: Kit, *, key: str | None = None,
                    resume: bool = False, max_rounds: int | None = None,
                    model: str | None = None, provider: str | None = None,
                    allow_writes: bool = False) -> Agent:
    """The agent ``%replan`` runs: a planner on the model deciding each round's calls of the
    kit's tools, checkpointing under ``key`` in the workspace's plan Store."""
    planner = Agent(notebook_engine(service, model, provider), tools=[], name="planner",
                    output=PlanRound, service=service)
    store = PlanLibrary(service.workspace).store if key is not None else None
    engine = ReplanEngine(store=store, checkpoint_key=key, resume=resume,
                          max_rounds=DEFAULT_MAX_ROUNDS if max_rounds is None else max_rounds)
    tools = [spec.name for spec in service.resolve_kit(kit).tools.values()]
    return Agent(engine, tools=[planner, *tools], service=service,
                 auto_run="write" if allow_writes else None)


def offer_program(service: LackpyService, agent: Agent, intent: str,
                  envelope: Envelope) -> str | None:
    """The run's straight-line program (see ``trace_to_program``), logged for ``create`` under
    ``intent``; None when the run made no call a program can make."""
    kit_tools = _kit_names(service, agent)
    try:
        program = trace_to_program(envelope, tools=kit_tools)
    except UsageError:
        return None
    remember_program(service, intent, program, kit_tools, envelope.metadata.get("ms", 0.0))
    return program


def run_summary(envelope: Envelope, label: str = "turn") -> str:
    """One line: turns (or rounds), tool calls, tokens."""
    meta = envelope.metadata
    count = meta.get("turns", meta.get("rounds", len(envelope.history)))
    text = f"{count} {label}{'s' if count != 1 else ''}, {len(envelope.trace)} tool call" + (
        "s" if len(envelope.trace) != 1 else "")
    if "input_tokens" in meta:
        text += f", {meta['input_tokens']:,} tokens in, {meta['output_tokens']:,} out"
    return text


@dataclass
class _Row:
    turn: int
    step: str
    status: str
    ms: float | None = None


@dataclass
class TurnLog:
    """A run's turns (``label``: turn, or round) and tool calls as rows, kept up to date by
    calling the log with each AgentEvent and giving it the streamed text (``text``)."""

    label: str = "turn"
    _rows: list[_Row] = field(default_factory=list)
    _model_rows: dict[int, _Row] = field(default_factory=dict)
    _call_rows: dict[str, _Row] = field(default_factory=dict)
    _streamed: dict[int, str] = field(default_factory=dict)
    _turn: int = 0

    def __call__(self, event: AgentEvent) -> None:
        turn = event.turn
        if event.kind == "turn_started":
            self._turn = turn
            row = _Row(turn, "model", "thinking" if self.label == "turn" else "planning")
            self._rows.append(row)
            self._model_rows[turn] = row
        elif event.kind == "turn_finished":
            self._finish_turn(event)
        elif event.kind == "retry":
            self._rows.append(_Row(turn, _short(f"answer again: {event.text}"), "retry"))
        elif event.kind == "call_started" and event.call is not None:
            row = _Row(turn, _call_text(event.call.name, event.call.arguments
                                        if event.call.arguments is not None else event.call.raw),
                       "running")
            self._rows.append(row)
            self._call_rows[event.call.id] = row
        elif event.kind == "call_finished" and event.call is not None and event.outcome:
            call_row = self._call_rows.get(event.call.id)
            if call_row is None:
                call_row = _Row(turn, _call_text(event.call.name, event.call.arguments), "")
                self._rows.append(call_row)
            outcome = event.outcome
            call_row.status = (f"failed: {outcome.content.split(':', 1)[0]}" if outcome.is_error
                               else "ok")
            call_row.ms = outcome.entry.duration_ms

    def text(self, piece: str) -> None:
        """Add a piece of the current turn's streamed text."""
        self._streamed[self._turn] = self._streamed.get(self._turn, "") + piece
        row = self._model_rows.get(self._turn)
        if row is not None:
            row.step = _short("model: " + self._streamed[self._turn])

    def interrupted(self) -> None:
        """Mark what was running as stopped."""
        for row in self._rows:
            if row.status in ("running", "thinking", "planning"):
                row.status = "interrupted"

    @property
    def turns(self) -> int:
        """How many turns (rounds) have started."""
        return self._turn

    def rows(self) -> list[list[str]]:
        """turn, step, status, ms (last: its varying width only pads the line's end)."""
        return [[str(row.turn), row.step, row.status,
                 "" if row.ms is None else f"{row.ms:.1f} ms"] for row in self._rows]

    def _finish_turn(self, event: AgentEvent) -> None:
        row = self._model_rows.get(event.turn)
        if row is None:
            return
        model_turn = event.model_turn
        if model_turn is None:  # a replan round: the planner's decision
            row.step = _short(f"planner: {event.text}")
            row.status = "answer" if event.text == "done" else "planned"
            return
        said = " ".join(model_turn.text.split())
        count = len(model_turn.calls)
        if said:
            row.step = _short(f"model: {said}")
        else:
            row.step = f"model: calls {count} tool{'s' if count != 1 else ''}"
        row.status = "tools" if model_turn.calls else "answer"


def _call_text(name: str, arguments: Any) -> str:
    if isinstance(arguments, dict):
        shown = ", ".join(f"{key}={value!r}" for key, value in arguments.items())
    else:
        shown = repr(arguments)
    return _short(f"{name}({shown})")


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= TEXT_SHOWN else text[:TEXT_SHOWN - 3] + "..."


def kit_words(tools: Any) -> list[str] | None:
    """The kit and tool names an agent's ``tools`` gives (a kit name, ``"a,b"``, or a list,
    whose agents are left out), less the ``lackpy`` tool; None for a kit given otherwise."""
    if not isinstance(tools, str | list):
        return None
    words = tools.split(",") if isinstance(tools, str) else tools
    return [name.strip() for name in words
            if isinstance(name, str) and name.strip() not in ("", LACKPY_TOOL)]


def _kit_names(service: LackpyService, agent: Agent) -> list[str]:
    """The names of the kit tools among the agent's tools (a kit name resolved)."""
    tools = service.config.kit_default if agent.tools is None else agent.tools
    names = kit_words(tools)
    kit = tools if names is None else names[0] if len(names) == 1 else names
    return list(service.resolve_kit(kit).tools) if kit else []
