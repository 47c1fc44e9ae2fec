"""Agent: an engine (the LLM loop, or ReplanEngine) with tools, a name and an output type."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, Protocol

from lackpy_kernel.errors import UsageError
from lackpy_kernel.execution import PoolPlace
from lackpy_kernel.run.kernel_side import Approver
from lackpy_kernel.service import LackpyService

from ..loop import run_sync
from ..plans import Envelope
from ._events import EventCallback, RunContext, TextCallback
from ._llm import LLMEngine
from ._tools import Toolset, build_toolset, tool_pool

__all__ = ["Agent", "Engine"]


class Engine(Protocol):
    """What drives an agent's run: ``LLMEngine`` and ``ReplanEngine`` are engines."""

    async def arun(self, context: RunContext) -> Envelope: ...


class Agent:
    """An engine with tools: ``Agent(LLMEngine("claude-haiku-4-5"), tools="debug")``.

    ``engine`` is an engine, or a model string (for ``LLMEngine(model)``). ``tools`` is a kit
    (a kit name, ``"a,b"``, a list of tool names; None: the config's default kit) or a list
    mixing kit tool names, Python callables (described to the model from their signature
    and docstring) and agents; the name ``lackpy`` adds a tool that runs a lackpy program.
    ``output`` is ``str`` (the final text) or a dataclass, TypedDict, list or dict type the
    final answer is read as (asked again once when it does not fit). ``service`` runs the
    programs (default: a LackpyService for the current directory, per run). ``auto_run``
    is the highest grade of kit tool (or tool a ``lackpy`` program calls) that runs without
    asking (default: the config's ``[delegate] auto_run``, else ``"read"``, so write tools
    are refused until allowed); Python callables and agents are the caller's and run.
    ``approve`` is asked before a tool call's file changes land (``[sandbox] approve =
    "write"``), in the task of that call (see ``Approver``); without one they are refused.

    Raises KitError or UsageError at construction when the tools cannot be used.
    """

    def __init__(self, engine: Engine | str, tools: Any = None, *, name: str | None = None,
                 output: Any = str, service: LackpyService | None = None,
                 auto_run: str | None = None, approve: Approver | None = None) -> None:
        self.engine: Engine = LLMEngine(engine) if isinstance(engine, str) else engine
        if not callable(getattr(self.engine, "arun", None)):
            raise UsageError(f"engine must be an LLMEngine, a ReplanEngine or a model name, not "
                             f"{engine!r}")
        if name is not None and not name.isidentifier():
            raise UsageError(f"an agent's name is a tool name such as 'research', not {name!r}")
        self.tools = tools
        self.name = name
        self.output = output
        self.service = service
        self.auto_run = auto_run
        self.approve = approve
        self._pool: PoolPlace | None = None  # with a service of its own: kept across runs
        with self._service() as checking:  # the kit resolves now, or the error shows now
            build_toolset(tools, checking, ceiling=auto_run)

    def __repr__(self) -> str:
        return f"Agent({self.engine!r}, name={self.name!r})"

    # -- running --------------------------------------------------------------------

    def run(self, task: str, *, on_event: EventCallback | None = None) -> Envelope:
        """Run the agent on ``task``; safe inside a running event loop (a notebook). See
        ``arun``."""
        return run_sync(self.arun(task, on_event=on_event))

    async def arun(self, task: str, *, on_event: EventCallback | None = None,
                   on_text: TextCallback | None = None) -> Envelope:
        """Run the agent on ``task`` and return its Envelope: ``payload`` the answer (of type
        ``output``), ``trace`` every tool call, ``history`` each model turn, ``metadata``
        turns and tokens; ``error`` says why it stopped when it did. ``on_event`` hears of
        turns and tool calls as they happen, ``on_text`` of the streamed text."""
        if not isinstance(task, str) or not task.strip():
            raise UsageError(f"an agent's task is text saying what to do, not {task!r}")
        with self._service() as service:
            pool = self._pool_for(service)
            try:
                context = RunContext(task, self._toolset(service, pool), service, self.output,
                                     self.name, on_event, on_text)
                return await self.engine.arun(context)
            finally:
                if pool is not self._pool:
                    pool.close()

    @property
    def sandbox_workers(self) -> int:
        """How many sandbox workers this agent keeps for its tool calls."""
        return self._pool.size if self._pool is not None else 0

    def close(self) -> None:
        """Stop the sandbox workers kept for this agent's tool calls (an agent given a
        ``service`` keeps them from run to run, the extras until idle; they also stop when
        the process ends)."""
        if self._pool is not None:
            self._pool.close()

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def stream(self, task: str) -> AsyncIterator[str]:
        """The run's text as the model writes it, across tool-call turns (``async for``).

        The queue between the model and the reader holds ``stream_buffer`` pieces; a slow
        reader makes the model's stream wait. When the run ends with an error the stream
        raises it (PlanStepError, carrying the Envelope). A retried request may repeat text.
        """
        queue: asyncio.Queue[str | None] = asyncio.Queue(getattr(self.engine, "stream_buffer", 64))
        producer = asyncio.ensure_future(self._produce(task, queue))
        try:
            while (piece := await queue.get()) is not None:
                yield piece
            (await producer).raise_for_error()
        finally:
            if not producer.done():
                producer.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await producer

    async def _produce(self, task: str, queue: asyncio.Queue[str | None]) -> Envelope:
        try:
            return await self.arun(task, on_text=queue.put)
        finally:
            await queue.put(None)

    def as_tool(self, name: str | None = None, description: str | None = None
                ) -> Callable[[str], Awaitable[Any]]:
        """This agent as a tool: an async function of ``task`` returning the answer, for a
        plan step (``Step(agent.as_tool("research"))``) or another agent's tools. Raises the
        run's error (PlanStepError) when it ends with one."""
        tool_name = name or self.name
        if not tool_name or not tool_name.isidentifier():
            raise UsageError("name the tool: agent.as_tool('research'), or Agent(..., name=...)")

        async def tool(task: str) -> Any:
            envelope = await self.arun(task)
            payload = envelope.raise_for_error().payload
            if dataclasses.is_dataclass(payload) and not isinstance(payload, type):
                return dataclasses.asdict(payload)
            return payload

        tool.__name__ = tool.__qualname__ = tool_name
        tool.__doc__ = description or f"Ask the agent {tool_name!r} to do a task; returns its answer."
        tool.lackpy_agent = self  # type: ignore[attr-defined]
        return tool

    # -- internals ------------------------------------------------------------------

    def _toolset(self, service: LackpyService, pool: PoolPlace) -> Toolset:
        return build_toolset(self.tools, service, ceiling=self.auto_run,
                             lackpy=getattr(self.engine, "needs_lackpy_tool", False), pool=pool,
                             approve=self.approve)

    def _pool_for(self, service: LackpyService) -> PoolPlace:
        if service is not self.service:
            return tool_pool(service)  # a service of this run only: so is its pool
        if self._pool is None:
            self._pool = tool_pool(service)
            weakref.finalize(self, self._pool.close)  # an agent nobody closed: when it goes
        return self._pool

    @contextlib.contextmanager
    def _service(self) -> Iterator[LackpyService]:
        if self.service is not None:
            yield self.service
            return
        own = LackpyService()
        try:
            yield own
        finally:
            own.close()
