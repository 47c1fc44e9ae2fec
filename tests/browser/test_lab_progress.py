"""lackpy's JupyterLab extension in a real (headless) browser, on the real lackpy kernel: the
progress cards of ``%delegate``, a plan's run and ``%agent``; the status bar's kit; the
delegate button of the active cell's toolbar; ``%%step`` and ``%%validate`` bodies checked as
you type. Without the extension the same cells read as the kernel's text."""

from __future__ import annotations

import json
import os
import uuid

import nbformat
import pytest

from tests.support import agents
from tests.support import loopback as lb
from tests.support.kernel import KERNEL_NAME, make_workspace
from tests.support.lab import (
    LabServer,
    NotebookPage,
    chromium_missing,
    lab_in_chromium,
    screenshot_dir,
    write_notebook,
)
from tests.support.temporal import (
    WorkerProcess,
    temporal_server,  # noqa: F401 - the module's server fixture
)

pytestmark = pytest.mark.skipif(chromium_missing() is not None, reason=chromium_missing() or "")

COUNT_TEMPLATE = ("---\nname: count\npattern: count the notes\n---\n"
                  "len(read_file('notes.txt').splitlines())\n")
CELLS = [
    "earlier = read_file('notes.txt')",
    "%delegate count the notes",  # the template answers
    "%%step fetch\nread_file(task)",
    "%%step lines\nlen(task.splitlines())",
    "%plan run notes.txt",
    "%agent how many lines does notes.txt have",  # the loopback model answers
    "files = ['notes.txt', 'missing.txt']",
    "%plan run-many files --concurrency 1",
]
EARLIER, DELEGATE, FETCH, LINES, PLAN, AGENT, FILES, MANY = range(len(CELLS))
CARD = ".lackpy-Progress"
PROBLEM = ".lackpy-Problem"
WAIT_MS = 60_000
# A card as a hostile program's strings could make it: everything must show as text.
HOSTILE = "<img src=x onerror=document.body.dataset.owned=1>"
HOSTILE_CARD = {"kind": "plan", "title": HOSTILE, "state": HOSTILE, "badge": HOSTILE,
                "program": HOSTILE, "program_label": HOSTILE, "note": HOSTILE,
                "items": [{"name": HOSTILE, "status": HOSTILE, "detail": HOSTILE, "ms": HOSTILE}]}
SHOW_HOSTILE = ("from IPython.display import display\n"
                f"display({{'text/plain': 'card', 'application/vnd.lackpy.progress+json': "
                f"{HOSTILE_CARD!r}}}, raw=True)")


@pytest.fixture(scope="module")
def model():
    with lb.LoopbackServer() as server:
        yield server


@pytest.fixture(scope="module")
def root(installed_kernelspec, model, tmp_path_factory):
    root = make_workspace(tmp_path_factory.mktemp("progress-root"))
    agents.write_config(root, "anthropic", model, retry_delay=0.001,
                        extra='[agent]\nprovider = "loop"\nmodel = "claude-loop"\n')
    (root / ".lackpy" / "templates").mkdir(parents=True)
    (root / ".lackpy" / "templates" / "count.tmpl").write_text(COUNT_TEMPLATE)
    write_notebook(root / "progress.ipynb", KERNEL_NAME, CELLS)
    write_notebook(root / "plain.ipynb", KERNEL_NAME, CELLS)
    write_notebook(root / "status.ipynb", KERNEL_NAME, ["%kit read_file,write_file", "%kit debug"])
    write_notebook(root / "bodies.ipynb", KERNEL_NAME, ["earlier = 1"])
    write_notebook(root / "toolbar.ipynb", KERNEL_NAME, ["earlier = 1"])
    notebook = nbformat.v4.new_notebook()
    notebook.metadata.kernelspec = {"name": "python3", "display_name": "Python 3",
                                    "language": "python"}
    notebook.cells = [nbformat.v4.new_code_cell(SHOW_HOSTILE)]
    nbformat.write(notebook, root / "hostile.ipynb")
    return root


def _env() -> dict[str, str]:
    """The server's environment (its kernels inherit it): the loopback model's key only."""
    env = {name: value for name, value in os.environ.items() if name not in agents.CLEARED_ENV}
    return {**env, "ANTHROPIC_API_KEY": agents.KEY}


