"""Run each of the project's notebooks from the same clean state, and leave it clean.

nbval runs only the notebooks ``make_notebooks.NOTEBOOKS`` lists: one a user saves here
(JupyterLab opened in this folder, an ``Untitled.ipynb``) is theirs, not a test. The
notebooks write into their folders' ``.lackpy/`` (see ``make_notebooks.clean``), so
those files are removed before a notebook's first cell and after its last.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lackpy_kernel.notebook.bundles import PROGRESS_MIME, TRACE_MIME
from notebooks.make_notebooks import clean, is_project_notebook

# Data for the Lab extension's renderers: nbval compares what every front end shows
# (text/plain, text/html) and leaves these out, so a stored notebook reads as before.
LAB_ONLY_MIME_TYPES = (TRACE_MIME, PROGRESS_MIME)


def pytest_ignore_collect(collection_path: Path) -> bool | None:
    """Leave out every notebook that is not the project's."""
    if collection_path.suffix == ".ipynb" and not is_project_notebook(collection_path):
        return True
    return None


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """nbval compares every cell's outputs without the Lab extension's MIME types."""
    for notebook in {item.parent for item in items if hasattr(item.parent, "skip_compare")}:
        notebook.skip_compare = (*notebook.skip_compare, *LAB_ONLY_MIME_TYPES)  # type: ignore[union-attr]


def _notebook_folder(item: pytest.Item) -> Path | None:
    path = Path(str(item.path))
    return path.parent if path.suffix == ".ipynb" else None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    folder = _notebook_folder(item)
    if folder is not None and getattr(item, "cell_num", None) == 0:
        clean(folder)


def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    folder = _notebook_folder(item)
    if folder is not None and (nextitem is None or nextitem.parent is not item.parent):
        clean(folder)
