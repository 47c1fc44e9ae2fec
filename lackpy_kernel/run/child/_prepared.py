"""What the worker prepares before it forks, for every child it forks afterwards to find
ready: the Python tool modules (``PythonTools``), the kits given by tool names
(``named_kits``, ``preresolve``), and the walls (``wall_plan``)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lackpy_kernel.errors import ToolSourceError
from lackpy_kernel.kit import ResolvedKit, builtin_toolbox, resolve_kit
from lackpy_kernel.kit.staging import make_stages

from ..protocol import PythonLoad, RunRequest
from ..runner import signature_of
from ..walls import WallPlan

if TYPE_CHECKING:
    from lackpy_kernel.kit.sources import PythonToolSource

MAX_NAMED_KITS = 16
# provider, path, module, content, workspace
_LoadKey = tuple[str, str | None, str | None, str, str]


class PythonTools:
    """The Python tool modules a worker imported for its children: each once, outside the
    walls (as the kernel does), so that every child forked afterwards has its functions."""

    def __init__(self) -> None:
        self._sources: dict[_LoadKey, PythonToolSource | str] = {}  # a source, or why it failed
        self._modules: dict[str, str] = {}  # module name -> the content it was imported with

    def load(self, request: RunRequest) -> None:
        """Import the modules of the request's Python tools not imported yet; a module
        imported by name whose content changed since is imported again (a module given by
        its ``path`` is read afresh each time)."""
        for load in _loads(request):
            key = _load_key(load, request.workspace)
            if key not in self._sources:
                _extend_import_path(request.import_path)
                if load.module is not None:
                    if self._modules.get(load.module, load.content) != load.content:
                        sys.modules.pop(load.module, None)  # its new code, not the imported
                    self._modules[load.module] = load.content
                self._sources[key] = _import_source(load, request.workspace)

    def has_tried(self, request: RunRequest) -> bool:
        """Whether every module the request's Python tools need was imported (or failed)."""
        return all(_load_key(load, request.workspace) in self._sources
                   for load in _loads(request))

    def function(self, info: PythonLoad, workspace: str) -> Callable[..., Any]:
        """The tool ``info`` describes. Raises ToolSourceError saying why it is not there."""
        source = self._sources.get(_load_key(info, workspace))
        if source is None or isinstance(source, str):
            why = source or "the sandbox's worker has not imported its module"
            raise ToolSourceError(
                f"{why}; the sandbox's worker could not load it for programs. A module that "
                "needs the kernel's process (its state, threads or connections made as it "
                "loads) should say where = \"kernel\" in its [tools.providers."
                f"{info.provider}] table")
        return source.tool(info.function)


def _loads(request: RunRequest) -> list[PythonLoad]:
    """Where the request's tools that run in the program's process are imported from."""
    return [described.load for described in request.tools.values() if described.load is not None]


def _load_key(info: PythonLoad, workspace: str) -> _LoadKey:
    return (info.provider, info.path, info.module, info.content, workspace)


def _extend_import_path(entries: list[str]) -> None:
    """Add the kernel's import path after the worker's (which lacks site-packages: -S)."""
    sys.path.extend(entry for entry in dict.fromkeys(entries) if entry not in sys.path)


def _import_source(info: PythonLoad, workspace: str) -> PythonToolSource | str:
    from lackpy_kernel.kit.sources import PythonToolSource  # noqa: PLC0415 - only when a kit has one

    where = {"path": info.path} if info.path else {"module": info.module}
    source = PythonToolSource(info.provider, {"plugin": "python", **where}, workspace)
    try:
        source.module()
    except ToolSourceError as exc:
        return str(exc)
    return source


class NamedKits:
    """Kits given as tool names, each resolved once, in the worker (``preresolve``) or the
    child: a child that builds none of it writes to far fewer of the pages it shares with the
    worker. (A kit file's name is resolved for each program: the file may change.)"""

    def __init__(self) -> None:
        self._kits: dict[str, ResolvedKit] = {}

    def get(self, request: RunRequest) -> ResolvedKit:
        """The request's kit, resolved now unless it was before. Raises KitError."""
        key = repr((request.kit, request.protected, request.workspace, request.kits_dir))
        if key not in self._kits:
            if len(self._kits) >= MAX_NAMED_KITS:
                self._kits.clear()
            self._kits[key] = resolve(request)
        return self._kits[key]

    def __iter__(self) -> Iterator[ResolvedKit]:
        return iter(list(self._kits.values()))

    def clear(self) -> None:
        """Forget every kit resolved."""
        self._kits.clear()


named_kits = NamedKits()  # the worker's, which every child it forks inherits


def resolve(request: RunRequest) -> ResolvedKit:
    """The request's kit resolved against the built-in tools (the write tools refusing its
    protected files). Raises KitError."""
    toolbox = builtin_toolbox(Path(request.workspace), request.protected)
    return resolve_kit(request.kit, toolbox, kits_dir=request.kits_dir)


def preresolve(like: RunRequest) -> None:
    """In the worker, before a fork: resolve the kit of programs ``like`` this one, and read
    its tools' signatures, when it names its tools. A kit that fails is left to the child,
    which reports it."""
    if isinstance(like.kit, (list, dict)):
        with contextlib.suppress(Exception):
            for tool in named_kits.get(like).callables.values():
                signature_of(tool)  # cached: the children find it read


def wall_plan(like: RunRequest) -> WallPlan:
    """The OS walls (``walls``) for programs ``like`` this request: its workspace and kits
    folder readable, the folder of its stages (made now) writable by each child's own."""
    stages = make_stages(os.path.realpath(like.workspace))
    return WallPlan.prepare(like.workspace, like.readable(), stages)
