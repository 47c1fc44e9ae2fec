"""Plans on Temporal: the plan is a workflow, each step an activity run by ``lackpy worker``.

``TemporalRunner`` starts runs and returns the Envelopes the local engine would;
``TemporalWorker`` (``lackpy worker``) serves a task queue: the workflows (a
``PlanRequest`` or a ``ManyRequest`` in, Envelopes out) and the
``StepActivities``, each of which takes one dataclass (``StepRequest`` -> ``StepAnswer``,
``CommitRequest`` -> ``CommitAnswer``, ``ForgetRequest`` -> None). Needs the ``temporal``
extra: ``pip install 'lackpy-kernel[temporal]'`` (importing this module without it raises
MissingExtraError).
"""

from lackpy_kernel.errors import MissingExtraError

try:
    import temporalio  # noqa: F401 - only to say clearly when it is missing
except ImportError as exc:
    raise MissingExtraError(
        f"plans on Temporal need the temporalio package ({exc}); install the extra: "
        f"pip install 'lackpy-kernel[temporal]'") from None

from ._activities import (  # noqa: E402
    CommitAnswer,
    CommitRequest,
    ForgetRequest,
    StepActivities,
    StepAnswer,
    StepPolicy,
    StepRequest,
)
from ._runner import RemoteRuns, TemporalRun, TemporalRunner, connect  # noqa: E402
from ._worker import TemporalWorker, serve  # noqa: E402
from ._workflows import ManyRequest, PlanManyWorkflow, PlanRequest, PlanWorkflow  # noqa: E402

__all__ = [
    "CommitAnswer",
    "CommitRequest",
    "ForgetRequest",
    "ManyRequest",
    "PlanManyWorkflow",
    "PlanRequest",
    "PlanWorkflow",
    "RemoteRuns",
    "StepActivities",
    "StepAnswer",
    "StepPolicy",
    "StepRequest",
    "TemporalRun",
    "TemporalRunner",
    "TemporalWorker",
    "connect",
    "serve",
]
