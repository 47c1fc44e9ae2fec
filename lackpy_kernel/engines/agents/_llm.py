"""LLMEngine: seed 003's model <-> tool-call loop, with its production knobs, over lackpy's kit.

Each turn the model sees the conversation and the tools' schemas and answers with text and
tool calls; the calls of a turn run concurrently (at most ``max_parallel_tools`` at once,
each through the agent's Toolset, so as safely as a program), their results go back, and
the loop goes on until a turn asks for no tool (the final answer) or ``max_turns`` is spent.

Which provider serves a model string: ``provider=`` (a plugin, or a provider configured in
the workspace's ``.lackpy/config.toml``), else the first matching alias, then rule
(``register_provider_alias``, ``register_provider_rule``; newer rules first, yours before
the built-in ones), else the default provider (``set_default_provider``; None makes an
unknown model an error at construction).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

from lackpy_kernel.config import CONFIG_DIR, load_config
from lackpy_kernel.errors import MaxTurnsExceeded, ProviderError, ToolTimeoutError, UsageError
from lackpy_kernel.infer.models import (
    CONVERSATIONS_FILE,
    TOOL_CHAT_PLUGINS,
    AssistantMessage,
    ChatRequest,
    Message,
    ModelTurn,
    ToolCall,
    ToolChatModel,
    ToolResult,
    ToolResults,
    Usage,
    UserMessage,
    record_conversation,
    tool_chat_model,
)
from lackpy_kernel.timing import ms_since as _ms_since

from ..plans import Envelope, ErrorInfo, StepResult, did_you_mean, error_info
from ._events import RunContext
from ._structured import output_instructions, read_output, wants_structure
from ._tools import CallOutcome

__all__ = ["DEFAULT_STREAM_IDLE_TIMEOUT", "LLMEngine"]

log = logging.getLogger("lackpy_kernel.engines")

DEFAULT_STREAM_IDLE_TIMEOUT = 90.0
_ROUTING_KINDS = ("contains", "startswith")


class _Default:
    """A knob left at its default: the provider's configured value, else ``value``, applies."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return repr(self.value)