@pytest.fixture(scope="module")
def browser(root, tmp_path_factory):
    pytest.importorskip("playwright.sync_api", reason="Playwright is in the test extra")
    with lab_in_chromium(root, tmp_path_factory.mktemp("progress-state"), _env()) as running:
        yield running


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    return screenshot_dir(tmp_path_factory.mktemp("screenshots"))


@pytest.fixture(scope="module")
def lab(browser, model):
    server, chromium = browser
    model.script(lb.tool_turn("anthropic", "Let me read it.",
                              [("read_file", {"path": "notes.txt"})]),
                 lb.tool_turn("anthropic", "notes.txt has 3 lines."))
    notebook = NotebookPage(chromium.new_page(viewport={"width": 1200, "height": 900}), server,
                            "progress.ipynb", workspace="progress")
    notebook.run_all()
    return notebook


def _open(browser, name: str, height: int = 900) -> NotebookPage:
    server, chromium = browser
    return NotebookPage(chromium.new_page(viewport={"width": 1200, "height": height}), server,
                        name, workspace=name.removesuffix(".ipynb"))


def _items(card) -> list[list[str]]:
    """Each line of a card: name, status, detail, ms."""
    return [row.locator("span").all_inner_texts()[1:]
            for row in card.locator(".lackpy-Progress-item").all()]


def test_a_delegate_card_shows_the_tiers_the_tier_that_answered_and_the_program(lab, shots):
    card = lab.cell(DELEGATE).locator(CARD)
    card.wait_for(timeout=WAIT_MS)
    assert card.locator(".lackpy-Progress-state").inner_text().lower() == "done"
    assert card.locator(".lackpy-Progress-title").inner_text() == "delegating: count the notes ..."
    assert card.locator(".lackpy-Progress-badge").inner_text() == "templates"
    assert _items(card)[0][:2] == ["templates", "answered"]
    assert card.locator(".lackpy-Progress-program pre").inner_text() == (
        "len(read_file('notes.txt').splitlines())")
    assert _items(card)[0][3].endswith(" ms")
    assert card.locator(".lackpy-Progress-note").inner_text() == "grade w=1 d=1"
    # who wrote it in how long is said once, by the status line under the card
    assert lab.cell(DELEGATE).inner_text().count("written by templates in") == 1
    assert lab.source(DELEGATE + 1) == "len(read_file('notes.txt').splitlines())"
    lab.screenshot(DELEGATE, shots / "progress-delegate.png")


def test_a_plan_runs_card_lists_each_step_with_its_status_and_time(lab, shots):
    plan = PLAN + 1  # %delegate inserted its program above
    card = lab.cell(plan).locator(CARD)
    card.wait_for(timeout=WAIT_MS)
    assert card.locator(".lackpy-Progress-state").inner_text().lower() == "done"
    assert card.locator(".lackpy-Progress-summary").inner_text() == "2 of 2 steps done"
    rows = _items(card)
    assert [row[:2] for row in rows] == [["fetch", "done"], ["lines", "done"]]
    assert all(row[3].endswith(" ms") for row in rows)
    assert lab.cell(plan).locator("[data-mime-type='text/plain']").first.inner_text().strip() == (
        "plan on 'notes.txt'")  # the live display, back to its title
    lab.screenshot(plan, shots / "progress-plan.png")


def test_an_agent_card_lists_its_turns_and_tool_calls(lab, shots):
    agent = AGENT + 1
    card = lab.cell(agent).locator(CARD)
    card.wait_for(timeout=WAIT_MS)
    assert card.locator(".lackpy-Progress-state").inner_text().lower() == "done"
    assert card.locator(".lackpy-Progress-summary").inner_text() == "2 turns, 1 tool call"
    rows = _items(card)
    assert ["turn 1", "tools", "model: Let me read it."] == rows[0][:3]
    assert rows[1][:3] == ["turn 1", "ok", "read_file(path='notes.txt')"]
    assert rows[2][:2] == ["turn 2", "answer"]
    lab.screenshot(agent, shots / "progress-agent.png")


