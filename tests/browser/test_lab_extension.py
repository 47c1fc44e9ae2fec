"""lackpy's JupyterLab extension in a real (headless) browser: live validation as a person
types, and the trace renderer. The extension is the installed one (``pip install``), served
by ``jupyter lab`` with the server extension its install enabled."""

from __future__ import annotations

import json
import os

import nbformat
import pytest

from tests.support.kernel import KERNEL_NAME, make_workspace
from tests.support.lab import (
    LabServer,
    NotebookPage,
    chromium_missing,
    lab_in_chromium,
    screenshot_dir,
    write_notebook,
)

pytestmark = pytest.mark.skipif(chromium_missing() is not None, reason=chromium_missing() or "")

CELLS = [
    "earlier = read_file('notes.txt')",
    "[len(read_file(name)) for name in ['notes.txt', 'app.py', 'notes.txt']]",
]
ONE_CALL, THREE_CALLS = range(len(CELLS))
OPEN_MESSAGE = "the name 'open' is forbidden: use read_file(path) or write_file(path, content)"
PROBLEM = ".lackpy-Problem"  # an underlined problem (CodeMirror's lint mark, with our class)
COUNT_TEMPLATE = ("---\nname: count\npattern: count the notes\n---\n"
                  "len(read_file('notes.txt').splitlines())\n")
WRITE = "write_file('notes.txt', 'ALPHA\\n')"
WRITES = ["%kit read_file,write_file", WRITE, WRITE, "%undo"]  # asked, declined; asked, applied
WAIT_MS = 60_000  # the longest a step may take on a busy machine (typing answers in well under 1 s)


CHANGE = {"files": [
    {"path": "notes.txt", "status": "changed", "added": 1, "removed": 1, "omitted": 0, "note": "",
     "lines": ["@@ -1,3 +1,3 @@", "-alpha", "+ALPHA", " beta", " gamma"]},
    {"path": "logo.png", "status": "new", "added": 0, "removed": 0, "omitted": 0, "note": "binary",
     "lines": []}]}
# The kernel's approval, as the approve work shows a change and asks over stdin; here a
# Python kernel does the same (a display with the change's MIME type, then input()).
ASK = ("from IPython.display import display\n"
       f"display({{'text/plain': '2 files changed', 'application/vnd.lackpy.changes+json': {CHANGE!r}}}, "
       "raw=True)\n"
       "print('answer:', input('Apply these changes? [y/N] '))")


def _python_notebook(path, cells):
    notebook = nbformat.v4.new_notebook()
    notebook.metadata.kernelspec = {"name": "python3", "display_name": "Python 3",
                                    "language": "python"}
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nbformat.write(notebook, path)


@pytest.fixture(scope="module")
def browser(installed_kernelspec, tmp_path_factory):
    pytest.importorskip("playwright.sync_api", reason="Playwright is in the test extra")
    root = make_workspace(tmp_path_factory.mktemp("lab-root"))
    (root / ".lackpy" / "templates").mkdir(parents=True)
    (root / ".lackpy" / "templates" / "count.tmpl").write_text(COUNT_TEMPLATE)
    write_notebook(root / "live.ipynb", KERNEL_NAME, CELLS)
    write_notebook(root / "plain.ipynb", KERNEL_NAME, CELLS)  # Lab may save live.ipynb's typing
    _python_notebook(root / "python.ipynb", ["%%lackpy\nrows = 1\nimport os", "import os"])
    _python_notebook(root / "approval.ipynb", [ASK, ASK, ASK])
    (root / "writes").mkdir()  # a workspace of its own (the default: approve = "write")
    (root / "writes" / "notes.txt").write_text("alpha\n")
    write_notebook(root / "writes" / "approve.ipynb", KERNEL_NAME, WRITES)
    with lab_in_chromium(root, tmp_path_factory.mktemp("lab-state"), dict(os.environ)) as running:
        yield running


@pytest.fixture(scope="module")
def lab(browser):
    server, chromium = browser
    notebook = NotebookPage(chromium.new_page(viewport={"width": 1200, "height": 900}), server,
                            "live.ipynb")
    notebook.run_all()
    return notebook


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    return screenshot_dir(tmp_path_factory.mktemp("screenshots"))


