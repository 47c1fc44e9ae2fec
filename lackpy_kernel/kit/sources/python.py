"""``plugin = "python"``: the functions of a Python module as tools.

The module is ``module = "pkg.mod"`` (importable) or ``path = "tools/mytools.py"``
(a file inside the workspace, outside ``.lackpy/``). Its tools are the functions
named in ``functions``, or by default its public functions that have a docstring
and are defined in it (not imported into it). Each becomes a ToolSpec described
from its signature, annotations and docstring; its results must be plain data.

The module's files in the workspace (the file, the packages on its way, what it
imports from the workspace when it loads, and what its tools import when they run in
this process), and their folders, join ``protected``: its code runs in lackpy's own
processes, so programs must not rewrite it.
"""

from __future__ import annotations

import functools
import importlib
import importlib.machinery
import importlib.util
import inspect
import os
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

from lackpy_kernel.config import CONFIG_DIR
from lackpy_kernel.errors import ToolSourceError

from ..spec import ToolSpec
from .base import ToolSource, plain_results
from .describe import describe_function

PLUGIN = "python"
DEFAULT_GRADE = "write"  # a function may do anything, unless the config says it only reads
DEFAULT_WHERE = "child"
MODULE_PREFIX = "lackpy_tools_"


class PythonToolSource(ToolSource):
    """Tools from a Python module (settings ``module`` or ``path``, ``functions``, ``grade``,
    ``where`` and ``overrides``)."""

    plugin = PLUGIN

    def __init__(self, name: str, settings: dict[str, Any], workspace: str | os.PathLike[str],
                 protected: dict[str, str] | None = None) -> None:
        self.workspace = Path(os.path.realpath(workspace))
        super().__init__(name, settings, protected)
        self._functions: dict[str, Callable[..., Any]] = {}
        self._module: ModuleType | None = None
        self.protect(str(self.workspace), self._code_files())

    @property
    def origin(self) -> str:
        return str(self.settings.get("path") or self.settings.get("module") or "?")

    def _load(self) -> list[ToolSpec]:
        self._functions = {}
        module = self.module()
        chosen = self._chosen_functions(module)
        specs = []
        for function_name, fn in chosen.items():
            try:
                described = describe_function(fn)
            except ToolSourceError as exc:
                self.status.problems.append(f"function {function_name!r} cannot be a tool: {exc}")
                continue
            specs.append(ToolSpec(
                name=function_name, provider=self.name, provider_config=self._config_of(
                    function_name), description=described.description, args=described.args,
                returns=described.returns, **self.grade_of(function_name, DEFAULT_GRADE)))
            self._functions[function_name] = fn
        self.status.problems.extend(self.unused_overrides(set(chosen)))
        return specs

    def resolve(self, spec: ToolSpec) -> Callable[..., Any]:
        """The function behind ``spec``, refusing results that are not plain data."""
        fn = self._functions.get(spec.provider_config.get("function", spec.name))
        if fn is None:
            raise self.error(f"has no tool {spec.name!r}")
        return self._watching_imports(plain_results(fn, spec.name, self.label))

    def _watching_imports(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn``, protecting what it imports from the workspace (a helper imported inside a
        function, from a folder the module put on ``sys.path``) once it returns."""

        @functools.wraps(fn)
        def watched(*args: Any, **kwargs: Any) -> Any:
            before = len(sys.modules)
            try:
                return fn(*args, **kwargs)
            finally:
                if len(sys.modules) != before:
                    self.protect(str(self.workspace), _files_of(list(sys.modules.values())))

        return watched

    def module(self) -> ModuleType:
        """The module, imported the first time it is asked for (and again after a failure).

        Raises ToolSourceError when it cannot be imported.
        """
        if self._module is None:
            before = set(sys.modules)
            self._module = self._import()
            self.protect(str(self.workspace), _files_of(sys.modules.get(name)
                                                        for name in set(sys.modules) - before))
        return self._module

    def tool(self, function_name: str) -> Callable[..., Any]:
        """The module's function ``function_name`` as a tool (results checked to be plain
        data), without loading the source's specs: how a sandbox process that imported the
        module itself gets it. Raises ToolSourceError."""
        fn = getattr(self.module(), function_name, None)
        if not callable(fn):
            raise self.error(f"the module has no function {function_name!r}")
        return plain_results(fn, function_name, self.label)

    def timeout_of(self, function_name: str) -> float | None:
        """Seconds one call of ``function_name`` may take (``timeout``), None for no limit."""
        timeout = self.overrides.get(function_name, {}).get("timeout") or \
            self.settings.get("timeout")
        return float(timeout) if timeout else None

    def _config_of(self, function_name: str) -> dict[str, Any]:
        where = self.overrides.get(function_name, {}).get("where") or \
            self.settings.get("where") or DEFAULT_WHERE
        return {"plugin": PLUGIN, "origin": self.origin, "function": function_name,
                "module": self.settings.get("module"), "path": self._real_path_text(),
                "where": where, "timeout": self.timeout_of(function_name)}

    def _code_files(self) -> list[str]:
        """The files importing the module runs first, found without running any: the file
        of ``path``, or each package on the way to ``module`` and the module itself."""
        if self.settings.get("path"):
            return [str(self.workspace / str(self.settings["path"]))]
        module_name = self.settings.get("module")
        return _located_files(module_name) if isinstance(module_name, str) else []

    # -- importing ----------------------------------------------------------------

    def _import(self) -> ModuleType:
        if self.settings.get("path"):
            return self._import_path(self._checked_path())
        module_name = self.settings.get("module")
        if not module_name:
            raise self.error("set either module = \"pkg.mod\" or path = \"tools/file.py\"")
        try:
            return importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name and module_name.startswith(exc.name):
                raise self.error(f"there is no module {module_name!r} to import; install its "
                                 "package, or use path = \"...\" for a file in the workspace"
                                 ) from None
            raise self._import_error(exc) from None
        except (Exception, SystemExit) as exc:  # the module's own code failed, in any way
            raise self._import_error(exc) from None

    def _checked_path(self) -> Path:
        text = str(self.settings["path"])
        real = Path(os.path.realpath(self.workspace / text))
        if not real.is_relative_to(self.workspace):
            raise self.error(f"path {text!r} is outside the workspace {self.workspace}; put the "
                             "module inside the workspace, or install it and use module = ...")
        if real.relative_to(self.workspace).parts[:1] == (CONFIG_DIR,) or \
                real.is_relative_to(Path(os.path.realpath(self.workspace / CONFIG_DIR))):
            raise self.error(f"path {text!r} is inside {CONFIG_DIR}/, which holds lackpy's own "
                             "files; put tool modules elsewhere in the workspace (tools/...)")
        if real.suffix != ".py" or not real.is_file():
            raise self.error(f"path {text!r} is not a Python file (.py) in the workspace")
        return real

    def _real_path_text(self) -> str | None:
        if not self.settings.get("path"):
            return None
        return os.path.realpath(self.workspace / str(self.settings["path"]))

    def _import_path(self, path: Path) -> ModuleType:
        module_name = MODULE_PREFIX + re.sub(r"\W", "_", self.name)
        spec = importlib.util.spec_from_file_location(module_name, path)
        if spec is None or spec.loader is None:
            raise self.error(f"{path} cannot be loaded as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module  # dataclasses and typing look modules up by name
        try:
            # Compiled here rather than by the loader: no __pycache__ is written into the
            # workspace, and a file fixed a moment ago is never read from a stale one.
            exec(compile(path.read_bytes(), str(path), "exec"), module.__dict__)
        except (Exception, SystemExit) as exc:  # the module's own code failed, in any way
            sys.modules.pop(module_name, None)
            raise self._import_error(exc) from None
        return module

    def _import_error(self, exc: BaseException) -> ToolSourceError:
        where = ""
        if isinstance(exc, SyntaxError) and exc.lineno:
            where = f" (line {exc.lineno})"
        return self.error(f"the module failed to import: {type(exc).__name__}: {exc}{where}; "
                          "fix it, then run `lackpy toolbox --check`")

    # -- choosing functions -----------------------------------------------------------

    def _chosen_functions(self, module: ModuleType) -> dict[str, Callable[..., Any]]:
        listed = self.settings.get("functions")
        if listed is None:
            return {name: fn for name, fn in vars(module).items() if _is_default_tool(name, fn,
                                                                                   module)}
        chosen = {}
        for name in listed:
            fn = getattr(module, name, None) if isinstance(name, str) else None
            if fn is None:
                self.status.problems.append(f"functions names {name!r}, which the module "
                                            "does not define")
            else:
                chosen[name] = fn
        return chosen


def _located_files(module_name: str) -> list[str]:
    """The files of ``module_name`` and the packages on its way, as the import system would
    find them (no module's code runs); those already imported are known by their ``__file__``."""
    files: list[str] = []
    search: Any = None
    parts = module_name.split(".")
    for index in range(len(parts)):
        name = ".".join(parts[:index + 1])
        try:
            loaded = sys.modules.get(name)
            spec = loaded.__spec__ if loaded is not None else \
                importlib.machinery.PathFinder.find_spec(name, search)
        except (ImportError, ValueError, AttributeError):
            spec = None
        if spec is None:
            break
        if spec.has_location and spec.origin:
            files.append(spec.origin)
        search = spec.submodule_search_locations
        if search is None:
            break
    return files


def _files_of(modules: Iterable[ModuleType | None]) -> list[str]:
    files = (getattr(module, "__file__", None) for module in modules)
    return [file for file in files if isinstance(file, str)]


def _is_default_tool(name: str, value: object, module: ModuleType) -> bool:
    return (inspect.isfunction(value) and not name.startswith("_")
            and value.__module__ == module.__name__ and bool(inspect.getdoc(value)))
