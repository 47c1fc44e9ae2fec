"""Agents: seed 003's ``Agent`` over an engine, ``LLMEngine`` (the model <-> tool-call loop)
or ``ReplanEngine`` (a planner decides each round's ``Task``\\ s).

Each tool call runs through a ``Toolset`` as safely as a program (``_tools``); engines get a
``RunContext`` and tell listeners ``AgentEvent``\\ s (``_events``); a final answer may be read
as a dataclass (``_structured``); ``trace_to_program`` turns a run's tool calls into one
straight-line program (``_straight_line``, the ratchet). Runs return the plans' ``Envelope``
and a replan checkpoints through the plans' ``Checkpointer``: agents sit above plans.
"""

from lackpy_kernel.errors import (
    AgentOutputError,
    MaxTurnsExceeded,
    StreamStallError,
    ToolApprovalError,
    ToolTimeoutError,
)

from ._agent import Agent, Engine
from ._events import AgentEvent, RunContext
from ._llm import LLMEngine
from ._replan import DEFAULT_MAX_ROUNDS, PlanRound, ReplanEngine, Task
from ._straight_line import remember_program, trace_to_program
from ._tools import LACKPY_TOOL

__all__ = [
    "DEFAULT_MAX_ROUNDS",
    "LACKPY_TOOL",
    "Agent",
    "AgentEvent",
    "AgentOutputError",
    "Engine",
    "LLMEngine",
    "MaxTurnsExceeded",
    "PlanRound",
    "ReplanEngine",
    "RunContext",
    "StreamStallError",
    "Task",
    "ToolApprovalError",
    "ToolTimeoutError",
    "remember_program",
    "trace_to_program",
]
