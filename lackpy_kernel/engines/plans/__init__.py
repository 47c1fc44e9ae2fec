"""Plans: seed 003's ``Plan`` of ``Step``\\ s, run here with checkpoints in a ``Store``.

A step's target is a kit tool, a Python callable, a ``Program``, a ``Delegate``, an
``Approval`` or an agent (anything with ``as_tool``). ``Plan`` compiles its steps
(``_compiler``), an ``Evaluator`` walks them in bands, sentinels and routes (``_evaluate``,
also the Temporal workflow's), a ``StepExecutor`` runs each (``_execute``), a
``Checkpointer`` saves the run after each band (``_checkpoint``), a ``Ledger`` records a
step's file commit before it lands (``_ledger``), and the result is an
``Envelope`` (``_envelope``, what agents return too). ``PlanLibrary`` keeps a workspace's
saved plans and their Store (``_library``).
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

from ._checkpoint import STALE_AFTER_SECONDS, Checkpointer, owner_alive
from ._compiler import PROGRAM_PARAMS, did_you_mean
from ._envelope import Envelope, ErrorInfo, StepResult, error_info
from ._evaluate import Evaluator, PlanState, choose_route, pause_error
from ._execute import ServiceExecutor, StepExecutor
from ._ledger import ChangePaused, Ledger
from ._library import PlanLibrary, RunStatus
from ._plan import Plan
from ._sentinels import Sentinel, from_parallel_all, from_prev, from_start, from_step
from ._serialise import step_from_dict
from ._step import Approval, Delegate, Program, Step, target_label
from ._store import Store

__all__ = [
    "PROGRAM_PARAMS",
    "STALE_AFTER_SECONDS",
    "Approval",
    "ChangePaused",
    "Checkpointer",
    "ConcurrentPlanRunError",
    "Delegate",
    "Envelope",
    "ErrorInfo",
    "Evaluator",
    "Ledger",
    "Plan",
    "PlanCompileError",
    "PlanLibrary",
    "PlanPaused",
    "PlanRegistryError",
    "PlanResumeError",
    "PlanRuntimeError",
    "PlanState",
    "PlanStepError",
    "Program",
    "RunStatus",
    "Sentinel",
    "ServiceExecutor",
    "Step",
    "StepExecutor",
    "StepResult",
    "Store",
    "choose_route",
    "did_you_mean",
    "error_info",
    "from_parallel_all",
    "from_prev",
    "from_start",
    "from_step",
    "owner_alive",
    "pause_error",
    "step_from_dict",
    "target_label",
]
