"""Engines: seed 003's Plan, Step and Store, LLMEngine, Agent and ReplanEngine, with lackpy as
what a step or a tool call runs.

A ``Plan`` of ``Step``\\ s runs tool calls, Python callables, lackpy programs (``Program``),
intents (``Delegate``) and approval gates (``Approval``) in order, in parallel bands and along
routes, and returns an ``Envelope``; with a ``Store`` and a ``checkpoint_key`` it checkpoints
after every step and resumes where it stopped. An ``Agent`` runs the model <-> tool-call loop
of an ``LLMEngine`` (each tool call as safely as a program), or a ``ReplanEngine`` whose
planner decides each round's ``Task``\\ s; ``trace_to_program`` turns a run's tool calls into
one straight-line program (the ratchet).
"""

from lackpy_kernel.errors import (
    AgentOutputError,
    ConcurrentPlanRunError,
    MaxTurnsExceeded,
    PlanCompileError,
    PlanPaused,
    PlanRegistryError,
    PlanResumeError,
    PlanRuntimeError,
    PlanStepError,
    StreamStallError,
    ToolApprovalError,
    ToolTimeoutError,
)

from .agent import Agent, Engine
from .envelope import Envelope, ErrorInfo, StepResult
from .evaluate import Evaluator, PlanState
from .events import AgentEvent, RunContext
from .execute import ServiceExecutor, StepExecutor
from .library import PlanLibrary, RunStatus
from .llm import LLMEngine
from .plan import Plan
from .replan import DEFAULT_MAX_ROUNDS, PlanRound, ReplanEngine, Task
from .sentinels import Sentinel, from_parallel_all, from_prev, from_start, from_step
from .step import Approval, Delegate, Program, Step, target_label
from .store import Store
from .straight_line import remember_program, trace_to_program
from .tools import LACKPY_TOOL

__all__ = [
    "DEFAULT_MAX_ROUNDS",
    "LACKPY_TOOL",
    "Agent",
    "AgentEvent",
    "AgentOutputError",
    "Approval",
    "ConcurrentPlanRunError",
    "Delegate",
    "Engine",
    "Envelope",
    "ErrorInfo",
    "Evaluator",
    "LLMEngine",
    "MaxTurnsExceeded",
    "Plan",
    "PlanCompileError",
    "PlanLibrary",
    "PlanPaused",
    "PlanRegistryError",
    "PlanRound",
    "PlanResumeError",
    "PlanRuntimeError",
    "PlanState",
    "PlanStepError",
    "Program",
    "ReplanEngine",
    "RunStatus",
    "RunContext",
    "Sentinel",
    "ServiceExecutor",
    "Step",
    "StepExecutor",
    "StepResult",
    "Store",
    "StreamStallError",
    "Task",
    "ToolApprovalError",
    "ToolTimeoutError",
    "from_parallel_all",
    "from_prev",
    "from_start",
    "from_step",
    "remember_program",
    "target_label",
    "trace_to_program",
]