class LLMEngine:
    """The model <-> tool-call loop for one agent (see the module doc for routing).

    Knobs, with the seed's meanings: ``max_turns`` caps model turns (``MaxTurnsExceeded``);
    ``tool_choice="any"`` makes the model call a tool on the first turn only, then ``auto``;
    ``temperature`` and ``system`` are sent as given; ``max_retries``, ``retry_delay``,
    ``request_timeout`` and ``stream_idle_timeout`` are the inference tiers' retry policy
    (a ``StreamStallError`` when a stream goes quiet; ``None`` disables that, with one
    warning now); left at their defaults, a configured provider's own settings apply.
    ``max_parallel_tools`` caps concurrent calls of a turn (None: all at once);
    ``max_tool_calls_per_turn`` runs that many and answers the rest with an error telling
    the model so; ``tool_timeout`` stops a call and reports ``ToolTimeoutError`` to the
    model, and the run goes on; ``stream_buffer`` bounds ``Agent.stream``'s queue.
    ``workspace`` is where ``.lackpy/`` (configured providers, recorded conversations) is;
    default: the current directory.

    Raises UsageError at construction for a knob out of range, an unknown provider, or a
    model no rule routes when there is no default provider.
    """

    _PROVIDER_ALIASES: ClassVar[dict[str, str]] = {
        "claude": "anthropic", "anthropic": "anthropic", "gpt": "openai", "openai": "openai",
        "ollama": "ollama", "replay": "replay",
    }
    _BUILTIN_RULES: ClassVar[list[tuple[str, str, str]]] = [
        ("claude", "anthropic", "startswith"), ("gpt-", "openai", "startswith"),
        ("o1", "openai", "startswith"), ("o3", "openai", "startswith"),
        ("o4", "openai", "startswith"), ("chatgpt", "openai", "startswith"),
        (":", "ollama", "contains"),  # a tag: qwen2.5-coder:7b, llama3.2:1b
    ]
    _USER_RULES: ClassVar[list[tuple[str, str, str]]] = []
    _DEFAULT_PROVIDER: ClassVar[str | None] = "anthropic"
    _REGISTRY_LOCK: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, model: str, *, provider: str | None = None, max_turns: int = 20,
                 tool_choice: str = "auto", temperature: float | None = None,
                 system: str | None = None, max_retries: int = _Default(3),  # type: ignore[assignment]
                 retry_delay: float = _Default(1.0),  # type: ignore[assignment]
                 request_timeout: float | None = _Default(120.0),  # type: ignore[assignment]
                 max_parallel_tools: int | None = 8, max_tool_calls_per_turn: int | None = None,
                 tool_timeout: float | None = None,
                 stream_idle_timeout: float | None = _Default(DEFAULT_STREAM_IDLE_TIMEOUT),  # type: ignore[assignment]
                 stream_buffer: int = 64,
                 workspace: str | os.PathLike[str] | None = None) -> None:
        _check_knobs(model, max_turns, tool_choice, temperature, max_parallel_tools,
                     max_tool_calls_per_turn, tool_timeout, stream_buffer)
        self.model = model
        self.max_turns = max_turns
        self.tool_choice = tool_choice
        self.temperature = temperature
        self.system = system
        self.max_parallel_tools = max_parallel_tools
        self.max_tool_calls_per_turn = max_tool_calls_per_turn
        self.tool_timeout = tool_timeout
        self.stream_buffer = stream_buffer
        self.workspace = Path(workspace or Path.cwd()).resolve()
        knobs = {"max_retries": max_retries, "retry_delay": retry_delay,
                 "request_timeout": request_timeout, "stream_idle_timeout": stream_idle_timeout}
        explicit = {key: value for key, value in knobs.items() if not isinstance(value, _Default)}
        if "stream_idle_timeout" in explicit and not explicit["stream_idle_timeout"]:
            warnings.warn("stream_idle_timeout=None disables stall detection: a half-open model "
                          "stream can then hang the run until request_timeout (or for good)",
                          UserWarning, stacklevel=2)
        self.provider, plugin, settings = self._provider_settings(provider)
        if temperature is not None:
            settings["temperature"] = temperature
        settings.update(explicit)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # warned once, above
            self.chat: ToolChatModel = tool_chat_model(plugin, self.provider, settings,
                                                       self.workspace / CONFIG_DIR)
        self.plugin = plugin

    def __repr__(self) -> str:
        return f"LLMEngine({self.model!r}, provider={self.provider!r})"

    # -- routing ------------------------------------------------------------------

    @classmethod
    def register_provider_alias(cls, alias: str, provider: str) -> None:
        """Route the model string ``alias`` (exactly) to ``provider``."""
        with cls._REGISTRY_LOCK:
            cls._PROVIDER_ALIASES = {**cls._PROVIDER_ALIASES, alias: provider}

    @classmethod
    def register_provider_rule(cls, pattern: str, provider: str, *, kind: str = "contains") -> None:
        """Route model strings containing (``kind="contains"``) or starting with
        (``"startswith"``) ``pattern`` to ``provider``; newer rules win over older ones and
        over the built-in rules. UsageError for another kind."""
        if kind not in _ROUTING_KINDS:
            raise UsageError(f"kind={kind!r}; did you mean 'contains' or 'startswith'?")
        with cls._REGISTRY_LOCK:
            cls._USER_RULES = [(pattern, provider, kind), *cls._USER_RULES]

    @classmethod
    def set_default_provider(cls, provider: str | None) -> None:
        """The provider for model strings no alias or rule routes; None makes them an error."""
        with cls._REGISTRY_LOCK:
            cls._DEFAULT_PROVIDER = provider

    @classmethod
    def provider_aliases(cls) -> dict[str, str]:
        """A copy of the alias map."""
        return dict(cls._PROVIDER_ALIASES)

    @classmethod
    def route(cls, model: str) -> str:
        """The provider that serves ``model``; UsageError when none does."""
        with cls._REGISTRY_LOCK:
            aliases, rules = cls._PROVIDER_ALIASES, [*cls._USER_RULES, *cls._BUILTIN_RULES]
            default = cls._DEFAULT_PROVIDER
        if model in aliases:
            return aliases[model]
        for pattern, provider, kind in rules:
            if model.startswith(pattern) if kind == "startswith" else pattern in model:
                return provider
        if default is None:
            raise UsageError(f"no provider serves the model {model!r}: no alias or rule matches "
                             f"and there is no default provider; pass provider=..., or "
                             f"LLMEngine.register_provider_rule({model.split(':')[0]!r}, ...)")
        return default

    def _provider_settings(self, provider: str | None) -> tuple[str, str, dict[str, Any]]:
        """The provider's name, plugin and settings (a configured table, or none)."""
        name = provider if provider is not None else self.route(self.model)
        tables: dict[str, dict[str, Any]] = {}
        if name not in TOOL_CHAT_PLUGINS or provider is not None:
            tables = load_config(self.workspace).inference_providers
        if name in tables:
            settings = dict(tables[name])
            plugin = str(settings.pop("plugin", name))
        elif name in TOOL_CHAT_PLUGINS:
            settings, plugin = {}, name
        else:
            known = [*TOOL_CHAT_PLUGINS, *tables]
            raise UsageError(f"no provider {name!r}: not a plugin and not configured in "
                             f"{self.workspace / CONFIG_DIR / 'config.toml'}"
                             + did_you_mean(name, known, "providers"))
        if self.model not in self._PROVIDER_ALIASES:
            settings["model"] = self.model  # an alias keeps the provider's own model
        return name, plugin, settings

    # -- a run ----------------------------------------------------------------------

    async def arun(self, context: RunContext) -> Envelope:
        """Run the loop for ``context``; the Envelope's ``error`` says why it stopped, if it
        did (MaxTurnsExceeded, AgentOutputError, a ProviderError once retries are spent).
        Cancelling the await stops the model request and the tool calls in flight."""
        return await _Loop(self, context).run()


