"""plugin = "mcp": an MCP server written with the official SDK, over stdio and streamable HTTP."""

from __future__ import annotations

import os
import signal
import time

import pytest

from lackpy_kernel.errors import ToolCallError, ToolCallTimeoutError, UnknownToolError
from lackpy_kernel.kit import builtin_toolbox, resolve_kit
from lackpy_kernel.kit.sources import ToolSources
from lackpy_kernel.kit.sources.mcp import DEFAULT_CALL_TIMEOUT, EventLoopThread, McpToolSource
from lackpy_kernel.run import RestrictedRunner
from tests.support.mcp_servers import (
    TOOL_SERVER,
    free_port,
    hostile_settings,
    http_tool_server,
    tool_server_settings,
)

SHARED = {
    # the server with all its tools; slow may take 1 s
    "calc": tool_server_settings(overrides={"slow": {"timeout": 1}}),
    # some of them, renamed, graded by the config
    "picked": tool_server_settings(tools=["add", "get-issue", "remember", "nope"], prefix="p_",
                                   grade="read", overrides={"add": {"grade": "write"},
                                                            "shuot": {"grade": "read"}}),
    # one that cannot start
    "gone": tool_server_settings(command=["no-such-mcp-server", "stdio"]),
}


@pytest.fixture(scope="module")
def shared_sources(tmp_path_factory):
    """The SHARED sources, for the tests that leave their servers as they found them (starting
    the SDK's server costs seconds: it imports a web framework)."""
    workspace = tmp_path_factory.mktemp("mcp-ws")
    toolbox = builtin_toolbox(workspace)
    sources = ToolSources(SHARED, workspace)
    sources.attach(toolbox)
    yield toolbox, sources, workspace
    sources.close()


@pytest.fixture(scope="module")
def shared(shared_sources):
    return shared_sources[0]


@pytest.fixture(scope="module")
def configured(tmp_path_factory):
    """A server started with env (one value from our environment), cwd, and `python` as its
    command while PATH leads nowhere."""
    workspace = tmp_path_factory.mktemp("mcp-env")
    (workspace / "sub").mkdir()
    toolbox = builtin_toolbox(workspace)
    settings = tool_server_settings(command=["python", str(TOOL_SERVER)], cwd="sub",
                                    tools=["environment", "working_folder"],
                                    env={"TOKEN": "Bearer ${LACKPY_TEST_SECRET}", "PLAIN": "x"})
    sources = ToolSources({"configured": settings}, workspace)
    sources.attach(toolbox)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LACKPY_TEST_SECRET", "s3cret")
        patch.setenv("PATH", "/nonexistent")
        assert sources.check()[0].ok
    yield toolbox, workspace
    sources.close()


@pytest.fixture(scope="module")
def http_url():
    with http_tool_server() as url:
        yield url


def wait_until_gone(pid: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.01)
    raise AssertionError(f"process {pid} is still there")


def call(toolbox, name, *args, **kwargs):
    return toolbox.resolve(name)(*args, **kwargs)


def test_the_servers_tools_are_described_like_built_ins(shared):
    add = shared.get("add")
    assert add.describe() == "add(a: int, b: int = 2) -> int: Add two integers."
    assert add.source.startswith("calc (mcp: ") and str(TOOL_SERVER) in add.source
    assert shared.get("lines").signature() == "lines(count: int) -> list[str]"
    assert shared.get("person").returns == "Any"
    assert shared.get("remember").returns == "dict"


def test_grade_comes_from_the_read_only_hint(shared):
    assert (shared.get("add").grade_w, shared.get("add").effects_ceiling) == (1, 1)
    assert (shared.get("remember").grade_w, shared.get("remember").effects_ceiling) == (3, 3)


def test_a_name_that_is_not_a_python_name_is_called_with_underscores(shared):
    assert shared.get("get_issue").provider_config["mcp_name"] == "get-issue"
    assert call(shared, "get_issue", 7) == "issue 7: it does not work"


def test_results_come_back_as_plain_data(shared):
    assert call(shared, "add", 1) == 3  # the server's default for b
    assert call(shared, "add", 1, b=5) == 6
    assert call(shared, "shout", "hi", times=2) == "HI HI"
    assert call(shared, "lines", 2) == ["line 1", "line 2"]
    assert call(shared, "person", "ada") == {"name": "ada", "tags": ["a", "b"], "size": 3}
    assert call(shared, "remember", "k", "v") == {"k": "v"}


def test_a_failing_tool_raises_a_tool_call_error_and_the_server_keeps_working(shared):
    with pytest.raises(ToolCallError, match=r"tool 'fail' from tool source 'calc' \(mcp: .*\) "
                                            r"failed: .*the disk is full"):
        call(shared, "fail", "the disk is full")
    assert call(shared, "add", 2, 2) == 4


