"""What %agent and %replan build from a magic's options and the config, and the log that
follows a run for the live display."""

from __future__ import annotations

import pytest

from lackpy_kernel.config import LackpyConfig
from lackpy_kernel.engines import Agent
from lackpy_kernel.errors import UsageError
from lackpy_kernel.notebook.turns import TurnLog, notebook_agent, notebook_engine
from lackpy_kernel.service import LackpyService
from tests.support import agents
from tests.support import loopback as lb


def test_without_a_model_anywhere_the_magic_says_where_to_set_one(service):
    with pytest.raises(UsageError, match=r"set \[agent\] model .* or pass --model M"):
        notebook_engine(service)


def test_the_config_names_the_model_and_provider(model_env, model_server, workspace):
    agents.write_config(workspace, "ollama", model_server, model="qwen2.5-coder:7b",
                        extra='[agent]\nprovider = "loop"\n')
    with LackpyService(workspace) as service:
        engine = notebook_engine(service)
        assert (engine.provider, engine.chat.model) == ("loop", "qwen2.5-coder:7b")
        assert notebook_engine(service, model="llama3.2:1b").chat.model == "llama3.2:1b"
        assert notebook_engine(service, model="claude-x", provider="anthropic").plugin == "anthropic"


def test_an_agent_is_read_only_unless_writes_are_allowed(model_env, workspace):
    with LackpyService(workspace, LackpyConfig(agent_model="claude-x")) as service:
        assert notebook_agent(service, "debug").auto_run is None
        assert notebook_agent(service, "debug", allow_writes=True).auto_run == "write"
        assert notebook_agent(service, "debug", max_turns=3).engine.max_turns == 3


def test_the_log_follows_a_run_turn_by_turn(model_env, model_server, service, workspace):
    model_server.script(
        lb.tool_turn("anthropic", "Reading\nboth.", [("read_file", {"path": "notes.txt"}),
                                                     ("reed_file", {"path": "x"})]),
        lb.tool_turn("anthropic", "Done."))
    log = TurnLog()
    agent = Agent(agents.engine("anthropic", model_server, workspace), tools="debug",
                  service=service)
    agent.run("read", on_event=log)
    rows = log.rows()
    assert [row[:3] for row in rows] == [
        ["1", "model: Reading both.", "tools"],
        ["1", "read_file(path='notes.txt')", "ok"],
        ["1", "reed_file(path='x')", "failed: UnknownTool"],
        ["2", "model: Done.", "answer"],
    ]
    assert rows[1][3].endswith(" ms") and log.turns == 2
