"""A lackpy kernel with a deliberately broken tool provider, to test how bugs surface.

Run as ``python -m tests.support.faulty_kernel -f CONNECTION_FILE`` from the repository
root. The provider is registered through the public ``Toolbox`` API, the way a user's
plugin would be, and the session's kit names its tool, so resolving the kit raises the
provider's ``TypeError``: a bug, which the kernel must report as one, not as a kit problem.
"""

from __future__ import annotations

from typing import Any

from ipykernel.kernelapp import IPKernelApp

from lackpy_kernel.kernel import LackpyKernel
from lackpy_kernel.kit import ToolSpec

BUG = "a bug in a tool provider"


class BrokenProvider:
    """A tool provider whose ``resolve`` has a bug."""

    name = "broken"

    def resolve(self, spec: ToolSpec) -> Any:
        raise TypeError(BUG)


class FaultyKernel(LackpyKernel):
    """The lackpy kernel, with the broken tool in its session's kit."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.service.toolbox.register_provider(BrokenProvider())
        self.service.toolbox.register_tool(ToolSpec("broken", "broken"))
        self.lackpy.kit = ["read_file", "broken"]


if __name__ == "__main__":
    IPKernelApp.launch_instance(kernel_class=FaultyKernel)
