"""papermill runs a lackpy notebook with parameters, as a scheduler would."""

from __future__ import annotations

import os
import subprocess
import sys

import nbformat
import pytest

from tests.support.kernel import KERNEL_NAME, make_workspace

pytest.importorskip("papermill", reason="papermill is in the test extra")


def parameterised_notebook(path):
    notebook = nbformat.v4.new_notebook()
    notebook.metadata.kernelspec = {"name": KERNEL_NAME, "display_name": "lackpy", "language": "lackpy"}
    parameters = nbformat.v4.new_code_cell("name = 'notes.txt'\nlimit = 10")
    parameters.metadata.tags = ["parameters"]
    notebook.cells = [parameters, nbformat.v4.new_code_cell("read_file(name).splitlines()[:limit]")]
    nbformat.write(notebook, path)
    return path


def papermill(*args, cwd):
    return subprocess.run([sys.executable, "-m", "papermill", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300, env=dict(os.environ))


def test_papermill_runs_a_lackpy_notebook_with_its_parameters(installed_kernelspec, tmp_path):
    workspace = make_workspace(tmp_path)
    (workspace / "other.txt").write_text("one\ntwo\nthree\n")
    source = parameterised_notebook(workspace / "in.ipynb")
    done = papermill(source, workspace / "out.ipynb", "-p", "name", "other.txt", "-p", "limit", 2,
                     cwd=workspace)
    assert done.returncode == 0, done.stderr
    cells = nbformat.read(workspace / "out.ipynb", as_version=4).cells
    injected = next(c for c in cells if "injected-parameters" in c.metadata.get("tags", []))
    assert injected.source == '# Parameters\nname = "other.txt"\nlimit = 2\n'
    (result,) = [o for o in cells[-1].outputs if o.output_type == "execute_result"]
    assert result.data["text/plain"] == "['one', 'two']"


def test_papermill_describes_a_lackpy_notebooks_parameters(installed_kernelspec, tmp_path):
    source = parameterised_notebook(make_workspace(tmp_path) / "in.ipynb")
    described = papermill("--help-notebook", source, cwd=tmp_path)
    assert described.returncode == 0, described.stderr
    assert "name: Unknown type (default 'notes.txt')" in described.stdout


def test_the_papermill_module_imports_on_its_own():
    """Imported first, before papermill, it must not meet itself half-imported (papermill
    loads its engine while papermill.engines is being imported)."""
    check = ("import lackpy_kernel.papermill_support as support\n"
             "from papermill.engines import papermill_engines\n"
             "from papermill.translators import papermill_translators\n"
             "assert papermill_engines.get_engine('lackpy') is support.LackpyEngine\n"
             "assert papermill_translators.find_translator('k', 'lackpy') is support.LackpyTranslator\n")
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                          timeout=120, env=dict(os.environ))
    assert done.returncode == 0, done.stderr
