"""Tool and argument specifications."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class ArgSpec:
    """One argument of a tool: its name, a type annotation string and a description."""

    name: str
    type: str = "Any"
    description: str = ""


@dataclass
class ToolSpec:
    """A registered tool.

    ``grade_w`` is its world coupling (0-3) and ``effects_ceiling`` its effects ceiling (0-3).
    ``examples`` are dicts with keys ``intent``, ``code`` and ``tags``. ``docs`` is the path of a
    markdown file relative to the provider's package root, resolved on demand.
    """

    name: str
    provider: str
    provider_config: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    args: list[ArgSpec] = field(default_factory=list)
    returns: str = "Any"
    grade_w: int = 3
    effects_ceiling: int = 3
    examples: list[dict] = field(default_factory=list)
    docs: str | None = None

    def signature(self, name: str | None = None) -> str:
        """``name(arg: type, ...) -> returns``, optionally under another name (an alias)."""
        args = ", ".join(f"{arg.name}: {arg.type}" for arg in self.args)
        return f"{name or self.name}({args}) -> {self.returns}"

    def describe(self, name: str | None = None) -> str:
        """The signature followed by the description: one line for an inference prompt."""
        line = self.signature(name)
        return f"{line}: {self.description}" if self.description else line
