"""Where the cursor stands in a cell: the calls whose parentheses hold it, which argument
it is in, and the string being typed there. Completion and Shift-Tab read this; it
scans the text before the cursor once, so an unfinished cell is fine."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from lackpy_kernel.kit import Workspace, WorkspaceError

PATH_ARGUMENTS = frozenset({"path", "pattern"})  # the arguments a file tool takes a path in
PATHS_SHOWN = 200
_NAME_BEFORE = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s*$")
_KEYWORD = re.compile(r"^\s*([A-Za-z_]\w*)\s*=(?!=)")
_STRING_PREFIX = re.compile(r"[rRbBuUfF]{0,2}$")


@dataclass
class Call:
    """A call the cursor is inside: the called name (None for a method or an expression),
    the argument the cursor is in (``index`` among the positional ones, or ``keyword``),
    and where the string literal the cursor is typing starts, when it is the argument."""

    name: str | None
    index: int = 0
    keyword: str | None = None
    string_start: int | None = None

    def argument(self, names: list[str]) -> str | None:
        """The name of the argument the cursor is in, given the callee's argument names."""
        if self.keyword is not None:
            return self.keyword
        return names[self.index] if self.index < len(names) else None


@dataclass
class _Open:
    bracket: str
    position: int
    commas: int = 0
    last_comma: int = -1


def enclosing_calls(code: str, cursor: int) -> list[Call]:
    """The calls whose parentheses hold ``cursor``, innermost first."""
    before = code[:cursor]
    stack, string_start = _scan(before)
    calls = []
    for depth, opened in enumerate(reversed(stack)):
        if opened.bracket != "(":
            continue
        found = _NAME_BEFORE.search(before[:opened.position])
        argument_start = max(opened.position, opened.last_comma) + 1
        argument = before[argument_start:string_start if string_start is not None else cursor]
        keyword = _KEYWORD.match(argument)
        call = Call(found.group(1) if found else None, opened.commas,
                    keyword.group(1) if keyword else None)
        if depth == 0 and string_start is not None:
            rest = argument[keyword.end():] if keyword else argument
            if _STRING_PREFIX.fullmatch(rest.strip().rstrip("'\"")):
                call.string_start = string_start
        calls.append(call)
    return calls


def _scan(text: str) -> tuple[list[_Open], int | None]:
    """The brackets still open at the end of ``text``, and where the string it ends inside
    starts (after its quotes), or None."""
    stack: list[_Open] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "#":
            end = text.find("\n", i)
            if end < 0:
                break
            i = end
        elif char in "'\"":
            quote = text[i:i + 3] if text.startswith(char * 3, i) else char
            start = i + len(quote)
            closed = _string_end(text, start, quote)
            if closed is None:
                return stack, start
            i = closed
            continue
        elif char in "([{":
            stack.append(_Open(char, i))
        elif char in ")]}" and stack:
            stack.pop()
        elif char == "," and stack:
            stack[-1].commas += 1
            stack[-1].last_comma = i
        i += 1
    return stack, None


def _string_end(text: str, start: int, quote: str) -> int | None:
    """Just past the string's closing quote, or None when ``text`` ends inside it."""
    i = start
    while i < len(text):
        if text[i] == "\\":
            i += 2
            continue
        if text.startswith(quote, i):
            return i + len(quote)
        if text[i] == "\n" and len(quote) == 1:
            return i  # an unclosed one-line string ends at the line's end
        i += 1
    return None


def workspace_paths(workspace: Workspace, typed: str) -> list[str]:
    """Workspace paths that complete ``typed`` (a folder's name ends with ``/``); hidden
    names only when ``typed`` asks for them, nothing outside the workspace."""
    folder, _, partial = typed.rpartition("/")
    try:
        real = workspace.resolve(folder or ".")
        entries = sorted(os.scandir(real), key=lambda entry: entry.name)
    except (WorkspaceError, OSError):
        return []
    found = []
    for entry in entries:
        if not entry.name.startswith(partial) or (entry.name.startswith(".") and
                                                  not partial.startswith(".")):
            continue
        name = entry.name + ("/" if entry.is_dir() else "")
        found.append(f"{folder}/{name}" if folder else name)
        if len(found) == PATHS_SHOWN:
            break
    return found


_HEADING = re.compile(r"^#{1,6}\s+")
_FENCE = re.compile(r"^\s*```")
_INLINE = re.compile(r"`([^`\n]+)`|\*\*([^*\n]+)\*\*")


def doc_bundle(name: str, signature: str, doc: str) -> dict[str, str]:
    """Shift-Tab's bundle for a tool with a Markdown ``doc``: ``text/plain`` a tooltip shows
    as it is (the signature once, no heading marks, backticks or fences, code indented,
    lists as written) and ``text/markdown`` for a front end that renders it."""
    lines = doc.strip("\n").split("\n")
    if lines and _HEADING.match(lines[0]) and _HEADING.sub("", lines[0]).startswith(f"{name}("):
        lines = lines[1:]  # the doc's title is the signature, shown once above it
    body = "\n".join(lines).strip("\n")
    return {"text/plain": f"{signature}\n\n{_plain(body.splitlines())}",
            "text/markdown": f"```python\n{signature}\n```\n\n{body}"}


def _plain(lines: list[str]) -> str:
    shown, in_code = [], False
    for line in lines:
        if _FENCE.match(line):
            in_code = not in_code
        elif in_code:
            shown.append(f"    {line}" if line else "")
        else:
            shown.append(_INLINE.sub(lambda found: found.group(1) or found.group(2),
                                     _HEADING.sub("", line)))
    return "\n".join(shown)
