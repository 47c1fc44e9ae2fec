"""The example notebooks are fit for nbval: right kernels, tags, real outputs, own folders.

nbval itself (``pytest --nbval``, in ``addopts``) re-runs them and compares the outputs;
these checks need no kernel and catch what a re-run cannot.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from notebooks import make_notebooks
from notebooks.make_notebooks import NOTEBOOKS as LISTED
from notebooks.make_notebooks import execute, notebook_path

REPOSITORY = Path(__file__).resolve().parent.parent
NOTEBOOKS = REPOSITORY / "notebooks"
KERNELS = {name: kernel for name, (kernel, _) in LISTED.items()}


def load(name: str) -> nbformat.NotebookNode:
    return nbformat.read(notebook_path(name), as_version=4)


def code_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [cell for cell in nb.cells if cell.cell_type == "code"]


def test_every_listed_notebook_is_there():
    assert all(notebook_path(name).is_file() for name in KERNELS)


def left_out_of_a_copy(folder: str, names: list[str]) -> set[str]:
    """What a copy of ``notebooks/`` leaves out: what the notebooks write as they run (the
    folders in ``.lackpy/``, its records, Kibitzer's state; see notebooks/.gitignore)."""
    written = {".kibitzer", ".ipynb_checkpoints", "__pycache__", "intents.jsonl"}
    if Path(folder).name == ".lackpy":
        return {name for name in names if name in written or ".sqlite" in name
                or (Path(folder) / name).is_dir()}
    return {name for name in names if name in written}


def checkout_of_the_notebooks(folder: Path) -> Path:
    """``folder`` holding the repository's ``pyproject.toml`` and a copy of ``notebooks/``, to
    save a user's notebooks in or run one: nothing is written into the repository's notebooks,
    which nbval may be running at the same time on another xdist worker."""
    shutil.copy2(REPOSITORY / "pyproject.toml", folder / "pyproject.toml")
    shutil.copytree(NOTEBOOKS, folder / "notebooks", ignore=left_out_of_a_copy)
    return folder


def test_nbval_collects_the_projects_notebooks_and_not_a_users(tmp_path):
    checkout = checkout_of_the_notebooks(tmp_path)
    saved = [checkout / "notebooks" / "Untitled.ipynb", checkout / "notebooks" / "tour" / "Untitled.ipynb"]
    for path in saved:  # as JupyterLab saves a new notebook where it was opened
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1/0")]), path)
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                           "-p", "no:cacheprovider", "notebooks"], cwd=checkout,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    collected = {line.split("::")[0] for line in done.stdout.splitlines() if "::" in line}
    assert collected == {f"notebooks/{name}/{name}.ipynb" for name in KERNELS}


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_valid_with_its_kernel_in_metadata(name):
    nb = load(name)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.name == KERNELS[name]
    assert nb.cells[0].cell_type == "markdown"  # each starts by saying what it shows


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_error_cells_are_exactly_the_tagged_ones(name):
    for cell in code_cells(load(name)):
        failed = any(output.output_type == "error" for output in cell.outputs)
        tagged = "raises-exception" in cell.metadata.get("tags", [])
        assert failed == tagged, cell.source


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_outputs_are_from_one_run_in_order(name):
    counts = [cell.execution_count for cell in code_cells(load(name))]
    assert counts == list(range(1, len(counts) + 1))


@pytest.mark.parametrize("name", sorted(KERNELS))
def test_no_nbval_markers_that_hide_outputs(name):
    for cell in code_cells(load(name)):
        tags = set(cell.metadata.get("tags", []))
        assert not tags & {"nbval-ignore-output", "nbval-skip"}, cell.source
        assert not re.search(r"#\s*NBVAL_(IGNORE_OUTPUT|SKIP)", cell.source), cell.source


def delegate_tiers(name):
    """The tier named by each %delegate status line the notebook's stored outputs hold."""
    texts = [output.text for cell in code_cells(load(name))
             for output in cell.outputs if output.output_type == "stream"]
    return [tier for text in texts for tier in re.findall(r"written by (\S+) in", text)]


def test_the_ratchet_goes_from_rules_to_templates():
    assert delegate_tiers("ratchet") == ["rules", "templates", "templates", "templates"]


def test_the_ratchet_holds_a_program_that_would_write():
    last = code_cells(load("ratchet"))[-1]
    streams = {output.name: output.text for output in last.outputs if output.output_type == "stream"}
    status, held = streams["stdout"].splitlines()
    assert status.endswith("it is in the next cell, not run") and "stderr" not in streams
    assert held.startswith("lackpy: not run: it calls write_file")
    assert not (NOTEBOOKS / "ratchet" / "report.txt").exists()


def test_the_replay_notebook_is_answered_by_replay():
    assert delegate_tiers("replay") == ["replay", "replay"]
    config = (NOTEBOOKS / "replay" / ".lackpy" / "config.toml").read_text()
    assert '"replay"' in config
    records = (NOTEBOOKS / "replay" / ".lackpy" / "replay.jsonl").read_text().splitlines()
    assert [json.loads(line)["provider"] for line in records] == ["ollama-local"] * 2


def test_the_sources_notebook_uses_both_tool_sources_from_cells_and_from_replay():
    assert delegate_tiers("sources") == ["replay"]
    shown = "\n".join(output.data["text/plain"] for cell in code_cells(load("sources"))
                      for output in cell.outputs if output.output_type == "display_data")
    assert "words (python: words.py)" in shown
    assert "glossary (mcp: python glossary.py)" in shown
    errors = [output.ename for cell in code_cells(load("sources")) for output in cell.outputs
              if output.output_type == "error"]
    assert errors == ["ProgramTimeoutError", "WorkspaceError"]


def test_the_sanitize_file_parses_into_patterns():
    text = (NOTEBOOKS / "sanitize.cfg").read_text()
    pairs = re.findall(r"^regex: (.*)$\n^replace: (.*)$", text, flags=re.MULTILINE)  # nbval's reader
    assert len(pairs) == text.count("\nregex: ")
    for regex, _ in pairs:
        re.compile(regex)


def test_generated_files_are_git_ignored():
    generated = ["ratchet/.lackpy/templates/definitions.tmpl", "replay/.lackpy/intents.jsonl",
                 "tour/.lackpy/history.sqlite", "ratchet/.lackpy/usage.sqlite-wal"]
    try:
        result = subprocess.run(["git", "check-ignore", *generated], cwd=NOTEBOOKS,
                                capture_output=True, text=True, check=False)
    except FileNotFoundError:
        pytest.skip("no git")
    if result.returncode == 128:
        pytest.skip("not a git checkout")
    assert result.stdout.split() == generated


def test_the_agent_notebooks_offered_cells_are_what_make_notebooks_expects(tmp_path, monkeypatch):
    """make_notebooks' own check over a fresh run: each %agent puts the cell it names in the
    next one (with --kit, a %kit line first, so the cell runs with the agent's kit)."""
    # in a copy of the notebook's folder: nbval may be running notebooks/agent beside this test
    checkout_of_the_notebooks(tmp_path)
    monkeypatch.setattr(make_notebooks, "HERE", tmp_path / "notebooks")
    nb = execute("agent")  # SystemExit names a cell whose offered program differs
    assert len(code_cells(nb)) == sum(spec["kind"] == "code" for spec in LISTED["agent"][1])
