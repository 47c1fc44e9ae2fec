"""The toolbox: every tool a kit can draw on, with the providers that implement them."""

from __future__ import annotations

import builtins
import difflib
import keyword
import os
import sys
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .errors import UnknownToolError
from .spec import ToolSpec

_BUILTIN_NAMES = frozenset(dir(builtins))


@runtime_checkable
class ToolProvider(Protocol):
    """What a provider offers. ``resolve_docs(spec) -> Path | None`` is optional."""

    name: str

    def tool_specs(self) -> list[ToolSpec]: ...

    def resolve(self, spec: ToolSpec) -> Callable[..., Any]: ...


class Toolbox:
    """Registry of tool providers and their tool specs."""

    def __init__(self) -> None:
        self._specs: dict[str, ToolSpec] = {}
        self._direct: dict[str, Callable[..., Any]] = {}
        self._providers: dict[str, Any] = {}

    def register_provider(self, provider: Any) -> None:
        """Register a provider (``name``, ``tool_specs()``, ``resolve(spec)``) and its tools."""
        name = getattr(provider, "name", None)
        if not isinstance(name, str) or not name:
            raise TypeError(f"a tool provider needs a non-empty str `name`; got {provider!r}")
        if not callable(getattr(provider, "resolve", None)):
            raise TypeError(f"tool provider {name!r} has no resolve(spec) method")
        self._providers[name] = provider
        tool_specs = getattr(provider, "tool_specs", None)
        for spec in tool_specs() if callable(tool_specs) else []:
            self.register_tool(spec)

    def register_tool(self, spec: ToolSpec, fn: Callable[..., Any] | None = None) -> None:
        """Register one tool, replacing any tool of the same name.

        With ``fn`` the tool calls it directly; without, its provider resolves it on demand.
        Warns (``UserWarning``) when the name masks a stdlib module or a Python builtin,
        which leads small models to write wrong code.
        """
        _check_tool_name(spec.name)
        if fn is not None and not callable(fn):
            raise TypeError(f"fn for tool {spec.name!r} must be callable, not {type(fn).__name__}")
        _warn_if_masking(spec.name)
        self._specs[spec.name] = spec
        if fn is None:
            self._direct.pop(spec.name, None)
        else:
            self._direct[spec.name] = fn

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def get(self, name: str) -> ToolSpec:
        """The spec of a registered tool; ``KeyError`` naming close matches when unknown."""
        try:
            return self._specs[name]
        except (KeyError, TypeError):
            raise self.unknown_tool_error(name) from None

    def resolve(self, name: str) -> Callable[..., Any]:
        """The callable that implements tool ``name``."""
        spec = self.get(name)
        if name in self._direct:
            return self._direct[name]
        provider = self._providers.get(spec.provider)
        if provider is None:
            raise UnknownToolError(
                f"tool {name!r} comes from provider {spec.provider!r}, which is not registered; "
                f"register it with Toolbox.register_provider() or pass fn= to register_tool()"
            )
        return provider.resolve(spec)

    def resolve_docs(self, name: str, docs_root: str | os.PathLike[str]) -> Path | None:
        """The absolute path of tool ``name``'s markdown docs, or None when it has none.

        The tool's provider resolves it when it can; otherwise ``spec.docs`` is taken relative
        to ``docs_root`` (and must stay inside it).
        """
        spec = self.get(name)
        if not spec.docs:
            return None
        provider_resolve = getattr(self._providers.get(spec.provider), "resolve_docs", None)
        if callable(provider_resolve):
            found = provider_resolve(spec)
            if found is not None:
                return Path(found)
        return _docs_under(Path(docs_root), spec.docs)

    def docs_index(self) -> dict[str, str]:
        """Tool name -> docs path (relative) for every tool that has docs."""
        return {name: spec.docs for name, spec in self._specs.items() if spec.docs}

    def list_tools(self) -> list[ToolSpec]:
        """All tool specs, in registration order."""
        return list(self._specs.values())

    def format_description(self, tool_names: Iterable[str]) -> str:
        """One line per known tool: ``name(arg: type, ...) -> returns: description``."""
        return "\n".join(self._specs[name].describe() for name in tool_names if name in self._specs)

    def unknown_tool_error(self, name: object) -> UnknownToolError:
        """A ``KeyError`` for an unknown tool that suggests close matches."""
        matches = difflib.get_close_matches(str(name), list(self._specs), n=3)
        hint = f"; did you mean {', '.join(map(repr, matches))}?" if matches else ""
        known = ", ".join(sorted(self._specs)) or "none"
        return UnknownToolError(f"unknown tool {name!r}{hint} (registered tools: {known})")


def _check_tool_name(name: object) -> None:
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError(
            f"tool name {name!r} is not a valid Python identifier; "
            f"programs call tools by name, so use letters, digits and '_'"
        )


def _warn_if_masking(name: str) -> None:
    if name in sys.stdlib_module_names:
        masked = "the standard library module"
    elif name in _BUILTIN_NAMES:
        masked = "the Python builtin"
    else:
        return
    warnings.warn(
        f"tool name {name!r} masks {masked} {name!r}; small models then write code for the "
        f"wrong thing. Consider a more specific name.",
        UserWarning,
        stacklevel=3,
    )


def _docs_under(docs_root: Path, relative: str) -> Path | None:
    root = docs_root.resolve()
    candidate = (root / relative).resolve()
    if not candidate.is_relative_to(root) or not candidate.is_file():
        return None
    return candidate
