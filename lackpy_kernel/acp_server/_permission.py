"""Writes with permission: a program's file changes, staged while it ran, are shown as ACP
diff content on its tool call and committed only when ``session/request_permission``
says yes (``[sandbox] approve = "write"``, the default). A refusal, a cancel or a client
that cannot be asked leaves every file as it was. A call of a tool graded write that runs
in the kernel (an MCP server's) acts beyond the files: it is asked for the same way before
it runs (kind ``other``, the call and its arguments as text), and a refusal fails it."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from acp import Client, RequestError, text_block, tool_content, tool_diff_content
from acp.schema import (
    ContentToolCallContent,
    FileEditToolCallContent,
    PermissionOption,
    ToolCallUpdate,
)

from lackpy_kernel.errors import ChangeRefusedError
from lackpy_kernel.kit.changes import Change, FileChange

APPLY, DISCARD = "apply", "discard"
OPTIONS = [PermissionOption(option_id=APPLY, name="Apply the changes", kind="allow_once"),
           PermissionOption(option_id=DISCARD, name="Discard them", kind="reject_once")]
CALL_OPTIONS = [PermissionOption(option_id=APPLY, name="Run this call", kind="allow_once"),
                PermissionOption(option_id=DISCARD, name="Do not run it", kind="reject_once")]
Content = ContentToolCallContent | FileEditToolCallContent
DIFF_MARKS = ("@", "+", "-", " ")  # how a unified diff's lines begin (hunk, added, removed, kept)


class PermissionAsker:
    """The session's approver for a prompt's tool calls: asks the client about a change on
    the tool call ``call_id()`` names when asked (the program's, or the agent's call that
    made the change), showing ``shown`` and the change's diff; True applies the change.
    ``diffs`` keeps what was shown for each call, for its final content."""

    def __init__(self, client: Client | None, session_id: str, workspace: Path,
                 call_id: Callable[[], str], shown: Sequence[Content] = ()) -> None:
        self._client, self._session_id, self._workspace = client, session_id, workspace
        self._call_id, self._shown = call_id, list(shown)
        self._asking: set[asyncio.Task[Any]] = set()
        self.diffs: dict[str, list[Content]] = {}

    def stop(self) -> None:
        """Stop asking (the prompt was cancelled): the changes are refused, even where the
        sandbox asks from a thread of its own and the client never answers."""
        for task in list(self._asking):
            task.cancel()

    async def __call__(self, change: Change) -> bool:
        """Whether the person applies ``change`` (or, for a call, lets it run); raises
        ChangeRefusedError when the client cannot be asked (the change is refused, saying
        why)."""
        call, options = self._question(change)
        if self._client is None:
            raise ChangeRefusedError("no client is connected to ask")
        current = asyncio.current_task()
        asking = {current} if current is not None else set()
        self._asking |= asking
        try:
            response = await self._client.request_permission(
                session_id=self._session_id, tool_call=call, options=options)
        except RequestError as exc:
            raise ChangeRefusedError(_cannot_ask(change, exc)) from None
        finally:
            self._asking -= asking
        outcome = response.outcome
        return outcome.outcome == "selected" and getattr(outcome, "option_id", "") == APPLY

    def _question(self, change: Change) -> tuple[ToolCallUpdate, list[PermissionOption]]:
        """The tool call update that asks about ``change`` on the current call, and its
        options: file changes as diffs (kept in ``diffs``), a tool's call as the call with
        its arguments (bounded) as text."""
        call_id = self._call_id()
        change = change.in_full()  # the client is sent all of it, and may fold it
        if not change.complete:
            raise ChangeRefusedError("the change is too large to send whole ("
                                     + "; ".join(change.unseen()) + "), so it was not applied")
        if change.call is not None:
            return ToolCallUpdate(
                tool_call_id=call_id, title=f"call {change.call.name}", kind="other",
                content=[*self._shown, tool_content(text_block(change.to_text()))]), CALL_OPTIONS
        diff = self.diffs[call_id] = diff_content(self._workspace, change)
        warned = [tool_content(text_block(change.warnings()))] if change.warnings() else []
        return ToolCallUpdate(tool_call_id=call_id, title=change.summary(), kind="edit",
                              content=[*self._shown, *warned, *diff]), OPTIONS


def _cannot_ask(change: Change, exc: RequestError) -> str:
    """Why ``change`` is refused when the client answered the question with ``exc``."""
    asked = f"(session/request_permission: {exc})"
    if change.call is None:
        return f"this client cannot be asked to approve file changes {asked}; nothing was written"
    return f"this client cannot be asked to allow a call of {change.call.name} {asked}"


def diff_content(workspace: Path, change: Change) -> list[Content]:
    """``change`` as tool call content: a diff for each file shown line by line (its
    changed lines and their context), a line of text for one summarized or cut short, with
    the rows a file shows that are not a diff (binary data in hex) below it."""
    content: list[Content] = []
    for file in change.files:
        is_diff = all(line[:1] in DIFF_MARKS for line in file.lines)
        if file.lines and is_diff:
            old, new = _sides(file)
            content.append(tool_diff_content(str(workspace / file.path), new, old))
        if (file.note or file.omitted or not file.lines or not is_diff or file.runs_code
                or file.executable):
            more = f"; {file.omitted} more lines not shown" if file.omitted else ""
            rows = "" if is_diff else "".join(f"\n{line}" for line in file.lines)
            content.append(tool_content(text_block(
                f"{file.status} {file.path}: {file.summary}{more}{rows}")))
    return content


def _sides(file: FileChange) -> tuple[str | None, str]:
    """The old and new text of ``file``'s hunks (None for the old side of a new file)."""
    old: list[str] = []
    new: list[str] = []
    for line in file.lines:
        if line.startswith("@@"):
            if old or new:
                old.append("...")
                new.append("...")
            continue
        if line[:1] in (" ", "-"):
            old.append(line[1:])
        if line[:1] in (" ", "+"):
            new.append(line[1:])
    return (None if file.status == "new" else "\n".join(old)), "\n".join(new)
