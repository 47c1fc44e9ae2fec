"""Tool and argument specifications."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NotRequired, TypedDict

POSITIONAL_ONLY_MARK = "/"
KEYWORD_ONLY_MARK = "*"
BUILTIN_PROVIDER = "builtin"
CHILD, KERNEL = "child", "kernel"  # where a tool's calls run (ToolSpec.where)


class Grade(TypedDict):
    """The grade fields of a ToolSpec, to pass as ``ToolSpec(..., **grade)``."""

    grade_w: int
    effects_ceiling: int


class ToolExample(TypedDict):
    """A few-shot example of a tool in use: an intent, the program that answers it, its tags."""

    intent: str
    code: str
    tags: NotRequired[list[str]]


@dataclass
class ArgSpec:
    """One argument of a tool: its name, a type annotation string and a description.

    ``default`` is an optional argument's default as Python source (``None`` when the argument
    is required). An ArgSpec named ``/`` or ``*`` is the marker of a Python signature: the
    arguments before ``/`` are positional only, those after ``*`` keyword only.
    """

    name: str
    type: str = "Any"
    description: str = ""
    default: str | None = None

    def render(self) -> str:
        """``name: type``, with `` = default`` for an optional argument; a marker as itself."""
        if self.name in (POSITIONAL_ONLY_MARK, KEYWORD_ONLY_MARK):
            return self.name
        text = f"{self.name}: {self.type}"
        return text if self.default is None else f"{text} = {self.default}"


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
    examples: list[ToolExample] = field(default_factory=list)
    docs: str | None = None

    def signature(self, name: str | None = None) -> str:
        """``name(arg: type, ...) -> returns``, optionally under another name (an alias)."""
        args = ", ".join(arg.render() for arg in self.args)
        return f"{name or self.name}({args}) -> {self.returns}"

    @property
    def source(self) -> str:
        """Where the tool comes from, as people read it: the provider's name, and for a
        configured tool source its plugin and origin (``mine (python: tools/mine.py)``)."""
        plugin, origin = self.provider_config.get("plugin"), self.provider_config.get("origin")
        if not plugin:
            return self.provider
        return f"{self.provider} ({plugin}: {origin})" if origin else f"{self.provider} ({plugin})"

    @property
    def where(self) -> str:
        """Where a program's calls of this tool run: ``"child"``, in the sandbox's process for
        the program (the built-in tools; Python tools unless their source says otherwise), or
        ``"kernel"``, in the process that holds the toolbox, each call forwarded to it through
        the sandbox worker (MCP tools, tools registered from Python, ``where = "kernel"``)."""
        if self.provider == BUILTIN_PROVIDER:
            return CHILD
        return KERNEL if self.provider_config.get("where") != CHILD else CHILD

    def describe(self, name: str | None = None) -> str:
        """The signature followed by the description: one line for an inference prompt."""
        line = self.signature(name)
        return f"{line}: {self.description}" if self.description else line
