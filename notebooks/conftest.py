"""Run each example notebook from the same clean state, and leave it clean.

The notebooks write into their folders' ``.lackpy/`` (see ``make_notebooks.clean``),
so those files are removed before a notebook's first cell and after its last.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from notebooks.make_notebooks import clean


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
