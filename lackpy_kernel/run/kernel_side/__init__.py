"""What runs in the caller's process (the kernel, the service, the CLI): the ``Sandbox``,
which starts the worker, sends it programs and survives its death, and the kernel's side of
forwarding (``plan_kit``: what a request says about a kit's tools; ``ToolHost``: runs the
calls of the tools that run here), the approval of a program's file changes
(``Approver``), and the ``SandboxPool`` of workers for programs run side by side."""

from ..protocol import SandboxLimits
from ._approval import NO_ONE_TO_ASK, Approver, blocking, is_async_approver
from ._pool import SandboxPool
from ._sandbox import GRACE_SECONDS, Sandbox, in_thread, sandbox_supported
from ._tools import HostedRun, KitPlan, ToolHost, asked_first, asks_before_calls, plan_kit

__all__ = ["GRACE_SECONDS", "NO_ONE_TO_ASK", "Approver", "HostedRun", "KitPlan", "Sandbox",
           "SandboxLimits", "SandboxPool", "ToolHost", "asked_first", "asks_before_calls",
           "blocking", "in_thread", "is_async_approver", "plan_kit", "sandbox_supported"]
