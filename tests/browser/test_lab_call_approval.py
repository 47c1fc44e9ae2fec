"""The Lab extension's approval dialog for a call: a program's call of a tool graded write
that runs in the kernel (``where = "kernel"``) is asked for before it runs, and the dialog
shows it as ``Call NAME(ARGS)?`` (text: the arguments are the program's, markup included)
with Apply and Discard answering the kernel's stdin question. The real lackpy kernel, the
real JupyterLab with the installed extension, Debian's Chromium."""

from __future__ import annotations

import os

import pytest

from tests.support.kernel import KERNEL_NAME, outbox_workspace
from tests.support.lab import (
    CHROMIUM,
    CHROMIUM_FLAGS,
    LabServer,
    NotebookPage,
    chromium_missing,
    screenshot_dir,
    write_notebook,
)

pytestmark = pytest.mark.skipif(chromium_missing() is not None, reason=chromium_missing() or "")

# Markup that would set the page's title if a front end drew the arguments as HTML
HOSTILE = "<img src=x onerror=\"document.title='pwned'\"><b>bold</b>"
WAIT_MS = 60_000  # the longest a step may take on a busy machine (answering takes well under 1 s)


def _posting(outbox: str) -> str:
    return f"%kit post\npost({outbox!r}, {HOSTILE!r})"


@pytest.fixture(scope="module")
def calls(installed_kernelspec, tmp_path_factory):
    """A notebook whose two cells each call ``post`` (a write tool run in the kernel) with
    hostile markup, open in JupyterLab; and the file ``post`` appends to."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="Playwright is in the test extra")
    root = tmp_path_factory.mktemp("lab-root")
    (root / "calls").mkdir()
    workspace = outbox_workspace(root / "calls")
    outbox = tmp_path_factory.mktemp("outbox") / "outbox.txt"
    write_notebook(workspace / "post.ipynb", KERNEL_NAME, [_posting(str(outbox))] * 2)
    server = LabServer(root, tmp_path_factory.mktemp("lab-state"), dict(os.environ))
    try:
        with sync_api.sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            page = chromium.new_page(viewport={"width": 1200, "height": 900})
            yield NotebookPage(page, server, "calls/post.ipynb", workspace="calls"), outbox
            chromium.close()
    finally:
        server.close()


def _ran(notebook: NotebookPage, index: int) -> None:
    """Wait until cell ``index`` has run (its prompt has a number)."""
    notebook.page.wait_for_function(
        "cell => /^\\[\\d+\\]:$/.test(cell.querySelector('.jp-InputPrompt').textContent.trim())",
        arg=notebook.cell(index).element_handle(), timeout=WAIT_MS)


def test_the_dialog_shows_the_call_as_text_and_discard_refuses_it_apply_runs_it(calls,
                                                                             tmp_path_factory):
    notebook, outbox = calls
    shown = f"Call post({str(outbox)!r}, {HOSTILE!r})?"
    dialog = notebook.run_until_asked(0, WAIT_MS)
    assert notebook.cell(0).locator(".jp-Stdin-prompt").inner_text().strip() == (
        "Call post? [y/N]")
    assert dialog.locator(".lackpy-Changes-call").inner_text() == shown
    assert dialog.locator(".lackpy-Changes-reason").inner_text().startswith(
        "post acts beyond the workspace's files")
    assert dialog.locator("img, b, table, details").count() == 0  # text, not markup; no files
    shots = screenshot_dir(tmp_path_factory.mktemp("screenshots"))
    notebook.screenshot(0, shots / "approval-dialog-call.png")
    dialog.get_by_role("button", name="Discard").click()
    notebook.page.wait_for_function(
        "cell => cell.innerText.includes('post() was not run: it was declined')",
        arg=notebook.cell(0).element_handle(), timeout=WAIT_MS)
    assert dialog.locator(".lackpy-Changes-state").inner_text() == "discarded"
    assert not outbox.exists()

    dialog = notebook.run_until_asked(1, WAIT_MS)
    assert dialog.locator(".lackpy-Changes-call").inner_text() == shown
    dialog.get_by_role("button", name="Apply").click()
    _ran(notebook, 1)
    assert dialog.locator(".lackpy-Changes-state").inner_text() == "applied"
    assert "was not run" not in notebook.cell(1).inner_text()
    assert outbox.read_text() == HOSTILE + "\n"
    assert notebook.page.title() != "pwned"
