"""The person approves a program's file changes in the notebook (``[sandbox] approve``),
and each call it makes of a kernel-side tool graded write (a ``Change`` whose ``call`` names
it): the change is shown as a display bundle (``change_bundle``: text, HTML and
``application/vnd.lackpy.changes+json``), then the port asks ``question(change)`` (in the kernel,
over Jupyter's stdin channel, an ``input_request`` every front end answers; in IPython
through ``input()``). ``y`` or ``yes`` applies it; anything else declines it; a front end
that takes no input refuses it, naming the setting."""

from __future__ import annotations

from lackpy_kernel.errors import ChangeRefusedError, UsageError
from lackpy_kernel.kit.changes import Change
from lackpy_kernel.notebook.bundles import change_bundle
from lackpy_kernel.notebook.port import NotebookPort
from lackpy_kernel.run.kernel_side import NO_ONE_TO_ASK, Approver

__all__ = ["QUESTION", "asking", "is_yes", "question"]


def question(change: Change) -> str:
    """The prompt that asks about ``change`` (``Apply these changes? [y/N] ``, for a call
    ``Call NAME? [y/N] ``); front ends may look for it."""
    return f"{change.question()} [y/N] "


QUESTION = question(Change(()))  # the prompt for a change of files


def asking(port: NotebookPort) -> Approver:
    """The approver that shows each change under the cell and asks the person through
    ``port`` (a blocking call: the sandbox runs it on a thread of its own)."""

    def approve(change: Change) -> bool:
        port.display(change_bundle(change))
        try:
            answer = port.ask(question(change))
        except UsageError:
            raise ChangeRefusedError(f"this front end takes no input, so {NO_ONE_TO_ASK}"
                                     ) from None
        return is_yes(answer)

    return approve


def is_yes(answer: str) -> bool:
    """Whether ``answer`` applies the change (``y`` or ``yes``, any case)."""
    return answer.strip().lower() in ("y", "yes")
