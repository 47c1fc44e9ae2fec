"""``%usage``, for both hosts: the model calls this workspace made (tokens, cost) by provider,
tier and day, and the calls the ratchet saved; ``%kibitzer``: Kibitzer's mode and its latest
suggestions."""

from __future__ import annotations

from lackpy_kernel.notebook.declare import Option, magic
from lackpy_kernel.notebook.family import MagicFamily
from lackpy_kernel.notebook.syntax import MagicLine
from lackpy_kernel.telemetry import workspace_usage

__all__ = ["UsageMagics"]

SINCE = Option("--since", "value", "from this day on: 2026-11-20, or 7d for the last seven days",
               "DAY")


class UsageMagics(MagicFamily):
    """``%usage`` and ``%kibitzer`` over the notebook's workspace."""

    @magic("usage", "model calls (tokens, cost) by provider, tier and day, and the calls the "
                    "ratchet saved", options=(SINCE,))
    def usage(self, line: MagicLine) -> None:
        report = workspace_usage(self.service.config_dir, line.options.get("--since"))
        self.port.display({"text/plain": report.text()})

    @magic("kibitzer", "Kibitzer's mode and its latest suggestions (the kibitzer extra)")
    def kibitzer(self, line: MagicLine) -> None:
        watch = self.service.kibitzer
        self.port.display({"text/plain": watch.describe() if watch is not None else (
            "Kibitzer is off: install the kibitzer extra (pip install 'lackpy-kernel[kibitzer]') "
            "and leave [kibitzer] enabled unset or true in .lackpy/config.toml")})