class _Loop:
    """One run's conversation, trace and turns."""

    def __init__(self, engine: LLMEngine, context: RunContext) -> None:
        self.engine = engine
        self.context = context
        self.messages: list[Message] = [UserMessage(context.task)]
        self.turns: list[ModelTurn] = []
        self.history: list[StepResult] = []
        self.usage = Usage()
        self.started = time.perf_counter()

    async def run(self) -> Envelope:
        engine, context = self.engine, self.context
        choice = engine.tool_choice if context.tools else "auto"
        retried = False
        try:
            for number in range(1, engine.max_turns + 1):
                turn = await self._model_turn(number, choice)
                choice = "auto"  # "any" binds the first turn only, or the model could never stop
                if not turn.calls:
                    payload, problem = read_output(context.output, turn.text)
                    if problem is None:
                        return self._finish(payload)
                    if retried:
                        return self._finish(error=ErrorInfo(
                            "AgentOutputError", f"the final answer is not a "
                            f"{_name(context.output)}, even after a retry: {problem}"))
                    retried = True
                    context.emit("retry", number, text=problem)
                    self.messages.append(UserMessage(
                        f"Your answer could not be read: {problem}. Answer again with only the "
                        f"JSON value, as the system prompt says."))
                    continue
                if number == engine.max_turns:
                    raise MaxTurnsExceeded(
                        f"the model asked for tools again in turn {number}, its last "
                        f"(max_turns={engine.max_turns}); those calls did not run. Raise "
                        f"max_turns, or give a narrower task")
                await self._tool_calls(number, turn.calls)
            raise MaxTurnsExceeded(f"no final answer within max_turns={engine.max_turns}")
        except (MaxTurnsExceeded, ProviderError) as exc:
            return self._finish(error=error_info(exc))

    async def _model_turn(self, number: int, choice: str) -> ModelTurn:
        self.context.emit("turn_started", number)
        started = time.perf_counter()
        request = ChatRequest(self._system(), list(self.messages), self.context.tools.schemas(),
                              choice)
        turn = await self.engine.chat.complete(request, self.context.text)
        self.turns.append(turn)
        self.usage += turn.usage
        self.messages.append(AssistantMessage(turn.text, turn.calls))
        self.history.append(StepResult(f"turn {number}", turn.text, ms=_ms_since(started)))
        self.context.emit("turn_finished", number, model_turn=turn)
        return turn

    async def _tool_calls(self, number: int, calls: list[ToolCall]) -> None:
        engine = self.engine
        cap = engine.max_tool_calls_per_turn
        running, refused = (calls, []) if cap is None else (calls[:cap], calls[cap:])
        limit = asyncio.Semaphore(engine.max_parallel_tools) if engine.max_parallel_tools else None

        async def one(call: ToolCall) -> CallOutcome:
            async with limit if limit is not None else contextlib.nullcontext():
                self.context.emit("call_started", number, call=call)
                outcome = await self._call(call)
                self.context.emit("call_finished", number, call=call, outcome=outcome)
                return outcome

        outcomes = list(await asyncio.gather(*(one(call) for call in running)))
        for call in refused:
            outcome = CallOutcome.failed(
                call.name, call.arguments,
                f"only {cap} tool call{'s' if cap != 1 else ''} run per turn "
                f"(max_tool_calls_per_turn={cap}); this call did not run: make it in a later "
                f"turn, or fewer calls at once", kind="ToolCallLimit")
            self.context.emit("call_finished", number, call=call, outcome=outcome)
            outcomes.append(outcome)
        self.history[-1].trace = [outcome.entry for outcome in outcomes]
        self.messages.append(ToolResults([
            ToolResult(call.id, call.name, outcome.content, outcome.is_error)
            for call, outcome in zip([*running, *refused], outcomes, strict=True)]))

    async def _call(self, call: ToolCall) -> CallOutcome:
        timeout = self.engine.tool_timeout
        started = time.perf_counter()
        try:
            async with asyncio.timeout(timeout):
                arguments = call.arguments if call.arguments is not None else call.raw
                return await self.context.tools.call(call.name, arguments, call.problem)
        except TimeoutError:
            return CallOutcome.failed(call.name, call.arguments, ToolTimeoutError(
                f"{call.name} did not finish within tool_timeout={timeout:g} s and was stopped"),
                _ms_since(started))

    def _system(self) -> str | None:
        parts = [self.engine.system or ""]
        if wants_structure(self.context.output):
            parts.append(output_instructions(self.context.output))
        return "\n\n".join(part for part in parts if part) or None

    def _finish(self, payload: Any = None, error: ErrorInfo | None = None) -> Envelope:
        calls = [entry for result in self.history for entry in result.trace]
        trace = [replace(entry, step=index) for index, entry in enumerate(calls)]
        engine = self.engine
        metadata = {"model": engine.chat.model, "provider": engine.provider,
                    "turns": len(self.turns), "tool_calls": len(trace),
                    "input_tokens": self.usage.input_tokens,
                    "output_tokens": self.usage.output_tokens, "ms": _ms_since(self.started)}
        if error is None:
            self._record()
        return Envelope(payload, error, trace, self.history, metadata)

    def _record(self) -> None:
        """Append the conversation to the workspace's recordings, when the config says to
        record and a real model answered."""
        service = self.context.service
        if self.engine.plugin == "replay" or not service.config.inference_record:
            return
        try:
            record_conversation(service.config_dir / CONVERSATIONS_FILE, self.context.task,
                                self.context.tools.names, self.engine.chat.model, self.turns)
        except OSError as exc:  # a recording never fails the run it records
            log.warning("could not record the conversation in %s: %s", service.config_dir, exc)


