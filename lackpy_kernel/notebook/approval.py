"""The person approves a program's file changes in the notebook (``[sandbox] approve``),
and each call it makes of a kernel-side tool graded write (a ``Change`` whose ``call`` names
it): the change is shown as a display bundle (``change_bundle``: text, HTML and
``application/vnd.lackpy.changes+json``), then the port asks ``question(change)`` (in the kernel,
over Jupyter's stdin channel, an ``input_request`` every front end answers; in IPython
through ``input()``). The terminal (``lackpy run``) holds the same conversation.

Nothing unseen lands on a bare "y": when the change was shown whole, ``y`` or ``yes``
applies it and anything else declines it; when something was cut or summarized, the
question says what, ``all`` shows all of it and asks again, ``unseen`` applies it without
seeing the rest, and anything else (``y`` included) declines it. A front end that takes no
input, or a request that shows nothing (``silent``), refuses it, naming the setting."""

from __future__ import annotations

from collections.abc import Callable

from lackpy_kernel.errors import ChangeRefusedError, UsageError
from lackpy_kernel.kit.changes import Change
from lackpy_kernel.notebook.bundles import change_bundle
from lackpy_kernel.notebook.port import NotebookPort
from lackpy_kernel.run.kernel_side import NO_ONE_TO_ASK

__all__ = ["QUESTION", "SHOW_ALL", "UNSEEN", "Asking", "asking", "converse", "is_yes",
           "question"]

SHOW_ALL = "all"  # the answer that shows what was not shown, then asks again
UNSEEN = "unseen"  # the answer that applies a change with parts the person has not seen


def question(change: Change) -> str:
    """The prompt that asks about ``change`` (``Apply these changes? [y/N] ``, for a call
    ``Call NAME? [y/N] ``, with what runs code and what was not shown); front ends may
    look for how it begins."""
    if change.complete:
        return f"{change.question()} [y/N] "
    return (f"{change.question()} Type {SHOW_ALL} to see all of it first, or {UNSEEN} to "
            f"apply it without seeing the rest [{SHOW_ALL}/{UNSEEN}/N] ")


QUESTION = question(Change(()))  # the prompt for a change of files


def converse(change: Change, show: Callable[[Change], None], ask: Callable[[str], str]) -> bool:
    """Show ``change``, ask about it, and return whether it applies: on ``all`` it is shown
    in full and asked about again (see the module)."""
    show(change)
    answer = _verdict(ask(question(change)), change)
    if answer == SHOW_ALL:
        change = change.in_full()
        show(change)
        answer = _verdict(ask(question(change)), change)
    return answer is True


class Asking:
    """The approver that shows each change under the cell and asks the person through
    ``port`` (a blocking call: the sandbox runs it on a thread of its own); ``last`` is the
    last change it asked about (``%diff`` shows it whole)."""

    def __init__(self, port: NotebookPort) -> None:
        self.port = port
        self.last: Change | None = None

    def __call__(self, change: Change) -> bool:
        self.last = change
        port = self.port
        try:
            return converse(change, lambda shown: port.display(change_bundle(shown)), port.ask)
        except UsageError as exc:
            raise ChangeRefusedError(f"{exc}. So {NO_ONE_TO_ASK}") from None


def asking(port: NotebookPort) -> Asking:
    """The approver that asks the person through ``port`` (see ``Asking``)."""
    return Asking(port)


def is_yes(answer: str) -> bool:
    """Whether ``answer`` applies a change shown whole (``y`` or ``yes``, any case)."""
    return answer.strip().lower() in ("y", "yes")


def _verdict(answer: str, change: Change) -> bool | str:
    """True to apply, ``SHOW_ALL`` to show the rest, False to decline."""
    if change.complete:
        return is_yes(answer)
    word = answer.strip().lower()
    if word == SHOW_ALL:
        return SHOW_ALL
    return word == UNSEEN

