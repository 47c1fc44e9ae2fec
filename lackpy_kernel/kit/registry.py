"""Kits: named selections of tools, resolved against a toolbox."""

from __future__ import annotations

import errno
import keyword
import os
import re
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from lackpy_kernel.config import CONFIG_DIR
from lackpy_kernel.lang import Grade, compute_grade

from .atomic import atomic_write_text
from .errors import KitError, UnknownKitError
from .frontmatter import FrontmatterFormat
from .spec import ToolSpec
from .toolbox import Toolbox

SHIPPED_KITS_DIR = Path(__file__).resolve().parent / "kits"
KIT_SUFFIX = ".kit"
_KIT_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]*")
KIT_FRONTMATTER = FrontmatterFormat("kit file", KitError, keys=("name", "description", "docs"))
# A kit as callers name it: a kit name (or comma-separated tool names), a list of tool names,
# or a dict of alias -> tool name (or alias -> {"tool": name}); None: the caller's default
# kit (the service's, a session's, a plan's; resolve_kit itself refuses None).
Kit = str | list[str] | dict[str, Any] | None


@dataclass
class ResolvedKit:
    """A kit ready to run: specs and callables by name (or alias), grade, description."""

    tools: dict[str, ToolSpec]
    callables: dict[str, Callable[..., Any]]
    docs: list[str] = field(default_factory=list)

    @cached_property
    def grade(self) -> Grade:
        """The kit's grade: the highest of its tools'."""
        return compute_grade({alias: _grade_fields(spec) for alias, spec in self.tools.items()})

    @cached_property
    def description(self) -> str:
        """One line per tool: its signature and what it does."""
        return "\n".join(spec.describe(alias) for alias, spec in self.tools.items())


@dataclass
class KitFile:
    """The content of a ``.kit`` file."""

    name: str
    tools: list[str]
    description: str | None = None
    docs: list[str] = field(default_factory=list)
    path: Path | None = None


def workspace_kits_dir(workspace: str | os.PathLike[str]) -> Path:
    """The folder of ``workspace``'s own kits: ``.lackpy/kits`` under it."""
    return Path(workspace) / CONFIG_DIR / "kits"


def resolve_kit(
    kit: Kit,
    toolbox: Toolbox,
    kits_dir: str | os.PathLike[str] | None = None,
    extra_tools: list[str] | None = None,
) -> ResolvedKit:
    """Resolve a kit into the tools, callables, grade and description a program runs with.

    ``kit`` is the name of a ``.kit`` file (looked up in ``kits_dir``, a workspace's
    ``workspace_kits_dir(workspace)``, then among the kits shipped with the package; without
    ``kits_dir`` among those only, never in the current directory), a list of tool names,
    or a dict of alias -> tool name (or alias -> ``{"tool": name}``). As on a command line, a
    string may also be a comma-separated list of tools, or one tool's name when no kit file
    has that name. ``extra_tools`` are added under their own names unless the kit already
    has that name.

    Raises UnknownKitError (a FileNotFoundError) for a kit name with no file, UnknownToolError
    for a tool no source registers, KitError for a kit of the wrong form, and
    NotImplementedError for ``None``.
    """
    aliases, docs = _kit_aliases(kit, toolbox, kits_dir)
    for name in _check_names(extra_tools or [], "extra_tools"):
        aliases.setdefault(name, name)
    tools = {alias: toolbox.get(name) for alias, name in aliases.items()}
    callables = {alias: toolbox.resolve(name) for alias, name in aliases.items()}
    return ResolvedKit(tools=tools, callables=callables, docs=docs)


def find_kit_file(name: str, kits_dir: str | os.PathLike[str] | None = None) -> Path:
    """The path of kit ``name``: the workspace's kits first, then the shipped ones."""
    return Path(_locate_kit(name, kits_dir)[0])


_NOT_THERE = {errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP}  # as Path.is_file


def _locate_kit(name: str, kits_dir: str | os.PathLike[str] | None) -> tuple[str, os.stat_result]:
    """Where kit ``name`` is, and its stat (one stat per folder looked in: a kernel
    resolves its kit for every cell). Raises UnknownKitError."""
    stem = check_kit_name(name)
    folders = _kit_folders(kits_dir)
    for folder in folders:
        candidate = os.path.join(folder, stem + KIT_SUFFIX)
        try:
            info = os.stat(candidate)
        except ValueError:  # a NUL in the folder's name: no file has it
            continue
        except OSError as exc:
            if exc.errno not in _NOT_THERE:
                raise
            continue
        if stat.S_ISREG(info.st_mode):
            return candidate, info
    known = ", ".join(sorted(available_kits(kits_dir))) or "none"
    looked = " and ".join(str(folder) for folder in folders)
    raise UnknownKitError(
        f"no kit named {stem!r}: looked for {stem}{KIT_SUFFIX} in {looked}; "
        f"available kits: {known}. Name tools instead (a list, or 'read_file,find_files'), or "
        f"create a kit with `lackpy kit create NAME --tools a,b`."
    )


def available_kits(kits_dir: str | os.PathLike[str] | None = None) -> dict[str, Path]:
    """Kit name -> path for every kit found; a workspace kit hides a shipped one of that name."""
    found: dict[str, Path] = {}
    for folder in reversed(_kit_folders(kits_dir)):
        if folder.is_dir():
            found.update((path.stem, path) for path in sorted(folder.glob(f"*{KIT_SUFFIX}")))
    return dict(sorted(found.items()))


