"""Run each example notebook from the same clean state, and leave it clean.

The notebooks write into their folders' ``.lackpy/``: ``%delegate`` keeps a
history there, the ratchet notebook's ``%%create`` saves a template, and the plans
notebook checkpoints its runs in ``plans.sqlite`` and saves a plan in ``plans/``. A
template left over from an earlier run would answer the ratchet's first request,
which must come from the rules tier, so these files are removed before a
notebook's first cell and after its last. All of them are git-ignored.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

FRESH_TEMPLATES = {"ratchet", "agent"}  # folders whose templates the notebook creates itself


def clean(folder: Path) -> None:
    (folder / ".lackpy" / "intents.jsonl").unlink(missing_ok=True)
    if folder.name in FRESH_TEMPLATES:
        shutil.rmtree(folder / ".lackpy" / "templates", ignore_errors=True)
    for store in (folder / ".lackpy").glob("plans.sqlite*"):  # the plans notebook's runs
        store.unlink()
    shutil.rmtree(folder / ".lackpy" / "plans", ignore_errors=True)
    try:
        (folder / ".lackpy").rmdir()  # only when empty: the kernel made it, nothing else is in it
    except OSError:
        pass


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
