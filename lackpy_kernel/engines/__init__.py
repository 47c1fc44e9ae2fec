"""Engines: seed 003's Plan, Step and Store, LLMEngine, Agent and ReplanEngine, with lackpy as
what a step or a tool call runs.

A ``Plan`` of ``Step``\\ s runs tool calls, Python callables, lackpy programs (``Program``),
intents (``Delegate``) and approval gates (``Approval``) in order, in parallel bands and along
routes, and returns an ``Envelope``; with a ``Store`` and a ``checkpoint_key`` it checkpoints
after every step and resumes where it stopped. An ``Agent`` runs the model <-> tool-call loop
of an ``LLMEngine`` (each tool call as safely as a program), or a ``ReplanEngine`` whose
planner decides each round's ``Task``\\ s; ``trace_to_program`` turns a run's tool calls into
one straight-line program (the ratchet).

The floors, each importing only those below it (an import-linter contract keeps it so):
``agents/`` and ``temporal/`` (plans on Temporal, an optional extra) over ``plans/`` (whose
``Envelope``, ``Store`` and ``Checkpointer`` the agents use too) over ``loop.py`` (the
event loop thread that runs coroutines for synchronous callers).
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

from .agents import (
    Agent,
    AgentEvent,
    Engine,
    LLMEngine,
    PlanRound,
    ReplanEngine,
    RunContext,
    Task,
    trace_to_program,
)
from .plans import (
    Approval,
    Delegate,
    Envelope,
    ErrorInfo,
    Evaluator,
    Plan,
    PlanState,
    Program,
    Sentinel,
    ServiceExecutor,
    Step,
    StepExecutor,
    StepResult,
    Store,
    from_parallel_all,
    from_prev,
    from_start,
    from_step,
)

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