def _check_knobs(model: Any, max_turns: Any, tool_choice: Any, temperature: Any,
                 max_parallel_tools: Any, max_calls: Any, tool_timeout: Any,
                 stream_buffer: Any) -> None:
    if not isinstance(model, str) or not model.strip():
        raise UsageError(f"model must be a model name such as 'claude-haiku-4-5', not {model!r}")
    for name, value, allow_none in (("max_turns", max_turns, False),
                                    ("max_parallel_tools", max_parallel_tools, True),
                                    ("max_tool_calls_per_turn", max_calls, True),
                                    ("stream_buffer", stream_buffer, False)):
        if value is None and allow_none:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise UsageError(f"{name}={value!r} must be a whole number of at least 1"
                             + (" (or None)" if allow_none else ""))
    if tool_choice not in ("auto", "any"):
        raise UsageError(f"tool_choice={tool_choice!r}; did you mean 'auto' (the model decides) "
                         f"or 'any' (it must call a tool on the first turn)?")
    for name, value, zero_ok in (("temperature", temperature, True),
                                 ("tool_timeout", tool_timeout, False)):
        if value is None:
            continue
        number = not isinstance(value, bool) and isinstance(value, int | float)
        if not number or not (value >= 0 if zero_ok else value > 0):
            raise UsageError(f"{name}={value!r} must be a number {'>= 0' if zero_ok else 'above 0'}"
                             f" (or None)")


def _name(kind: Any) -> str:
    return getattr(kind, "__name__", None) or str(kind)
