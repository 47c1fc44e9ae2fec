"""Engines: seed 003's Plan, Step and Store, with lackpy as what a step runs.

A ``Plan`` of ``Step``\\ s runs tool calls, Python callables, lackpy programs (``Program``),
intents (``Delegate``) and approval gates (``Approval``) in order, in parallel bands and along
routes, and returns an ``Envelope``; with a ``Store`` and a ``checkpoint_key`` it checkpoints
after every step and resumes where it stopped.
"""

from lackpy_kernel.errors import (
    ConcurrentPlanRunError,
    PlanCompileError,
    PlanPaused,
    PlanRegistryError,
    PlanResumeError,
    PlanRuntimeError,
    PlanStepError,
)

from .envelope import Envelope, ErrorInfo, StepResult
from .evaluate import Evaluator, PlanState
from .execute import ServiceExecutor, StepExecutor
from .plan import Plan
from .sentinels import Sentinel, from_parallel_all, from_prev, from_start, from_step
from .step import Approval, Delegate, Program, Step
from .store import Store

__all__ = [
    "Approval",
    "ConcurrentPlanRunError",
    "Delegate",
    "Envelope",
    "ErrorInfo",
    "Evaluator",
    "Plan",
    "PlanCompileError",
    "PlanPaused",
    "PlanRegistryError",
    "PlanResumeError",
    "PlanRuntimeError",
    "PlanState",
    "PlanStepError",
    "Program",
    "Sentinel",
    "ServiceExecutor",
    "Step",
    "StepExecutor",
    "StepResult",
    "Store",
    "from_parallel_all",
    "from_prev",
    "from_start",
    "from_step",
]
