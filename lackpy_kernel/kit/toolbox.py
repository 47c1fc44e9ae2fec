"""The toolbox: every tool a kit can draw on, with the providers that implement them."""

from __future__ import annotations

import builtins
import keyword
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from lackpy_kernel.errors import ToolSourceError
from lackpy_kernel.lang import ALLOWED_BUILTINS, FORBIDDEN_NAMES

from .errors import UnknownToolError
from .spec import ToolSpec

if TYPE_CHECKING:
    from .sources.base import ToolSource

_BUILTIN_NAMES = frozenset(dir(builtins))
SOURCE_RETRY_SECONDS = 10.0


@runtime_checkable
class ToolProvider(Protocol):
    """What a provider offers. ``resolve_docs(spec) -> Path | None`` is optional."""

    name: str

    def tool_specs(self) -> list[ToolSpec]: ...

    def resolve(self, spec: ToolSpec) -> Callable[..., Any]: ...


class Toolbox:
    """Registry of tool providers and their tool specs.

    Tool sources (``add_source``) load lazily: the first time the toolbox is asked for a
    tool it does not hold, or for the list of all tools, it loads the sources not loaded
    yet, in the order they were added. A source that failed is tried again on a later
    miss, at most every ``source_retry_seconds``.
    """

    def __init__(self) -> None:
        self._specs: dict[str, ToolSpec] = {}
        self._direct: dict[str, Callable[..., Any]] = {}
        self._providers: dict[str, Any] = {}
        self._sources: list[Any] = []
        self._pending: list[Any] = []
        self._retry_at: dict[int, float] = {}
        self._loading = threading.RLock()
        self.source_retry_seconds = SOURCE_RETRY_SECONDS

    def register_provider(self, provider: ToolProvider) -> None:
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
        masking = masking_warning(spec.name)
        if masking is not None:
            warnings.warn(masking, UserWarning, stacklevel=2)
        self._specs[spec.name] = spec
        if fn is None:
            self._direct.pop(spec.name, None)
        else:
            self._direct[spec.name] = fn

    def add_source(self, source: ToolSource) -> None:
        """Add a tool source (see ``lackpy_kernel.kit.sources``), to load when first needed.

        Its tools are refused, with the reason in ``source.status.problems``, when their
        name is taken (a built-in tool, an earlier source's), is one of lackpy's builtins,
        or is a name programs may not use; a name that masks a Python builtin or a standard
        library module registers with a warning, as ``register_tool`` gives.
        """
        self._sources.append(source)
        self._pending.append(source)

    def load_sources(self, *, retry_failed: bool = False) -> None:
        """Load every source not loaded yet now (with ``retry_failed``, also those that
        failed a moment ago)."""
        self._load_sources(None, retry_failed)

    def _load_sources(self, wanted: str | None, retry_failed: bool = False) -> None:
        if not self._pending:
            return
        with self._loading:
            for source in list(self._pending):
                if wanted is not None and wanted in self._specs:
                    return
                if retry_failed or time.monotonic() >= self._retry_at.get(id(source), 0.0):
                    self._load_source(source)

    def _load_source(self, source: ToolSource) -> None:
        try:
            specs = source.load()
        except ToolSourceError:
            self._retry_at[id(source)] = time.monotonic() + self.source_retry_seconds
            return
        self._pending.remove(source)
        self._providers[source.name] = source
        source.status.tools.clear()
        for spec in specs:
            refusal = self._refusal(spec.name)
            if refusal is not None:
                source.status.problems.append(f"tool {spec.name!r} is refused: {refusal}")
                continue
            masking = masking_warning(spec.name)
            if masking is not None:
                warning = f"{source.label}: {masking}"
                warnings.warn(warning, UserWarning, stacklevel=4)
                source.status.warnings.append(warning)
            self._specs[spec.name] = spec
            source.status.tools.append(spec.name)

    def _refusal(self, name: str) -> str | None:
        if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
            return "it is not a name programs can call"
        if name in self._specs:
            return (f"the name is taken by {self._specs[name].source}; rename one of them "
                    "(an MCP source can set prefix)")
        if name in ALLOWED_BUILTINS:
            return f"programs could not tell it from lackpy's builtin {name!r}; rename it"
        if name in FORBIDDEN_NAMES or name.startswith("__"):
            return f"lackpy forbids the name {name!r} in programs; rename it"
        return None

    def __contains__(self, name: object) -> bool:
        if name not in self._specs and isinstance(name, str):
            self._load_sources(name)
        return name in self._specs

    def get(self, name: str) -> ToolSpec:
        """The spec of a registered tool; ``KeyError`` naming close matches when unknown.

        Loads the tool sources not loaded yet when ``name`` is not among the tools held.
        """
        if name not in self._specs and isinstance(name, str):
            self._load_sources(name)
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
        tool: Callable[..., Any] = provider.resolve(spec)
        return tool

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
        """All tool specs, in registration order (loading the tool sources not loaded yet)."""
        self._load_sources(None)
        return list(self._specs.values())

    def format_description(self, tool_names: Iterable[str]) -> str:
        """One line per known tool: ``name(arg: type, ...) -> returns: description``."""
        return "\n".join(self._specs[name].describe() for name in tool_names if name in self._specs)

    def unknown_tool_error(self, name: object) -> UnknownToolError:
        """A ``KeyError`` for an unknown tool that suggests close matches."""
        import difflib  # here: only a mistake needs it

        matches = difflib.get_close_matches(str(name), list(self._specs), n=3)
        hint = f"; did you mean {', '.join(map(repr, matches))}?" if matches else ""
        known = ", ".join(sorted(self._specs)) or "none"
        failed = [source.status.error for source in self._sources if source.status.error]
        if failed:
            known += "; tool sources that failed to load: " + "; ".join(failed)
        refused = [f"{source.label} offers one, but {problem.split(' is refused: ', 1)[1]}"
                   for source in self._sources for problem in source.status.problems
                   if problem.startswith(f"tool {name!r} is refused: ")]
        if refused:
            known += "; " + "; ".join(refused)
        return UnknownToolError(f"unknown tool {name!r}{hint} (registered tools: {known})")


def _check_tool_name(name: object) -> None:
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError(
            f"tool name {name!r} is not a valid Python identifier; "
            f"programs call tools by name, so use letters, digits and '_'"
        )


def masking_warning(name: str) -> str | None:
    """The warning for a tool name that masks a standard library module or a Python builtin
    (small models then write code for the wrong thing), or None."""
    if name in sys.stdlib_module_names:
        masked = "the standard library module"
    elif name in _BUILTIN_NAMES:
        masked = "the Python builtin"
    else:
        return None
    return (f"tool name {name!r} masks {masked} {name!r}; small models then write code for the "
            f"wrong thing. Consider a more specific name.")


def _docs_under(docs_root: Path, relative: str) -> Path | None:
    root = docs_root.resolve()
    candidate = (root / relative).resolve()
    if not candidate.is_relative_to(root) or not candidate.is_file():
        return None
    return candidate