def test_a_run_manys_card_lists_each_task_with_its_status_outcome_and_time(lab, shots):
    many = MANY + 2  # %delegate and %agent inserted their programs above
    assert lab.source(many) == CELLS[MANY]
    card = lab.cell(many).locator(CARD)
    card.wait_for(timeout=WAIT_MS)
    assert card.locator(".lackpy-Progress-state").inner_text().lower() == "failed"
    assert card.locator(".lackpy-Progress-summary").inner_text() == "1 of 2 tasks done"
    rows = _items(card)
    assert rows[0][:3] == ["'notes.txt'", "done", "3"]  # fetch, then its lines
    assert rows[1][:2] == ["'missing.txt'", "failed"]
    assert rows[1][2].startswith("LackpyRuntimeError: ")
    assert all(row[3].endswith(" ms") for row in rows)
    assert card.locator(".lackpy-Progress-item[data-tone='failed']").count() == 1
    lab.screenshot(many, shots / "progress-run-many.png")


def test_a_temporal_runs_card_follows_the_run_after_the_cell_ended(browser, root, shots,
                                                                   temporal_server):  # noqa: F811
    queue = f"lab-{uuid.uuid4().hex[:8]}"
    write_notebook(root / "remote.ipynb", KERNEL_NAME, [
        "%%step fetch\nread_file(task)", "%%step size\nlen(task)",
        f"%plan run notes.txt --temporal {temporal_server.address} --task-queue {queue} "
        "--key lab1"])
    worker = WorkerProcess(temporal_server.address, queue, root)
    try:
        notebook = _open(browser, "remote.ipynb")
        notebook.run_all()
        card = notebook.cell(2).locator(CARD)
        card.wait_for(timeout=WAIT_MS)
        notebook.page.wait_for_function(
            "card => card.dataset.state === 'ok'", arg=card.element_handle(), timeout=WAIT_MS)
        assert card.locator(".lackpy-Progress-title").inner_text() == (
            f"plan on 'notes.txt', key lab1, on Temporal at {temporal_server.address}")
        assert card.locator(".lackpy-Progress-summary").inner_text() == "2 of 2 steps done"
        rows = _items(card)
        assert [row[:2] for row in rows] == [["fetch", "done"], ["size", "done"]]
        assert all(row[2] == f"on {worker.identity}" and row[3].endswith(" ms") for row in rows)
        assert card.locator(".lackpy-Progress-label").inner_text() == "output"
        assert card.locator(".lackpy-Progress-program pre").inner_text() == "17"
        notebook.screenshot(2, shots / "progress-temporal.png")
    finally:
        worker.stop()


def test_the_status_bar_names_the_kit_before_a_cell_runs_and_follows_kit(browser, shots):
    notebook = _open(browser, "status.ipynb")
    item = notebook.page.locator(".lackpy-KitStatus")
    item.wait_for(timeout=WAIT_MS)
    notebook.page.wait_for_function(
        "item => item.textContent === 'lackpy kit: debug \\u00b7 read'",
        arg=item.element_handle(), timeout=WAIT_MS)
    assert "read_file" in item.get_attribute("title")
    assert notebook.cell(0).locator(".jp-InputPrompt").inner_text().strip() == "[ ]:"  # nothing ran
    notebook.cell(0).locator(".cm-content").click()
    notebook.page.keyboard.press("Shift+Enter")
    notebook.page.wait_for_function(
        "item => item.textContent === 'lackpy kit: read_file,write_file \\u00b7 write'",
        arg=item.element_handle(), timeout=WAIT_MS)
    notebook.page.locator("#jp-main-statusbar").screenshot(path=str(shots / "kit-status.png"))


def test_the_active_cells_toolbar_delegates_below_it(browser, shots):
    notebook = _open(browser, "toolbar.ipynb")
    notebook.cell(0).locator(".cm-content").click()
    button = notebook.cell(0).locator(".jp-cell-toolbar [data-command='lackpy-kernel:delegate']")
    button.wait_for(timeout=WAIT_MS)
    notebook.screenshot(0, shots / "cell-toolbar-delegate.png")
    button.click()
    intent = notebook.page.locator(".jp-Dialog input")
    intent.wait_for(timeout=WAIT_MS)
    intent.fill("count the notes")
    intent.press("Enter")
    notebook.page.wait_for_function(
        "cell => /written by templates/.test(cell.innerText)",
        arg=notebook.cell(1).element_handle(), timeout=WAIT_MS)
    # The program's cell comes with the reply, after the status line: wait for it.
    notebook.page.wait_for_function(
        "cell => cell.innerText.includes('splitlines')",
        arg=notebook.cell(2).element_handle(), timeout=WAIT_MS)
    assert notebook.source(1) == "%delegate count the notes"
    assert notebook.source(2) == "len(read_file('notes.txt').splitlines())"


