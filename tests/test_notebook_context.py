"""Notebook context on every surface: the service, a session, the extension, MCP and the CLI.

The model is a loopback Ollama server that records what it was asked, so each test reads
the prompt as the model received it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from lackpy_kernel.config import LackpyConfig
from lackpy_kernel.errors import UsageError
from lackpy_kernel.mcp_server import build_server
from lackpy_kernel.service import LackpyService, NotebookContext
from lackpy_kernel.session import LackpySession
from tests.support import loopback as lb
from tests.support.shell import extension_shell

PROGRAM = "len(text.splitlines())"


@pytest.fixture
def model():
    with lb.LoopbackServer(default=lb.ollama_answer(PROGRAM)) as server:
        yield server


def _config_text(server: lb.LoopbackServer) -> str:
    return (f'[inference]\norder = ["local"]\n[inference.providers.local]\nplugin = "ollama"\n'
            f'host = "{server.url}"\nmodel = "m"\nmax_retries = 0\nstream = false\n')


@pytest.fixture
def workspace(tmp_path: Path, model) -> Path:
    (tmp_path / ".lackpy").mkdir()
    (tmp_path / ".lackpy" / "config.toml").write_text(_config_text(model))
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    return tmp_path


def _prompt(server: lb.LoopbackServer) -> str:
    return server.requests[-1].json["messages"][0]["content"]


def test_a_context_describes_values_as_the_mode_says():
    values = {"text": "alpha\nbeta\n", "n": 3}
    previews = NotebookContext.of_values(values, "previews")
    assert previews.names == {"text", "n"}
    assert "text: str, 11 chars, 3 lines = 'alpha\\nbeta\\n'" in previews.description
    assert NotebookContext.of_values(values, "names").description.splitlines() == [
        "n: int", "text: str, 11 chars, 3 lines"]
    assert NotebookContext.of_values(values, "none") == NotebookContext(frozenset(values), None)


async def test_the_service_delegates_with_variables_and_runs_with_those_it_uses(workspace, model):
    with LackpyService(workspace) as service:
        result = await service.delegate("count the lines of text", "read_file",
                                        variables={"text": "a\nb\nc", "unused": [1, 2]})
        assert "text: str, 5 chars, 3 lines = 'a\\nb\\nc'" in _prompt(model)
        assert result["success"] and result["output"] == 3 and result["uses"] == ["text"]
        with pytest.raises(UsageError, match="variables must be plain data"):
            await service.delegate("count the lines of text", variables={"f": print})


@pytest.mark.parametrize("sandboxed", [True, False], ids=["sandbox", "in-process"])
async def test_a_sessions_variables_are_described_where_they_live(workspace, model, sandboxed):
    config = LackpyConfig(inference_order=["templates", "rules", "local"],
                          inference_providers={"local": {"plugin": "ollama", "host": model.url,
                                                         "model": "m", "max_retries": 0,
                                                         "stream": False}},
                          sandbox_enabled=sandboxed)
    with LackpyService(workspace, config) as service:
        session = LackpySession(service, ["read_file"])
        assert (await session.run("text = read_file('notes.txt')")).success
        context = session.context()
        assert context.names == {"text"}
        assert context.description == "text: str, 11 chars, 3 lines = 'alpha\\nbeta\\n'"
        delegation = await session.delegate("count the lines of text", run=True)
        session.close()
    assert delegation.uses == ("text",) and delegation.result.output == 2


def test_the_extension_offers_the_python_notebooks_plain_variables(workspace, model, tmp_path):
    with extension_shell(workspace, tmp_path / "ipython") as shell:
        shell.run_cell("text = 'one\\ntwo'\nimport json\nhelper = lambda: 1")
        assert shell.run_line_magic("delegate", "--run count the lines of text") == 2
        prompt = _prompt(model)
        inserted = shell.rl_next_input
        # a %%lackpy cell reads notebook variables it names, as parameters
        assert shell.run_cell_magic("lackpy", "", "len(text.splitlines()) + 1") == 3
    assert "text: str, 7 chars, 2 lines = 'one\\ntwo'" in prompt
    assert "json" not in prompt.split("The notebook's variables", 1)[1]  # a module is no data
    assert "helper" not in prompt.split("The notebook's variables", 1)[1]
    assert inserted.splitlines()[:2] == ["%%lackpy", "# uses the notebook's text"]


async def test_mcp_clients_pass_variables_to_delegate_and_generate(workspace, model):
    async with Client(build_server(workspace)) as client:
        written = await client.call_tool("generate", {"intent": "count the lines of text",
                                                      "variables": {"text": "x\ny"}})
        ran = await client.call_tool("delegate", {"intent": "count the lines of text",
                                                  "kit": "read_file",
                                                  "variables": {"text": "x\ny\nz"}})
    assert written.structured_content["program"] == PROGRAM
    assert ran.structured_content["output"] == 3 and ran.structured_content["uses"] == ["text"]
    assert "text: str, 5 chars, 3 lines = 'x\\ny\\nz'" in _prompt(model)


def test_the_cli_reads_variables_from_a_json_file(workspace, model):
    (workspace / "vars.json").write_text(json.dumps({"text": "p\nq"}))
    done = subprocess.run([sys.executable, "-m", "lackpy_kernel", "delegate",
                           "count the lines of text", "--variables", "vars.json", "--json"],
                          cwd=workspace, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["output"] == 2
    bad = subprocess.run([sys.executable, "-m", "lackpy_kernel", "delegate", "x",
                          "--variables", "missing.json"], cwd=workspace, capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 2 and "cannot read variables from missing.json" in bad.stderr


async def test_a_program_that_binds_a_name_first_does_not_use_the_notebooks(tmp_path):
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    program = "text = read_file('notes.txt')\nlen(text.splitlines())"
    with lb.LoopbackServer(default=lb.ollama_answer(program)) as server:
        (tmp_path / ".lackpy").mkdir()
        (tmp_path / ".lackpy" / "config.toml").write_text(_config_text(server))
        with LackpyService(tmp_path) as service:
            result = await service.delegate("count the lines of notes.txt", "read_file",
                                            variables={"text": "old\nold\nold"})
    assert result["success"] and result["output"] == 2 and result["uses"] == []