def _type_in_new_cell(lab: NotebookPage, text: str) -> int:
    """Type ``text`` into a new cell at the end, without running it; returns its index."""
    last = lab.page.locator(".jp-Notebook .jp-Cell").count() - 1
    lab.cell(last).locator(".jp-InputPrompt").click()
    lab.page.keyboard.press("Escape")
    lab.page.keyboard.press("b")
    lab.page.keyboard.press("Enter")
    lab.page.keyboard.type(text)
    return last + 1


def _underlined(lab: NotebookPage, index: int, words: list[str]) -> list[str]:
    """The words underlined in cell ``index`` once they are ``words`` (live validation runs
    as the text is typed, so a half-typed name may be underlined first); times out else."""
    lab.page.wait_for_function(
        "([cell, selector, words]) => JSON.stringify([...cell.querySelectorAll(selector)]"
        ".map(mark => mark.innerText)) === JSON.stringify(words)",
        arg=[lab.cell(index).element_handle(), PROBLEM, words], timeout=WAIT_MS)
    return lab.cell(index).locator(PROBLEM).all_inner_texts()


def test_the_server_offers_the_extension(lab):
    offered = lab.page.evaluate(
        "() => JSON.parse(document.getElementById('jupyter-config-data').textContent)"
        ".federated_extensions.map(extension => extension.name)")
    assert "lackpy-kernel" in offered


def test_a_forbidden_name_is_underlined_with_the_validators_message_until_fixed(lab, shots):
    index = _type_in_new_cell(lab, "open('x')")
    underline = lab.cell(index).locator(PROBLEM)
    assert _underlined(lab, index, ["open"]) == ["open"]
    underline.first.hover()
    tooltip = lab.page.locator(".cm-tooltip-lint .cm-diagnostic")
    tooltip.wait_for(timeout=WAIT_MS)
    assert tooltip.locator(".cm-diagnosticText").inner_text() == OPEN_MESSAGE
    assert tooltip.locator(".cm-diagnosticSource").inner_text() == "lackpy"
    lab.page.screenshot(path=str(shots / "live-validation.png"))
    lab.page.keyboard.press("Control+a")
    lab.page.keyboard.type("read_file('notes.txt')")
    underline.first.wait_for(state="detached", timeout=WAIT_MS)
    assert lab.source(index) == "read_file('notes.txt')"
    lab.screenshot(index, shots / "live-validation-fixed.png")


def test_a_variable_of_an_earlier_cell_is_not_underlined_and_an_unknown_name_is(lab, shots):
    index = _type_in_new_cell(lab, "len(earlier) + nowhere")
    assert _underlined(lab, index, ["nowhere"]) == ["nowhere"]
    lab.screenshot(index, shots / "live-validation-names.png")


def test_a_trace_renders_as_a_table_that_sorts_and_links_the_files_it_read(lab, shots):
    trace = lab.cell(THREE_CALLS).locator(".lackpy-Trace")
    trace.locator("summary").click()
    assert trace.locator("summary").inner_text().startswith("trace: 3 tool calls")
    args = trace.locator("tbody tr td:nth-child(3)")
    assert args.all_inner_texts() == ["path='notes.txt'", "path='app.py'", "path='notes.txt'"]
    trace.locator("th", has_text="args").click()
    assert args.all_inner_texts() == ["path='app.py'", "path='notes.txt'", "path='notes.txt'"]
    trace.locator("th", has_text="args").click()
    assert args.all_inner_texts() == ["path='notes.txt'", "path='notes.txt'", "path='app.py'"]
    links = trace.locator(".lackpy-Trace-files a")
    assert links.all_inner_texts() == ["notes.txt", "app.py"]
    lab.screenshot(THREE_CALLS, shots / "trace-renderer.png")
    links.first.click()
    current = ".lm-TabBar-tab.lm-mod-current"
    opened = lab.page.locator(f"{current} .lm-TabBar-tabLabel", has_text="notes.txt")
    opened.wait_for(timeout=WAIT_MS)
    # close the file's tab: the notebook is the current tab again for the module's other tests
    lab.page.locator(current, has_text="notes.txt").locator(".lm-TabBar-tabCloseIcon").click()
    lab.page.locator(f"{current} .lm-TabBar-tabLabel", has_text="live.ipynb").wait_for(timeout=WAIT_MS)


