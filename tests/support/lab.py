"""JupyterLab in headless Chromium: a Jupyter server on a loopback port, and a page driving it.

Chromium is Debian's (``apt-get install chromium``); Playwright drives it with
``executable_path``, because ``playwright install`` cannot download a browser here.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import nbformat

from tests.support.ports import free_port

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
# lackpy's server extension, enabled by the command line (as its install enables it)
WITH_SERVER_EXTENSION = "--ServerApp.jpserver_extensions=lackpy_kernel.lab=True"
START_TIMEOUT_S = 120
CELL_TIMEOUT_S = 120


def chromium_missing() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
        return f"no Chromium at {CHROMIUM}: apt-get install chromium"
    return None


class LabServer:
    """``jupyter lab`` serving ``root`` on a free loopback port, with a token, and its own
    settings (no news pop-up), workspaces and runtime folders under ``state``; ``args`` are
    more command-line options."""

    def __init__(self, root: Path, state: Path, env: dict[str, str], *args: str) -> None:
        self.root, self.port, self.token = root, free_port(), secrets.token_hex(16)
        settings = state / "settings" / "@jupyterlab" / "apputils-extension"
        settings.mkdir(parents=True)
        (settings / "notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False}))
        env = {**env, "JUPYTERLAB_SETTINGS_DIR": str(state / "settings"),
               "JUPYTERLAB_WORKSPACES_DIR": str(state / "workspaces"),
               "JUPYTER_RUNTIME_DIR": str(state / "runtime")}
        self.log = (state / "server.log").open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root",
             "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={self.port}", "--ServerApp.port_retries=0",
             f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={root}", *args],
            cwd=root, env=env, stdout=self.log, stderr=subprocess.STDOUT)
        self._wait_until_up(state / "server.log")

    def url(self, path: str) -> str:
        """The address of ``path`` on the server, with the token."""
        return f"http://127.0.0.1:{self.port}/{path.lstrip('/')}?token={self.token}"

    def _wait_until_up(self, log: Path) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"jupyter lab exited: {log.read_text(errors='replace')[-2000:]}")
            try:
                with urllib.request.urlopen(self.url("api/status"), timeout=5) as reply:
                    if reply.status == 200:
                        return
            except OSError:
                time.sleep(0.5)
        raise RuntimeError(f"jupyter lab did not answer in {START_TIMEOUT_S} s")

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        self.log.close()


@contextmanager
def validation_server(factory: Any) -> Iterator[LabServer]:
    """A Jupyter server with lackpy's server extension on (the validation endpoint), in
    folders of its own from ``factory`` (pytest's ``tmp_path_factory``)."""
    running = LabServer(factory.mktemp("root"), factory.mktemp("state"), dict(os.environ),
                        WITH_SERVER_EXTENSION)
    try:
        yield running
    finally:
        running.close()


@contextmanager
def lab_in_chromium(root: Path, state: Path, env: dict[str, str],
                    *args: str) -> Iterator[tuple[LabServer, Any]]:
    """JupyterLab serving ``root`` (its settings in ``state``; ``args``, more of the server's
    options) and Debian's Chromium under Playwright: (server, browser); both closed after."""
    from playwright.sync_api import sync_playwright

    server = LabServer(root, state, env, *args)
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
            try:
                yield server, browser
            finally:
                browser.close()
    finally:
        server.close()


def write_notebook(path: Path, kernel_name: str, cells: list[str]) -> Path:
    """A notebook of code ``cells`` on kernel ``kernel_name``."""
    notebook = nbformat.v4.new_notebook()
    notebook.metadata.kernelspec = {"name": kernel_name, "display_name": kernel_name,
                                    "language": "lackpy"}
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    nbformat.write(notebook, path)
    return path


class NotebookPage:
    """A notebook open in JupyterLab: run its cells, read what each shows."""

    def __init__(self, page: Any, server: LabServer, name: str, workspace: str | None = None) -> None:
        """Open notebook ``name`` (in Lab's ``workspace`` when given: a page of its own)."""
        self.page, self.server = page, server
        page.goto(server.url(f"lab/workspaces/{workspace}/tree/{name}" if workspace else
                             f"lab/tree/{name}"))
        page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=START_TIMEOUT_S * 1000)
        self.wait_idle()

    def wait_idle(self) -> None:
        """Wait until the notebook's kernel is started and idle (the status bar says so)."""
        self.page.wait_for_function(
            """() => [...document.querySelectorAll('#jp-main-statusbar span')].some(
                   item => /\\| Idle$/.test(item.textContent) && !/No Kernel/.test(item.textContent))""",
            timeout=START_TIMEOUT_S * 1000)

    def cell(self, index: int) -> Any:
        """The ``index``-th cell of the notebook (a Playwright locator)."""
        return self.page.locator(".jp-Notebook .jp-Cell").nth(index)

    def run_all(self) -> None:
        """Run every cell (Run > Run All Cells) and wait until each has run."""
        count = self.page.locator(".jp-Notebook .jp-CodeCell").count()
        self.menu("Run", "Run All Cells")
        # Cells a %delegate or %agent inserts below stay unrun; the notebook's own cells all
        # get a number.
        self.page.wait_for_function(
            """count => [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputPrompt')]
                .filter(p => /^\\[\\d+\\]:$/.test(p.textContent.trim())).length >= count""",
            arg=count, timeout=CELL_TIMEOUT_S * 1000)
        self.wait_idle()

    def run_until_asked(self, index: int, timeout_ms: int) -> Any:
        """Run cell ``index`` (it shows a change or a call, then asks); the approval dialog
        (a Playwright locator) once its Apply button is enabled."""
        self.cell(index).locator(".cm-content").click()
        self.page.keyboard.press("Shift+Enter")
        dialog = self.cell(index).locator(".lackpy-Changes")
        dialog.locator("button:enabled", has_text="Apply").wait_for(timeout=timeout_ms)
        return dialog

    def menu(self, title: str, item: str) -> None:
        """Choose ``item`` from the main menu ``title``."""
        self.page.locator("#jp-MainMenu .lm-MenuBar-itemLabel").get_by_text(title, exact=True).click()
        self.page.locator(".lm-Menu .lm-Menu-itemLabel").get_by_text(item, exact=True).click()

    def add_cell(self, source: str) -> int:
        """Type ``source`` into a new cell at the end and run it; returns the cell's index."""
        last = self.page.locator(".jp-Notebook .jp-Cell").count() - 1
        self.cell(last).locator(".jp-InputPrompt").click()
        self.page.keyboard.press("Escape")
        self.page.keyboard.press("b")
        self.page.keyboard.press("Enter")
        self.page.keyboard.type(source)
        self.page.keyboard.press("Shift+Enter")
        return last + 1

    def source(self, index: int) -> str:
        """The text of cell ``index``'s editor."""
        return "\n".join(self.cell(index).locator(".cm-line").all_inner_texts())

    def outputs(self, index: int) -> Any:
        """The rendered outputs of cell ``index``."""
        return self.cell(index).locator(".jp-OutputArea-output")

    def text_output(self, index: int) -> str:
        """The text of cell ``index``'s last output that JupyterLab rendered as plain text."""
        shown = self.outputs(index).and_(self.page.locator("[data-mime-type='text/plain']"))
        return shown.last.inner_text().strip()

    def screenshot(self, index: int, path: Path) -> Path:
        """A picture of cell ``index``, its input and its outputs."""
        self.cell(index).scroll_into_view_if_needed()
        self.cell(index).screenshot(path=str(path))
        return path


def screenshot_dir(fallback: Path) -> Path:
    """Where screenshots go: ``$LACKPY_SCREENSHOTS`` when set (to look at them), else ``fallback``."""
    chosen = Path(os.environ.get("LACKPY_SCREENSHOTS") or fallback)
    chosen.mkdir(parents=True, exist_ok=True)
    return chosen
