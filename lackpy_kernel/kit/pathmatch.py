"""Glob patterns matched against the workspace tree without ever leaving it.

Semantics follow ``glob``: ``*`` and ``?`` stay within one path segment, ``[...]`` is a
character class, a ``**`` segment spans any number of folders, and wildcards do not match
names starting with ``.`` unless the pattern segment does. Symlinked folders are never
descended into (so a link out of the workspace, or a link loop, leads nowhere); a symlinked
file is listed only when its target is a regular file inside the workspace. ``.git`` folders
and the workspace's ``.lackpy`` folder are never searched.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

from lackpy_kernel.config import CONFIG_DIR

from .errors import TooManyMatchesError, WorkspaceError
from .workspace import Workspace

_MAGIC = re.compile(r"[*?\[]")
_DRIVE = re.compile(r"^[A-Za-z]:")


@dataclass(frozen=True)
class _Segment:
    text: str
    recursive: bool
    regex: re.Pattern[str] | None

    def matches(self, name: str) -> bool:
        if self.regex is None:
            return name == self.text
        if name.startswith(".") and not self.text.startswith("."):
            return False
        return self.regex.match(name) is not None


def compile_pattern(pattern: object) -> list[_Segment]:
    """Split a workspace-relative glob pattern into segments; ``WorkspaceError`` if it leaves."""
    if not isinstance(pattern, str):
        raise TypeError(f"a pattern must be a str, not {type(pattern).__name__}")
    if not pattern or "\0" in pattern:
        raise ValueError(f"invalid pattern {pattern!r}: give a glob such as '**/*.py'")
    if pattern.startswith(("/", "\\")) or _DRIVE.match(pattern):
        raise WorkspaceError(
            f"pattern {pattern!r} is absolute: patterns are relative to the workspace root; "
            f"write e.g. 'src/**/*.py'"
        )
    parts = [part for part in pattern.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise WorkspaceError(
            f"pattern {pattern!r} contains '..': patterns must stay inside the workspace; "
            f"write them relative to the workspace root"
        )
    return _segments(parts, pattern)


def match_files(workspace: Workspace, segments: list[_Segment], limit: int | None) -> list[str]:
    """Sorted workspace-relative posix paths of the files matching ``segments``.

    Raises ``TooManyMatchesError`` when more than ``limit`` files match (None: no limit).
    """
    found: set[str] = set()
    seen: set[tuple[str, int]] = set()
    for path in _walk(workspace, str(workspace.root), segments, seen, workspace.stage_roots()):
        found.add(path)
        if limit is not None and len(found) > limit:
            raise TooManyMatchesError(f"more than {limit} files match")
    return sorted(found)


def _segments(parts: list[str], pattern: str) -> list[_Segment]:
    segments: list[_Segment] = []
    for part in parts:
        if part == "**":
            if not segments or not segments[-1].recursive:
                segments.append(_Segment(part, True, None))
        elif "**" in part:
            raise ValueError(f"invalid pattern {pattern!r}: '**' must be a whole path segment")
        else:
            regex = re.compile(fnmatch.translate(part)) if _MAGIC.search(part) else None
            segments.append(_Segment(part, False, regex))
    if not segments:
        raise ValueError(f"pattern {pattern!r} names no files; give a glob such as '**/*.py'")
    if segments[-1].recursive:  # a trailing "**" means every file below
        segments.append(_Segment("*", False, re.compile(fnmatch.translate("*"))))
    return segments


def _walk(
    workspace: Workspace, root: str, segments: list[_Segment], seen: set[tuple[str, int]],
    stages: list[str],
) -> Iterator[str]:
    # The stages are never searched: reached through a folder that .lackpy links to, either.
    # A stack, not recursion: a program can make folders nested deeper than Python recurses.
    stack: list[tuple[str, tuple[str, ...], int]] = [(root, (), 0)]
    while stack:
        directory, relative, index = stack.pop()
        # Several "**" can reach the same folder at the same point of the pattern: walk it once.
        if (directory, index) in seen:
            continue
        seen.add((directory, index))
        segment, is_last = segments[index], index == len(segments) - 1
        if segment.recursive:  # "**" matching no folder at all
            stack.append((directory, relative, index + 1))
        for entry in _entries(directory, relative):
            if segment.recursive:
                if not entry.name.startswith(".") and _is_real_dir(entry) \
                        and entry.path.casefold() not in stages:
                    stack.append((entry.path, (*relative, entry.name), index))
            elif segment.matches(entry.name):
                if is_last:
                    if _is_file_inside(workspace, entry):
                        yield "/".join((*relative, entry.name))
                elif _is_real_dir(entry) and entry.path.casefold() not in stages:
                    stack.append((entry.path, (*relative, entry.name), index + 1))


def _entries(directory: str, relative: tuple[str, ...]) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as entries:
            return [entry for entry in entries if not _excluded(entry.name, relative)]
    except OSError:  # unreadable or vanished folders are skipped
        return []


def _excluded(name: str, relative: tuple[str, ...]) -> bool:
    if name == ".git":
        return True
    return not relative and name.casefold() == CONFIG_DIR


def _is_real_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _is_file_inside(workspace: Workspace, entry: os.DirEntry[str]) -> bool:
    try:
        if not entry.is_symlink():
            return entry.is_file(follow_symlinks=False)
        target = os.path.realpath(entry.path)
        return workspace.contains(target) and os.path.isfile(target)
    except (OSError, RecursionError):
        return False
