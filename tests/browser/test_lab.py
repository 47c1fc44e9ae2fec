"""The lackpy kernel in JupyterLab, in a real (headless) browser: what a person sees.

A Jupyter server runs on a free loopback port with a token; Debian's Chromium,
driven by Playwright, opens a notebook on the lackpy kernel, runs its cells and
reads what JupyterLab rendered. Screenshots of the cells are saved under
``$LACKPY_SCREENSHOTS`` when it is set, to look at.
"""

from __future__ import annotations

import os

import pytest

from tests.support import loopback as lb
from tests.support.kernel import KERNEL_NAME, make_workspace
from tests.support.lab import (
    NotebookPage,
    chromium_missing,
    lab_in_chromium,
    screenshot_dir,
    write_notebook,
)

pytestmark = pytest.mark.skipif(chromium_missing() is not None, reason=chromium_missing() or "")

CELLS = [
    "read_file('notes.txt').splitlines()",
    "find_definitions('helper') + find_definitions('main')",
    "for x in range(3):\n    print('line', x)",
    "{'group' + str(g): [{'i': i, 'square': i * i} for i in range(20)] for g in range(3)}",
    "{str(i): [i, i * i] for i in range(40)}",
    "{'name': 'notes.txt', 'lines': 3}",
    "%delegate --kit read_file,write_file --run copy the notes",  # last: it inserts a cell
]
WORDS, ROWS, LOOP, NESTED, LONG_FLAT, SMALL_DICT, APPROVAL = range(len(CELLS))
COPY_TEMPLATE = ("---\nname: copy\npattern: copy the notes\n---\n"
                 "write_file('copy.txt', read_file('notes.txt'))\n'copied'\n")


MODEL_PIECES = ["lines = read_file(", "'notes.txt').splitlines()\n", "len(lines)"]


@pytest.fixture(scope="module")
def model():
    """A model tier that writes the start of a program, then goes quiet (until closed)."""
    with lb.LoopbackServer(default=lb.ollama_stream(MODEL_PIECES, stall_after=2)) as server:
        yield server


@pytest.fixture(scope="module")
def lab(installed_kernelspec, model, tmp_path_factory):
    pytest.importorskip("playwright.sync_api", reason="Playwright is in the test extra")
    root = make_workspace(tmp_path_factory.mktemp("lab-root"), (
        f'[inference]\norder = ["local"]\n[inference.providers.local]\nplugin = "ollama"\n'
        f'host = "{model.url}"\nmodel = "m"\nmax_retries = 0\nstream_idle_timeout = 300\n'
        f'request_timeout = 300\n'))
    (root / ".lackpy" / "templates").mkdir()
    (root / ".lackpy" / "templates" / "copy.tmpl").write_text(COPY_TEMPLATE)
    write_notebook(root / "outputs.ipynb", KERNEL_NAME, CELLS)
    with lab_in_chromium(root, tmp_path_factory.mktemp("lab-state"),
                         dict(os.environ)) as (server, browser):
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        notebook = NotebookPage(page, server, "outputs.ipynb")
        notebook.run_all()
        yield notebook


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    return screenshot_dir(tmp_path_factory.mktemp("screenshots"))


def test_a_modest_list_shows_as_its_text(lab):
    assert lab.text_output(WORDS) == "['alpha', 'beta', 'gamma']"
    assert lab.cell(WORDS).locator(".jp-RenderedJSON").count() == 0


def test_a_small_dict_shows_as_its_text(lab, shots):
    assert lab.text_output(SMALL_DICT) == "{'name': 'notes.txt', 'lines': 3}"  # in its own order
    lab.screenshot(SMALL_DICT, shots / "small-dict.png")


def test_a_list_of_dicts_shows_as_a_table(lab, shots):
    table = lab.cell(ROWS).locator(".jp-OutputArea-output[data-mime-type='text/html'] table").last
    headers = table.locator("th").all_inner_texts()
    assert {"name", "file", "line"} <= set(headers)
    names = table.locator("tbody tr td:first-child").all_inner_texts()
    assert len(names) == 2
    aligned = table.locator("tbody tr").first.locator("td").evaluate_all(
        "cells => cells.map(cell => getComputedStyle(cell).textAlign)")
    by_column = dict(zip(headers, aligned, strict=True))  # Lab's own style is right for all
    assert (by_column["name"], by_column["file"], by_column["line"]) == ("left", "left", "right")
    assert lab.cell(ROWS).locator(".jp-RenderedJSON").count() == 0
    lab.screenshot(ROWS, shots / "table.png")


def test_large_nested_data_folds_as_a_json_tree(lab, shots):
    assert lab.cell(NESTED).locator(".jp-RenderedJSON").count() == 1
    lab.screenshot(NESTED, shots / "json-tree.png")


def test_long_data_whose_items_fit_a_line_each_stays_text(lab):
    assert lab.cell(LONG_FLAT).locator(".jp-RenderedJSON").count() == 0
    assert lab.text_output(LONG_FLAT).splitlines()[:2] == ["{'0': [0, 0],", " '1': [1, 1],"]