def _type_below(notebook: NotebookPage, text: str) -> int:
    last = notebook.page.locator(".jp-Notebook .jp-Cell").count() - 1
    notebook.cell(last).locator(".jp-InputPrompt").click()
    notebook.page.keyboard.press("Escape")
    notebook.page.keyboard.press("b")
    notebook.page.keyboard.press("Enter")
    for number, line in enumerate(text.split("\n")):
        if number:
            notebook.page.keyboard.press("Enter")
            notebook.page.keyboard.press("Home")  # Lab indents after a ':'; lackpy would not
        notebook.page.keyboard.type(line)
    return last + 1


def test_step_and_validate_bodies_are_underlined_as_you_type(browser, shots):
    notebook = _open(browser, "bodies.ipynb")
    notebook.run_all()  # the session knows `earlier` now
    validate = _type_below(notebook, "%%validate\nlen(earlier) + open('x')")
    underline = notebook.cell(validate).locator(PROBLEM)
    underline.first.wait_for(timeout=WAIT_MS)
    assert underline.all_inner_texts() == ["open"]
    step = _type_below(notebook, "%%step count --nope\nlen(earlier) + len(task)")
    notebook.page.wait_for_function(
        "cell => [...cell.querySelectorAll('.lackpy-Problem')].some(m => m.textContent === 'earlier')",
        arg=notebook.cell(step).element_handle(), timeout=WAIT_MS)
    marked = notebook.cell(step).locator(PROBLEM).all_inner_texts()  # the line may be in parts
    assert "".join(marked[:-1]) == "%%step count --nope" and marked[-1] == "earlier"
    notebook.screenshot(step, shots / "live-validation-step.png")


def test_a_hostile_card_shows_its_strings_as_text(browser):
    notebook = _open(browser, "hostile.ipynb", height=700)
    notebook.run_all()
    card = notebook.cell(0).locator(CARD)
    card.wait_for(timeout=WAIT_MS)
    assert card.locator("img").count() == 0
    assert card.locator(".lackpy-Progress-title").inner_text() == HOSTILE
    assert card.locator(".lackpy-Progress-program pre").inner_text() == HOSTILE
    assert notebook.page.evaluate("() => document.body.dataset.owned") is None


def test_without_the_extension_the_cells_read_as_the_kernels_text(browser, root, model,
                                                                 tmp_path_factory, shots):
    model.script(lb.tool_turn("anthropic", "Let me read it.",
                              [("read_file", {"path": "notes.txt"})]),
                 lb.tool_turn("anthropic", "notes.txt has 3 lines."))
    config = tmp_path_factory.mktemp("plain-config")
    (config / "labconfig").mkdir()
    (config / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"lackpy-kernel": True}}))
    _, chromium = browser
    plain = LabServer(root, tmp_path_factory.mktemp("plain-state"),
                      {**_env(), "JUPYTER_CONFIG_DIR": str(config)})
    try:
        notebook = NotebookPage(chromium.new_page(viewport={"width": 1200, "height": 900}), plain,
                                "plain.ipynb", workspace="plain")
        notebook.run_all()
        assert notebook.page.locator(CARD).count() == 0
        assert notebook.page.locator(".lackpy-KitStatus").count() == 0
        assert notebook.outputs(DELEGATE).first.inner_text().strip() == (
            "delegating: count the notes ...")
        plan = notebook.cell(PLAN + 1)
        assert plan.locator("[data-mime-type='text/plain']").first.inner_text().strip() == (
            "plan on 'notes.txt'")
        assert plan.locator("[data-mime-type='text/html'] th").all_inner_texts() == [
            "step", "status", "runs", "ms"]
        notebook.screenshot(PLAN + 1, shots / "progress-without-extension.png")
    finally:
        plain.close()
