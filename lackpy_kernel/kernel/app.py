"""The application that runs the lackpy kernel: ipykernel's, less the shell channel thread."""

from __future__ import annotations

from ipykernel.kernelapp import IPKernelApp


class LackpyKernelApp(IPKernelApp):
    """``IPKernelApp`` with shell messages received on the kernel's main thread.

    ipykernel 7 receives them on a thread of their own, which hands each to the main
    thread and each reply back, for subshells (JEP 91). This kernel offers none (its
    ``kernel_info`` says so), so it skips those two hand-overs on every request.
    """

    def init_sockets(self) -> None:
        super().init_sockets()  # type: ignore[no-untyped-call]
        self.shell_channel_thread = None