def check_kit_name(name: object) -> str:
    """The kit name without a ``.kit`` suffix; ``KitError`` unless it is a plain name."""
    if not isinstance(name, str):
        raise KitError(f"a kit name must be a str, not {type(name).__name__}")
    stem = name.removesuffix(KIT_SUFFIX)
    if not _KIT_NAME.fullmatch(stem):
        raise KitError(
            f"invalid kit name {name!r}: a kit name is a plain name of letters, digits, '_' "
            f"and '-' (no folders, no '..'); kits live in .lackpy/kits/<name>.kit"
        )
    return stem


def parse_kit_file(path: str | os.PathLike[str]) -> KitFile:
    """Read a ``.kit`` file: optional ``---`` frontmatter, then one tool name per line.

    Raises KitError, naming the file and line, when it cannot be read or parsed.
    """
    path = Path(path)
    front = KIT_FRONTMATTER.read(path)
    tools: list[str] = []
    for number, line in enumerate(front.body, start=front.body_line):
        name = line.split("#", 1)[0].strip()
        if not name:
            continue
        if not _is_identifier(name):
            raise KIT_FRONTMATTER.fail(path, number, f"{name!r} is not a tool name (one per line)")
        if name not in tools:
            tools.append(name)
    meta = front.meta
    docs = [item.strip() for item in meta.get("docs", "").split(",") if item.strip()]
    return KitFile(
        name=meta.get("name") or path.stem,
        tools=tools,
        description=meta.get("description"),
        docs=docs,
        path=path,
    )


def write_kit_file(
    path: str | os.PathLike[str],
    name: str,
    tools: Iterable[str],
    description: str | None = None,
) -> Path:
    """Write a ``.kit`` file atomically (creating its folder) and return its path."""
    check_kit_name(name)
    if isinstance(tools, str):
        raise KitError("tools must be a list of tool names, not a single str")
    tool_names = _check_names(list(tools), "tools")
    for tool in tool_names:
        if not _is_identifier(tool):
            raise KitError(f"{tool!r} is not a valid tool name")
    meta = {"name": name} if description is None else {"name": name, "description": description}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, KIT_FRONTMATTER.format(meta, "".join(f"{t}\n" for t in tool_names)))
    return path


def _kit_aliases(kit: object, toolbox: Toolbox, kits_dir: str | os.PathLike[str] | None
                 ) -> tuple[dict[str, str], list[str]]:
    if kit is None:
        raise NotImplementedError(
            "kit=None (choosing a kit automatically) is not supported yet; pass a kit name, "
            "a list of tool names or a dict of alias -> tool name"
        )
    if isinstance(kit, str) and "," in kit:
        return _kit_aliases([name.strip() for name in kit.split(",") if name.strip()], toolbox, kits_dir)
    if isinstance(kit, str):
        try:
            kit_file = _read_kit_file(*_locate_kit(kit, kits_dir))
        except UnknownKitError:
            if kit in toolbox:
                return {kit: kit}, []
            raise
        return {name: name for name in kit_file.tools}, list(kit_file.docs)
    if isinstance(kit, list | tuple):
        return {name: name for name in _check_names(kit, "kit")}, []
    if isinstance(kit, dict):
        aliases = {_check_alias(alias): _alias_target(alias, value) for alias, value in kit.items()}
        return aliases, []
    raise KitError(
        f"a kit must be a kit name (str), a list of tool names or a dict of alias -> tool name, "
        f"not {type(kit).__name__}"
    )


_read_kit_files: dict[str, tuple[tuple[int, int, int], KitFile]] = {}
MAX_READ_KIT_FILES = 64


def _read_kit_file(path: str, info: os.stat_result) -> KitFile:
    """``parse_kit_file(path)``, parsed again only when its stat ``info`` changes."""
    stamp = (info.st_mtime_ns, info.st_size, info.st_ino)
    known = _read_kit_files.get(path)
    if known is not None and known[0] == stamp:
        return known[1]
    kit_file = parse_kit_file(path)
    if len(_read_kit_files) >= MAX_READ_KIT_FILES:
        _read_kit_files.clear()
    _read_kit_files[path] = (stamp, kit_file)
    return kit_file


def _check_names(names: object, what: str) -> list[str]:
    if isinstance(names, str) or not isinstance(names, list | tuple):
        raise KitError(f"{what} must be a list of tool names, not {type(names).__name__}")
    for name in names:
        if not isinstance(name, str):
            raise KitError(f"{what} must hold tool names (str), not {type(name).__name__}")
    return list(names)


def _check_alias(alias: object) -> str:
    if not isinstance(alias, str):
        raise KitError(f"kit aliases must be str, not {type(alias).__name__}")
    if not _is_identifier(alias):
        raise KitError(f"kit alias {alias!r} is not a valid name for programs to call")
    return alias


def _alias_target(alias: str, value: object) -> str:
    if isinstance(value, dict):
        value = value.get("tool")
    if not isinstance(value, str):
        raise KitError(f"kit entry {alias!r} must be a tool name or {{'tool': name}}, got {value!r}")
    return value


def _grade_fields(spec: ToolSpec) -> dict[str, int]:
    return {"grade_w": spec.grade_w, "effects_ceiling": spec.effects_ceiling}


def _kit_folders(kits_dir: str | os.PathLike[str] | None) -> list[Path]:
    return [SHIPPED_KITS_DIR] if kits_dir is None else [Path(kits_dir), SHIPPED_KITS_DIR]


def _is_identifier(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)