def test_a_python_notebooks_lackpy_cell_is_checked_and_its_python_cells_are_not(browser, shots):
    server, chromium = browser
    notebook = NotebookPage(chromium.new_page(viewport={"width": 1200, "height": 700}), server,
                            "python.ipynb", workspace="python")
    underline = notebook.cell(0).locator(PROBLEM)
    underline.first.wait_for(timeout=WAIT_MS)
    assert underline.all_inner_texts() == ["import"]
    assert notebook.cell(1).locator(PROBLEM).count() == 0
    notebook.screenshot(0, shots / "python-lackpy-cell.png")


def _answer_shown(notebook: NotebookPage, index: int, text: str) -> None:
    notebook.page.wait_for_function(
        "([cell, text]) => cell.innerText.includes(text)",
        arg=[notebook.cell(index).element_handle(), text], timeout=WAIT_MS)


def test_the_approval_dialog_shows_the_change_and_applies_discards_or_lets_you_type(browser,
                                                                                     shots):
    server, chromium = browser
    notebook = NotebookPage(chromium.new_page(viewport={"width": 1200, "height": 900}), server,
                            "approval.ipynb", workspace="approval")
    dialog = notebook.run_until_asked(0, WAIT_MS)
    assert dialog.locator(".lackpy-Changes-summary").inner_text() == "2 files changed: +1 -1"
    assert dialog.locator(".lackpy-Changes-files tr").all_inner_texts() == [
        "changed\tnotes.txt\t+1 -1", "new\tlogo.png\tbinary"]
    assert dialog.locator(".lackpy-Diff-added").all_inner_texts() == ["+ALPHA"]
    assert dialog.locator(".lackpy-Diff-removed").all_inner_texts() == ["-alpha"]
    notebook.screenshot(0, shots / "approval-dialog-python.png")
    dialog.get_by_role("button", name="Apply").click()
    _answer_shown(notebook, 0, "answer: y")
    assert dialog.locator(".lackpy-Changes-state").inner_text() == "applied"
    assert dialog.locator("button:enabled").count() == 0

    notebook.run_until_asked(1, WAIT_MS).get_by_role("button", name="Discard").click()
    _answer_shown(notebook, 1, "answer: n")

    dialog = notebook.run_until_asked(2, WAIT_MS)
    stdin = notebook.cell(2).locator("input.jp-Stdin-input")
    stdin.fill("yes")
    stdin.press("Enter")
    _answer_shown(notebook, 2, "answer: yes")
    dialog.locator("button:disabled", has_text="Apply").wait_for(timeout=WAIT_MS)


def test_without_the_extension_a_notebook_reads_as_before(browser, tmp_path_factory, shots):
    """The extension disabled (as ``jupyter labextension disable lackpy-kernel`` does): the
    trace is the kernel's HTML and nothing is underlined."""
    server, chromium = browser
    config = tmp_path_factory.mktemp("jupyter-config")
    (config / "labconfig").mkdir()
    (config / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"lackpy-kernel": True}}))
    plain = LabServer(server.root, tmp_path_factory.mktemp("plain-state"),
                      {**os.environ, "JUPYTER_CONFIG_DIR": str(config)})
    try:
        notebook = NotebookPage(chromium.new_page(viewport={"width": 1200, "height": 900}), plain,
                                "plain.ipynb", workspace="plain")
        notebook.run_all()
        html = notebook.cell(ONE_CALL).locator("[data-mime-type='text/html'] details > summary")
        assert html.first.inner_text().startswith("trace: 1 tool call")
        assert notebook.page.locator(".lackpy-Trace").count() == 0
        index = _type_in_new_cell(notebook, "open('x')")
        notebook.cell(index).locator(".cm-line", has_text="open('x')").wait_for(timeout=WAIT_MS)
        notebook.page.wait_for_timeout(2000)  # four times the extension's debounce: time to show
        assert notebook.page.locator(PROBLEM).count() == 0
        notebook.screenshot(ONE_CALL, shots / "without-extension.png")
    finally:
        plain.close()


