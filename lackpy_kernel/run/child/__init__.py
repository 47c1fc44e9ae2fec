"""A forked child of the worker, which runs one program inside the walls.

The worker prepares what every child finds ready (``PythonTools``, ``named_kits``,
``preresolve``, ``wall_plan``) and forks each with a ``Snapshot`` of the session; the child
then lives ``child_main``: it warms up, puts up its walls, takes the next request that
``fits`` it from stdin, and replies with ``run_request``'s outcome. The tools it forwards to
the kernel go through its ``ChildChannel``.
"""

from ._life import QUIET, child_main, request_waiting
from ._prepared import NamedKits, PythonTools, named_kits, preresolve, wall_plan
from ._program import (
    WARM_UP_PROGRAM,
    WARM_UP_READ,
    WARM_UP_SHIPPED,
    WARM_UP_TOOL,
    kit_for,
    run_request,
)
from ._snapshot import Snapshot, fits
from ._tools import ChildChannel, child_tools, rebuilt_error

__all__ = [
    "QUIET", "WARM_UP_PROGRAM", "WARM_UP_READ", "WARM_UP_SHIPPED", "WARM_UP_TOOL", "ChildChannel",
    "NamedKits", "PythonTools", "Snapshot", "child_main", "child_tools", "fits", "kit_for",
    "named_kits", "preresolve", "rebuilt_error", "request_waiting", "run_request", "wall_plan",
]