def test_the_trace_is_a_closed_summary_that_opens(lab, shots):
    summary = lab.cell(WORDS).locator("details > summary").first
    assert summary.inner_text().startswith("trace: 1 tool call")
    assert not lab.cell(WORDS).locator("details table").first.is_visible()
    summary.click()
    assert lab.cell(WORDS).locator("details table").first.is_visible()
    lab.screenshot(WORDS, shots / "trace.png")


def test_a_program_cell_is_highlighted_as_python(lab):
    seen = lab.cell(LOOP).locator(".cm-content").evaluate(
        """content => {
            const keyword = [...content.querySelectorAll('span')].find(s => s.textContent === 'for');
            const line = content.querySelector('.cm-line');
            return {language: content.dataset.language,
                    keyword: keyword ? getComputedStyle(keyword).color : null,
                    plain: getComputedStyle(line).color};
        }""")
    assert seen["language"] == "python"
    assert seen["keyword"] is not None and seen["keyword"] != seen["plain"]
    assert lab.outputs(LOOP).last.inner_text().splitlines() == ["line 0", "line 1", "line 2"]


def test_a_program_that_would_write_is_inserted_not_run_and_the_cell_says_why(lab, shots):
    card = lab.cell(APPROVAL).locator(".lackpy-Progress")  # the extension's card, first
    assert card.locator(".lackpy-Progress-title").inner_text() == "delegating: copy the notes ..."
    assert card.locator(".lackpy-Progress-badge").inner_text() == "templates"
    status, held = lab.outputs(APPROVAL).nth(1).inner_text().strip().splitlines()
    assert status.startswith("written by templates")
    assert status.endswith("it is in the next cell, not run")
    assert "not run: it calls write_file" in held  # a notice, not an error: not red
    assert lab.cell(APPROVAL).locator("[data-mime-type='application/vnd.jupyter.stderr']").count() == 0
    assert lab.source(APPROVAL + 1) == ("%kit read_file,write_file\n"
                                        "write_file('copy.txt', read_file('notes.txt'))\n'copied'")
    assert not (lab.server.root / "copy.txt").exists()
    lab.screenshot(APPROVAL, shots / "write-approval.png")


def test_shift_tab_inside_a_tool_call_shows_the_tool(lab, shots):
    editor = lab.cell(WORDS).locator(".cm-content")
    editor.click()
    lab.page.keyboard.press("Control+Home")
    for _ in range(len("read_file('no")):  # the cursor inside the string argument
        lab.page.keyboard.press("ArrowRight")
    lab.page.keyboard.press("Shift+Tab")
    tooltip = lab.page.locator(".jp-Tooltip")
    tooltip.wait_for(timeout=30_000)
    # the box appears before its Markdown is rendered into it
    lab.page.wait_for_function(
        "() => (document.querySelector('.jp-Tooltip')?.innerText || '').trim() !== ''",
        timeout=30_000)
    assert tooltip.inner_text().startswith("read_file(path: str) -> str")
    lab.page.screenshot(path=str(shots / "shift-tab.png"))
    lab.page.keyboard.press("Escape")


def test_tab_inside_a_file_tools_string_offers_workspace_paths(lab, shots):
    lab.cell(LOOP).locator(".cm-content").click()
    lab.page.keyboard.press("Control+End")
    lab.page.keyboard.press("Enter")
    lab.page.keyboard.type("text = read_file('no")
    lab.page.keyboard.press("Tab")
    offered = lab.page.locator(".jp-Completer .jp-Completer-item")
    offered.first.wait_for(timeout=30_000)
    assert offered.all_inner_texts() == ["notes.txt"]
    lab.page.screenshot(path=str(shots / "path-completion.png"))
    lab.page.keyboard.press("Escape")


def test_the_progress_display_shows_a_model_writing_and_the_stop_button_ends_it(lab, shots):
    index = lab.add_cell("%delegate summarise the notes")  # no template or rule: the model
    card = lab.cell(index).locator(".lackpy-Progress")  # the extension's card
    program = card.locator(".lackpy-Progress-program pre")
    program.wait_for(timeout=60_000)
    lab.page.wait_for_function("pre => pre.innerText.startsWith(\"lines = read_file('notes.txt')\")",
                               arg=program.element_handle(), timeout=60_000)
    assert card.locator(".lackpy-Progress-label").inner_text() == "local is writing (generate)"
    assert card.locator(".lackpy-Progress-title").inner_text() == "delegating: summarise the notes ..."
    assert card.locator(".lackpy-Progress-state").inner_text().lower() == "running"
    names = card.locator(".lackpy-Progress-name").all_inner_texts()
    statuses = card.locator(".lackpy-Progress-status").all_inner_texts()
    assert dict(zip(names, statuses, strict=True))["local"] == "trying"
    lab.screenshot(index, shots / "progress.png")
    lab.menu("Kernel", "Interrupt Kernel")
    error = lab.cell(index).locator("[data-mime-type='application/vnd.jupyter.stderr']")
    error.last.wait_for(timeout=60_000)
    assert "KeyboardInterrupt" in error.last.inner_text()
    lab.page.wait_for_function(
        "card => card.querySelector('.lackpy-Progress-state').innerText.toLowerCase() === 'interrupted'",
        arg=card.element_handle(), timeout=60_000)
    assert card.locator(".lackpy-Progress-program").count() == 0  # nothing was written
    assert lab.source(index + 1).strip() == ""  # Shift-Enter's new empty cell: no program was inserted