def test_delegate_from_the_palette_runs_the_magic_below_and_inserts_its_program(lab, shots):
    lab.page.locator(".lm-TabBar-tab", has_text="live.ipynb").click()  # back from notes.txt
    lab.cell(THREE_CALLS).locator(".jp-InputPrompt").click()
    lab.page.keyboard.press("Escape")
    lab.page.keyboard.press("Control+Shift+c")
    lab.page.locator(".lm-CommandPalette-input").fill("Delegate to lackpy")
    lab.page.locator(".lm-CommandPalette-item", has_text="Delegate to lackpy").first.click()
    intent = lab.page.locator(".jp-Dialog input")
    intent.wait_for(timeout=WAIT_MS)
    lab.page.screenshot(path=str(shots / "delegate-dialog.png"))
    intent.fill("count the notes")
    intent.press("Enter")
    magic = THREE_CALLS + 1
    lab.page.wait_for_function(
        "cell => /written by templates/.test(cell.innerText)",
        arg=lab.cell(magic).element_handle(), timeout=WAIT_MS)
    assert lab.source(magic) == "%delegate count the notes"
    assert lab.source(magic + 1) == "len(read_file('notes.txt').splitlines())"
    lab.screenshot(magic, shots / "delegate-from-palette.png")


def _run(notebook: NotebookPage, index: int, shown: str) -> None:
    """Run cell ``index`` and wait until it shows ``shown``."""
    notebook.cell(index).locator(".cm-content").click()
    notebook.page.keyboard.press("Shift+Enter")
    _answer_shown(notebook, index, shown)


def test_the_lackpy_kernel_asks_before_a_cell_writes_and_undo_takes_it_back(browser, shots):
    """The real kernel, default ``[sandbox] approve = "write"``: Discard writes nothing and
    fails the cell; Apply writes; ``%undo`` restores."""
    server, chromium = browser
    notes = server.root / "writes" / "notes.txt"
    notebook = NotebookPage(chromium.new_page(viewport={"width": 1200, "height": 900}), server,
                            "writes/approve.ipynb", workspace="writes")
    _run(notebook, 0, "write_file")  # %kit lists the kit's tools
    dialog = notebook.run_until_asked(1, WAIT_MS)
    assert notebook.cell(1).locator(".jp-Stdin-prompt").inner_text().strip() == (
        "Apply these changes? [y/N]")
    assert dialog.locator(".lackpy-Changes-summary").inner_text() == "1 file changed: +1 -1"
    assert dialog.locator(".lackpy-Changes-files tr").all_inner_texts() == [
        "changed\tnotes.txt\t+1 -1"]
    assert dialog.locator(".lackpy-Diff-added").all_inner_texts() == ["+ALPHA"]
    assert dialog.locator(".lackpy-Diff-removed").all_inner_texts() == ["-alpha"]
    notebook.screenshot(1, shots / "approval-dialog.png")
    dialog.get_by_role("button", name="Discard").click()
    _answer_shown(notebook, 1, "ChangeRefusedError")
    assert notes.read_text() == "alpha\n"

    dialog = notebook.run_until_asked(2, WAIT_MS)
    dialog.get_by_role("button", name="Apply").click()
    notebook.page.wait_for_function(
        "cell => /^\\[\\d+\\]:$/.test(cell.querySelector('.jp-InputPrompt').textContent.trim())",
        arg=notebook.cell(2).element_handle(), timeout=WAIT_MS)
    assert dialog.locator(".lackpy-Changes-state").inner_text() == "applied"
    assert "ChangeRefusedError" not in notebook.cell(2).inner_text()
    assert notes.read_text() == "ALPHA\n"

    _run(notebook, 3, "restored notes.txt")
    assert notes.read_text() == "alpha\n"