def test_wrong_arguments_fail_before_the_server_is_asked(shared):
    with pytest.raises(TypeError, match="missing a required argument: 'a'"):
        call(shared, "add")
    with pytest.raises(ToolCallError, match="a complex cannot be sent to an MCP server"):
        call(shared, "add", 1 + 2j)


def test_the_server_refuses_arguments_of_the_wrong_type(shared):
    with pytest.raises(ToolCallError, match="(?s)tool 'add' .* failed: .*valid integer"):
        call(shared, "add", "one")


def test_programs_call_mcp_tools_with_every_call_traced(shared):
    kit = resolve_kit(["add", "lines"], shared)
    result = RestrictedRunner().run("rows = lines(add(1, b=1))\nlen(rows)", kit.callables)
    assert result.success and result.output == 2
    assert [(entry.tool, entry.args, entry.success) for entry in result.trace.entries] == [
        ("add", {"a": 1, "b": 1}, True), ("lines", {"count": 2}, True)]


def test_tools_and_prefix_choose_and_rename_the_servers_tools(shared):
    listed = [spec.name for spec in shared.list_tools() if spec.provider == "picked"]
    assert listed == ["p_add", "p_remember", "p_get_issue"]  # in the server's order
    assert call(shared, "p_add", 40) == 42


def test_names_the_server_lacks_are_reported(shared_sources):
    toolbox, sources, _ = shared_sources
    toolbox.list_tools()
    problems = sources.statuses()[1].problems
    assert problems[0].startswith("tools names 'nope', which the server does not offer "
                                  "(it offers: add, ")
    assert problems[1].startswith("overrides names 'shuot', which this source does not offer")


def test_the_config_grade_and_overrides_win_over_the_servers_hints(shared):
    assert [shared.get(name).grade_w for name in ("p_add", "p_remember")] == [3, 1]


def test_a_call_past_its_timeout_fails_and_the_server_survives(shared):
    pid = call(shared, "server_pid")
    with pytest.raises(ToolCallTimeoutError, match="tool 'slow' .* took longer than its 1 s "
                                                   "timeout"):
        call(shared, "slow", 120)
    assert call(shared, "server_pid") == pid


def test_the_source_timeout_applies_to_every_tool_unless_overridden(workspace):
    source = McpToolSource("s", tool_server_settings(timeout=5, overrides={"slow": {
        "timeout": 0.5}}), workspace, EventLoopThread())
    assert (source.timeout_of("add"), source.timeout_of("slow")) == (5.0, 0.5)
    assert McpToolSource("t", tool_server_settings(), workspace, EventLoopThread()
                         ).timeout_of("add") == DEFAULT_CALL_TIMEOUT


def test_a_server_that_dies_mid_call_fails_that_call_and_starts_again_on_the_next(
        make_sources):
    toolbox, _ = make_sources(calc=tool_server_settings())
    first = call(toolbox, "server_pid")
    with pytest.raises(ToolCallError, match="stopped answering during the call: the process "
                                            "exited with status 7; it is started again"):
        call(toolbox, "exit_now", 7)
    second = call(toolbox, "server_pid")
    assert second != first


def test_a_server_that_died_while_idle_is_started_again_before_the_next_call(make_sources):
    toolbox, _ = make_sources(calc=tool_server_settings())
    first = call(toolbox, "server_pid")
    os.kill(first, signal.SIGKILL)
    wait_until_gone(first)
    assert call(toolbox, "add", 1) == 3
    assert call(toolbox, "server_pid") != first


def test_close_stops_the_server_and_a_later_call_starts_it_again(make_sources):
    toolbox, sources = make_sources(calc=tool_server_settings())
    pid = call(toolbox, "server_pid")
    sources.close()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert call(toolbox, "server_pid") != pid


def test_env_reaches_the_server_with_variables_from_ours(configured):
    toolbox, _ = configured
    assert call(toolbox, "environment", "TOKEN") == "Bearer s3cret"
    assert call(toolbox, "environment", "PLAIN") == "x"
    assert call(toolbox, "environment", "LACKPY_TEST_SECRET") == ""  # not passed through


def test_the_server_runs_in_cwd_inside_the_workspace(configured):
    toolbox, workspace = configured
    assert call(toolbox, "working_folder") == os.path.realpath(workspace / "sub")


def test_python_as_the_command_is_the_interpreter_lackpy_runs_on(configured):
    toolbox, _ = configured
    assert call(toolbox, "environment", "PATH") == "/nonexistent"  # it started all the same


