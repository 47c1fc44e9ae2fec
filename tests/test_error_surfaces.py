"""Every surface shows an expected failure as one short message, and a bug as a bug.

An unknown kit is a LackpyError (KitError): each surface says which kit and which exist,
without frames of lackpy's internals. A TypeError inside the service is a bug: no surface
may dress it up as a kit problem. The bug is injected either through a public extension
point (a tool provider registered on the toolbox, as a user's plugin would be) or, where a
surface builds its own service, by making ``LackpyService.resolve_kit`` raise.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from lackpy_kernel import cli
from lackpy_kernel.errors import KitError, UnknownKitError
from lackpy_kernel.kit import ToolSpec
from lackpy_kernel.mcp_server import build_server
from lackpy_kernel.service import LackpyService
from tests.support.faulty_kernel import BUG, BrokenProvider
from tests.support.shell import extension_shell, magics_of

NO_KIT = "no kit named 'nosuchkit'"
KNOWN = "available kits: debug"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "notes.txt").write_text("alpha\n")
    (folder / "one.lackpy").write_text("1 + 1\n")
    return folder


@pytest.fixture
def buggy_resolve(monkeypatch):
    def resolve_kit(self, kit=None, *, extra_tools=None):
        raise TypeError(BUG)

    monkeypatch.setattr(LackpyService, "resolve_kit", resolve_kit)


# -- the service ---------------------------------------------------------------------


async def test_service_an_unknown_kit_is_a_kit_error(workspace):
    with LackpyService(workspace) as service:
        with pytest.raises(UnknownKitError, match=f"{NO_KIT}.*{KNOWN}"):
            await service.run_program("1", kit="nosuchkit")


async def test_service_a_bug_in_a_tool_provider_is_not_a_kit_error(workspace):
    with LackpyService(workspace) as service:
        service.toolbox.register_provider(BrokenProvider())
        service.toolbox.register_tool(ToolSpec("broken", "broken"))
        with pytest.raises(TypeError, match=BUG) as caught:
            await service.run_program("broken()", kit=["broken"])
    assert not isinstance(caught.value, KitError)


# -- the IPython extension -----------------------------------------------------------


def test_extension_an_unknown_kit_shows_one_line_without_internals(workspace, tmp_path, capsys):
    with extension_shell(workspace, tmp_path / "ipython") as shell:
        outcome = shell.run_cell("%%lackpy --kit nosuchkit\n1 + 1")
    assert isinstance(outcome.error_in_exec, UnknownKitError)
    shown = capsys.readouterr().out
    assert f"UnknownKitError: {NO_KIT}" in shown and KNOWN in shown
    assert "Traceback" not in shown and "service.py" not in shown


def test_extension_a_bug_is_a_bug_with_its_traceback(workspace, tmp_path, capsys):
    with extension_shell(workspace, tmp_path / "ipython") as shell:
        toolbox = magics_of(shell).service.toolbox
        toolbox.register_provider(BrokenProvider())
        toolbox.register_tool(ToolSpec("broken", "broken"))
        outcome = shell.run_cell("%%lackpy --kit broken\nbroken()")
    assert type(outcome.error_in_exec) is TypeError
    shown = re.sub(r"\x1b\[[0-9;]*m", "", capsys.readouterr().out)  # IPython colours it
    assert "Traceback" in shown and shown.rstrip().endswith(f"TypeError: {BUG}")


# -- the command line ----------------------------------------------------------------


def test_cli_an_unknown_kit_is_one_line_and_exit_status_2(workspace):
    done = subprocess.run([sys.executable, "-m", "lackpy_kernel", "run", "one.lackpy", "--kit",
                           "nosuchkit"], cwd=workspace, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"lackpy: {NO_KIT}") and KNOWN in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_cli_a_bug_is_raised_not_reported_as_a_kit_problem(workspace, buggy_resolve, capsys):
    with pytest.raises(TypeError, match=BUG):
        cli.main(["run", str(workspace / "one.lackpy"), "--workspace", str(workspace)])
    assert "kit" not in capsys.readouterr().err


# -- the MCP server ------------------------------------------------------------------


async def test_mcp_an_unknown_kit_is_a_tool_error_naming_it_and_what_exists(workspace):
    async with Client(build_server(workspace)) as client:
        result = await client.call_tool("run_program", {"program": "1", "kit": "nosuchkit"})
    text = "\n".join(getattr(block, "text", "") for block in result.content)
    assert result.is_error and NO_KIT in text and KNOWN in text
    assert "Traceback" not in text


async def test_mcp_a_bug_is_not_reported_as_a_kit_problem(workspace, buggy_resolve):
    async with Client(build_server(workspace)) as client:
        result = await client.call_tool("run_program", {"program": "1", "kit": "debug"})
    text = "\n".join(getattr(block, "text", "") for block in result.content)
    # the SDK logs the bug's traceback and tells the client only that the tool failed
    assert result.is_error and text == "Error executing tool run_program"
