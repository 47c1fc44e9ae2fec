"""A plain IPython shell with the lackpy extension loaded, started in a workspace."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

EXTENSION = "lackpy_kernel.extension"


@contextmanager
def extension_shell(workspace: Path, ipython_dir: Path) -> Iterator[InteractiveShell]:
    """An InteractiveShell whose extension serves ``workspace``; unloaded and cleared after."""
    InteractiveShell.clear_instance()
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config, ipython_dir=str(ipython_dir))
    before = os.getcwd()
    os.chdir(workspace)
    try:
        shell.run_line_magic("load_ext", EXTENSION)
    finally:
        os.chdir(before)
    try:
        yield shell
    finally:
        shell.run_line_magic("unload_ext", EXTENSION)
        InteractiveShell.clear_instance()


def magics_of(shell: InteractiveShell):  # -> LackpyMagics
    """The extension's magics object registered on ``shell``."""
    return shell.magics_manager.registry["LackpyMagics"]