def test_a_variable_the_environment_lacks_is_named(make_sources, monkeypatch):
    monkeypatch.delenv("LACKPY_TEST_UNSET", raising=False)
    _, sources = make_sources(calc=tool_server_settings(env={"T": "${LACKPY_TEST_UNSET}"}))
    status = sources.check()[0]
    assert "env.T uses ${LACKPY_TEST_UNSET}, which is not set in the environment" in status.error


def test_a_server_runs_in_the_workspace_by_default(shared_sources):
    toolbox, _, workspace = shared_sources
    assert call(toolbox, "working_folder") == os.path.realpath(workspace)


def test_a_command_that_does_not_exist_is_named(make_sources):
    _, sources = make_sources(gh=tool_server_settings(command=["no-such-mcp-server", "stdio"]))
    status = sources.check()[0]
    assert status.error == ("tool source 'gh' (mcp: no-such-mcp-server stdio): the command "
                            "'no-such-mcp-server' was not found; check command in the source's "
                            "settings (and PATH)")


def test_a_server_that_crashes_on_start_shows_the_end_of_its_stderr(make_sources):
    _, sources = make_sources(bad=hostile_settings("crash"))
    status = sources.check()[0]
    assert "the server did not start" in status.error
    assert "No module named 'server_dependency'" in status.error


def test_a_server_that_never_answers_fails_after_startup_timeout_and_says_what_it_printed(
        make_sources):
    _, sources = make_sources(chatty=hostile_settings("chatty", startup_timeout=2))
    status = sources.check()[0]
    assert "the server did not answer within 2 s of starting" in status.error
    assert "'starting the server... ready!'" in status.error
    assert "an MCP server must write only MCP messages there (log to stderr)" in status.error


def test_a_failed_server_leaves_the_other_sources_working(shared_sources):
    toolbox, sources, _ = shared_sources
    assert call(toolbox, "add", 5) == 7
    assert [status.ok for status in sources.check()] == [True, True, False]
    with pytest.raises(UnknownToolError, match="tool source 'gone' .* was not found"):
        toolbox.get("gh_issue")


def test_streamable_http_lists_and_calls_the_servers_tools(make_sources, http_url):
    toolbox, sources = make_sources(web={"plugin": "mcp", "url": http_url,
                                         "tools": ["add", "get-issue", "request_header"]})
    assert call(toolbox, "add", 1, b=1) == 2
    assert call(toolbox, "get_issue", 3) == "issue 3: it does not work"
    assert toolbox.get("add").source == f"web (mcp: {http_url})"


def test_http_headers_come_from_the_environment(make_sources, http_url, monkeypatch):
    monkeypatch.setenv("LACKPY_TEST_TOKEN", "abc123")
    toolbox, _ = make_sources(web={"plugin": "mcp", "url": http_url, "tools": ["request_header"],
                                   "headers": {"Authorization": "Bearer ${LACKPY_TEST_TOKEN}"}})
    assert call(toolbox, "request_header", "authorization") == "Bearer abc123"


def test_an_http_server_that_is_not_there_fails_to_load_clearly(make_sources):
    _, sources = make_sources(web={"plugin": "mcp", "url": f"http://127.0.0.1:{free_port()}/mcp",
                                   "startup_timeout": 60})
    status = sources.check()[0]
    assert status.error.startswith("tool source 'web' (mcp: http://127.0.0.1:")
    assert "did not start" in status.error


def test_an_mcp_tool_and_a_python_tool_with_one_name_go_to_the_first_source(workspace,
                                                                           make_sources):
    (workspace / "mine.py").write_text("def add(a, b):\n    'Add, badly.'\n    return 0\n")
    toolbox, sources = make_sources(mine={"plugin": "python", "path": "mine.py"},
                                    calc=tool_server_settings(tools=["add", "shout"]))
    toolbox.list_tools()
    assert call(toolbox, "add", 1, 1) == 0
    assert sources.statuses()[1].problems == [
        "tool 'add' is refused: the name is taken by mine (python: mine.py); rename one of "
        "them (an MCP source can set prefix)"]
    assert call(toolbox, "shout", "x") == "X"


def test_a_server_starts_only_when_a_kit_needs_a_tool_it_may_hold(make_sources):
    toolbox, sources = make_sources(calc=tool_server_settings())
    resolve_kit(["read_file", "find_files"], toolbox)
    assert sources.statuses()[0].state == "not loaded"
    assert sources.sources[0].connection.stdio is None  # no process was started
    resolve_kit(["read_file", "add"], toolbox)
    assert sources.statuses()[0].state == "loaded"
