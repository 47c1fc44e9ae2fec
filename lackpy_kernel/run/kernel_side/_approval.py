"""Approving a program's file changes before they land (``[sandbox] approve = "write"``).

When a program that ran in the worker ended well with staged files, the worker sends their
``Change`` up (a ``Question``) and waits, with no deadline, for the ``Verdict``. The
kernel's side asks the run's ``Approver``: a callable given the ``Change`` that returns
True to apply it and False to decline it (or an ``async`` one returning the same). It may
raise ``ChangeRefusedError`` to refuse it with its own reason (no one can be asked). A run
with no approver refuses (``NO_ONE_TO_ASK``). A refused change is a failed run: nothing
written, the variables as they were.

A call of a tool graded ``write`` that runs here (an MCP server's, ``where = "kernel"``)
acts beyond the files, so it cannot be staged: the same approver is asked before it runs
(``ask_call``), given a ``Change`` whose ``call`` names the tool and shows its arguments
(``call_change``: bounded, printable); a refusal fails that call (``refused_call``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, cast

from lackpy_kernel.errors import ChangeRefusedError
from lackpy_kernel.kit.changes import MAX_CALL_CHARS, MAX_FULL_CHARS, Change

from ..failures import ASK_INTERRUPTED, DECLINED
from ..plain import bounded_repr
from ..protocol import Verdict

__all__ = ["NO_ONE_TO_ASK", "Approver", "ask_call", "call_change", "judge",
           "is_async_approver", "judge_async", "refused_call"]

# Given the change: whether to apply it (True) or decline it (False)
Approver = Callable[[Change], bool] | Callable[[Change], Awaitable[bool]]
MAX_ARGUMENT_CHARS = 400  # the most of one argument a call's question shows
NO_ONE_TO_ASK = ('no one can be asked to approve them here. For an unattended run (tests, '
                 'CI, papermill, a script without a terminal) let file changes land unseen '
                 'with [sandbox] approve = "never" in .lackpy/config.toml')
log = logging.getLogger(__name__)


def judge(approve: Approver | None, change: Change) -> Verdict:
    """The verdict on ``change``, asking ``approve`` here; an awaitable answer is run to
    completion on a loop of its own. A refusal when ``approve`` refuses, fails, or is
    interrupted (KeyboardInterrupt: the question was abandoned)."""
    if approve is None:
        return _answer(False, NO_ONE_TO_ASK)
    try:
        verdict = approve(change)
        if inspect.isawaitable(verdict):
            verdict = asyncio.run(_awaited(verdict))
    except (Exception, KeyboardInterrupt) as exc:
        return _refusal(exc)
    return _answer(verdict is True)


async def judge_async(approve: Approver | None, change: Change) -> Verdict:
    """``judge`` on a running loop: an ``async`` approver is awaited here, a blocking one
    runs on a thread, so the loop goes on meanwhile. Cancelling the await stops asking."""
    if approve is None:
        return _answer(False, NO_ONE_TO_ASK)
    try:
        if is_async_approver(approve):
            verdict = await _awaited(approve(change))
        else:
            verdict = await asyncio.to_thread(cast(Callable[[Change], bool], approve), change)
    except (Exception, KeyboardInterrupt) as exc:
        return _refusal(exc)
    return _answer(verdict is True)


def ask_call(approve: Approver | None, change: Change) -> str | None:
    """Ask ``approve`` (blocking, on this thread) whether the call ``change`` names may run:
    None when it may, else why not."""
    if approve is None:
        return "no one can be asked here"
    verdict = judge(approve, change)
    if verdict.apply:
        return None
    return "it was declined" if verdict.reason == DECLINED else verdict.reason


def call_change(tool: str, args: list[Any], kwargs: dict[str, Any]) -> Change:
    """The question for a call of ``tool``: its arguments (plain data) written as Python,
    each cut to ``MAX_ARGUMENT_CHARS`` (ending ``...``), those past ``MAX_CALL_CHARS``
    counted, never dropped unsaid; all of them (up to ``MAX_FULL_CHARS``) kept for whoever
    asks to see them, and the change's digest covers every argument."""
    named = [*((None, value) for value in args), *kwargs.items()]
    shown: list[str] = []
    size = 0
    for name, value in named:  # no more than is shown, however many arguments there are
        part = _argument(name, value, MAX_ARGUMENT_CHARS)
        if size + len(part) > MAX_CALL_CHARS:
            left = len(named) - len(shown)
            shown.append(f"... {left} more argument{'s' if left != 1 else ''}")
            break
        shown.append(part)
        size += len(part) + 2
    whole = ", ".join(_argument(name, value, MAX_FULL_CHARS) for name, value in named)
    return Change.of_call(tool, ", ".join(shown), whole)


def _argument(name: str | None, value: Any, limit: int) -> str:
    text = bounded_repr(value, limit)
    return text if name is None else f"{name[:80]}={text}"


def refused_call(tool: str, why: str) -> str:
    """Why a call of ``tool`` did not run (``why``), and which setting to change."""
    return (f"{tool}() was not run: {why}. A tool graded write that runs in the kernel acts "
            "beyond the files, so each of its calls waits for a person where [sandbox] "
            'approve = "write"; let its calls run unasked with [sandbox] approve = "never" in '
            ".lackpy/config.toml, or grade it 'read' in its source's settings if it only "
            "reads")


def _refusal(exc: BaseException) -> Verdict:
    """The answer when asking raised ``exc``: the approver's own refusal, an abandoned
    question (KeyboardInterrupt or a cancelled future: the run was stopped meanwhile), or an approver's bug,
    which must still answer the worker that waits."""
    if isinstance(exc, ChangeRefusedError):
        return _answer(False, str(exc))
    if isinstance(exc, (KeyboardInterrupt, concurrent.futures.CancelledError)):
        return _answer(False, ASK_INTERRUPTED)  # a blocking() question whose prompt was cancelled
    log.error("lackpy: asking for approval failed", exc_info=exc)
    return _answer(False, f"asking for approval failed ({type(exc).__name__}: {exc})")


def blocking(approve: Approver | None, loop: asyncio.AbstractEventLoop) -> Approver | None:
    """``approve`` as a thread may call it while ``loop`` runs: an ``async`` one runs on
    ``loop`` (where what it awaits lives), the thread waiting for its answer."""
    if approve is None or not is_async_approver(approve):
        return approve
    asynchronous = approve

    def on_loop(change: Change) -> bool:
        verdict = asyncio.run_coroutine_threadsafe(_awaited(asynchronous(change)), loop)
        return verdict.result() is True

    return on_loop


def is_async_approver(approve: Approver) -> bool:
    """Whether ``approve`` is an ``async`` function (or an object whose ``__call__`` is)."""
    return inspect.iscoroutinefunction(approve) or inspect.iscoroutinefunction(
        type(approve).__call__)


async def _awaited(verdict: Awaitable[bool] | bool) -> bool:
    return (await verdict if inspect.isawaitable(verdict) else verdict) is True


def _answer(apply: bool, reason: str = DECLINED) -> Verdict:
    return Verdict(apply, "" if apply else reason)
