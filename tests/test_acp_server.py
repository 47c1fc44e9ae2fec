"""``lackpy acp``, driven over stdio by the ACP SDK's own client (a real subprocess)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from acp import RequestError, image_block
from acp.schema import HttpHeader, HttpMcpServer
from markdown_it import MarkdownIt

from lackpy_kernel.acp_server import MODES
from lackpy_kernel.acp_server._commands import COMMANDS
from tests.support import agents, loopback
from tests.support.acp_client import block, lackpy_acp, prompt, settled, template, tool_server
from tests.support.mcp_servers import http_tool_server
from tests.support.processes import children_of, cpu_ticks, gone_within, workers_of

WRITER = "write_file('copy.txt', read_file('notes.txt'))\n'copied'"
SPIN = "sum(range(1000000000000))"
# A cancel must act, not wait for the program's deadline (120 s): the bound leaves room for a
# machine whose cores are busy; the one-second figure is measured by benchmarks/bench_acp.py.
CANCELLED_WITHIN_S = 10.0


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text("remember the milk\n")
    return tmp_path


async def test_initialize_says_what_it_supports_and_a_session_offers_run_and_plan(workspace):
    async with lackpy_acp(workspace) as (conn, _, _):
        info = await conn.initialize(protocol_version=1)
        assert info.agent_info.name == "lackpy"
        assert info.agent_capabilities.load_session is True
        assert info.agent_capabilities.mcp_capabilities.http is True
        assert info.agent_capabilities.mcp_capabilities.sse is False
        assert info.agent_capabilities.prompt_capabilities.image is False
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        assert session.modes.current_mode_id == "run"
        assert [mode.id for mode in session.modes.available_modes] == ["run", "plan", "agent"]


async def test_a_prompt_the_rules_answer_shows_the_program_then_its_result(workspace):
    async with lackpy_acp(workspace) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        response = await prompt(conn, session.session_id, "read the file notes.txt")
        assert response.stop_reason == "end_turn"
        assert "trying rules" in client.thoughts()
        [call] = client.tool_calls()
        assert "written by rules" in call.title
        shown = call.content[0].content.text
        assert shown.startswith("```python\n") and "read_file('notes.txt')" in shown
        assert client.statuses() == ["in_progress", "completed"]
        assert client.messages() == block("remember the milk")
        *_, done = client.call_updates(call.tool_call_id)  # for clients that show raw output
        assert done.raw_output == "content = read_file('notes.txt')\ncontent\n\n→ remember the milk\n"


async def test_a_template_answers_with_no_model(workspace):
    template(workspace, "milk", "what should I remember", "read_file('notes.txt')")
    async with lackpy_acp(workspace) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await prompt(conn, session.session_id, "What should I remember")
        assert "written by templates" in client.tool_calls()[0].title
        assert client.messages() == (block("remember the milk") + "\n\nlackpy: answered by the "
                                     "template milk: no model call")


async def test_a_result_is_a_code_block_the_chat_shows_as_the_notebook_does(workspace):
    (workspace / "packaging").mkdir()
    (workspace / "packaging" / "__init__.py").write_text("")
    (workspace / "todo.md").write_text("- first\n**not bold**\nlast ``` line\n")
    template(workspace, "package", "what is in the package", "find_files('packaging/*.py')")
    template(workspace, "todo", "show the todo", "read_file('todo.md')")
    async with lackpy_acp(workspace) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await prompt(conn, session.session_id, "what is in the package")
        result, _, note = client.messages().partition("\n\nlackpy: ")
        assert result == block("['packaging/__init__.py']")
        assert MarkdownIt().render(result) == (
            '<pre><code class="language-text">[\'packaging/__init__.py\']\n</code></pre>\n')
        client.clear()
        await prompt(conn, session.session_id, "show the todo")
        result = client.messages().partition("\n\nlackpy: ")[0]
        assert result == "````text\n- first\n**not bold**\nlast ``` line\n````"  # a longer fence
        assert MarkdownIt().render(result) == ('<pre><code class="language-text">- first\n**not bold**\n'
                                               'last ``` line\n</code></pre>\n')


async def test_no_tier_for_a_prompt_says_what_to_do_in_the_chats_commands(workspace):
    template(workspace, "defs", "find the main definition", "find_definitions('main')")
    async with lackpy_acp(workspace) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await prompt(conn, session.session_id, "summarise the notes")
        tiers, _, advice = client.messages().partition("\n\n")
        assert tiers == block("no tier could write a program for 'summarise the notes':\n"
                              "  - templates: no program for this intent\n"
                              "  - rules: no program for this intent")
        assert advice.startswith("Next: templates, rules and recordings answer only the requests "
                                 "they know, and no model tier is configured. Configure one")
        assert "(`%%create NAME --pattern 'summarise the notes'` over it in a notebook" in advice
        client.clear()
        await prompt(conn, session.session_id, "/kit read_file")
        client.clear()
        await prompt(conn, session.session_id, "find the main definition")
        assert client.messages().endswith(
            "Next: `/kit read_file,find_definitions`, then ask again (the template defs calls "
            "find_definitions).")
        assert not [u for u in client.updates if "retry" in getattr(getattr(u, "content", None), "text", "")]
        client.clear()
        await prompt(conn, session.session_id, "/kit read_file,find_definitions")
        client.clear()
        await prompt(conn, session.session_id, "find the main definition")
        assert "written by templates" in client.tool_calls()[0].title


async def test_plan_mode_shows_the_program_and_runs_nothing(workspace):
    async with lackpy_acp(workspace) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.set_session_mode(session_id=session.session_id, mode_id="plan")
        response = await prompt(conn, session.session_id, "read the file notes.txt")
        assert response.stop_reason == "end_turn"
        assert "read_file('notes.txt')" in client.tool_calls()[0].content[0].content.text
        assert client.statuses() == ["completed"]
        assert "not run" in client.messages() and "milk" not in client.messages()


def _writer(workspace: Path) -> None:
    (workspace / ".lackpy").mkdir()
    (workspace / ".lackpy" / "config.toml").write_text(
        '[kit]\ndefault = ["read_file", "write_file"]\n')
    template(workspace, "copy", "copy the notes", WRITER)


async def test_a_write_is_shown_as_a_diff_and_lands_once_the_person_applies_it(workspace):
    _writer(workspace)
    async with lackpy_acp(workspace) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        response = await prompt(conn, session.session_id, "copy the notes")
        assert response.stop_reason == "end_turn"
        [(call, options)] = client.asked
        assert [option.option_id for option in options] == ["apply", "discard"]
        assert call.title == "1 file changed: +1 -0" and call.kind == "edit"
        assert "write_file('copy.txt'" in call.content[0].content.text
        diff = call.content[1]
        assert diff.type == "diff" and diff.path == str(workspace / "copy.txt")
        assert diff.old_text is None and diff.new_text == "remember the milk"
        assert client.statuses() == ["in_progress", "completed"]
        assert client.messages().startswith(block("copied"))
    assert (workspace / "copy.txt").read_text() == "remember the milk\n"


@pytest.mark.parametrize("permission, why", [
    ("discard", "they were declined"),
    (None, "this client cannot be asked to approve file changes"),
])
async def test_a_write_refused_or_that_no_one_can_approve_changes_nothing(
        workspace, permission, why):
    _writer(workspace)
    async with lackpy_acp(workspace) as (conn, client, _):
        client.permission = permission
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        response = await prompt(conn, session.session_id, "copy the notes")
        assert response.stop_reason == "end_turn"
        assert len(client.asked) == 1
        assert client.statuses() == ["in_progress", "failed"]
        assert why in client.messages()
        client.clear()
        await prompt(conn, session.session_id, "read the file notes.txt")  # still works
        assert client.messages() == block("remember the milk")
    assert not (workspace / "copy.txt").exists()


async def test_cancel_while_the_person_is_asked_writes_nothing(workspace):
    _writer(workspace)
    async with lackpy_acp(workspace) as (conn, client, _):
        client.permission = "wait"
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        running = asyncio.ensure_future(prompt(conn, session.session_id, "copy the notes"))
        async with asyncio.timeout(60):
            while not client.asked:
                await asyncio.sleep(0.05)
        asked = time.monotonic()
        await conn.cancel(session_id=session.session_id)  # the client never answers
        response = await asyncio.wait_for(running, 10)
        assert time.monotonic() - asked < CANCELLED_WITHIN_S
        assert response.stop_reason == "cancelled"
        assert client.messages().startswith("stopped: the prompt was cancelled")
        assert not (workspace / "copy.txt").exists()
        client.clear()
        client.permission = "apply"
        await prompt(conn, session.session_id, "copy the notes")  # the session goes on
        assert client.statuses() == ["in_progress", "completed"]
    assert (workspace / "copy.txt").read_text() == "remember the milk\n"


async def test_cancel_stops_a_running_program(workspace):
    template(workspace, "spin", "spin", SPIN)
    async with lackpy_acp(workspace) as (conn, client, process):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        running = asyncio.ensure_future(prompt(conn, session.session_id, "spin"))
        while "in_progress" not in client.statuses():
            assert not running.done(), client.messages()
            await asyncio.sleep(0.05)
        spinning = await _program_child(process.pid)
        asked = time.monotonic()
        await conn.cancel(session_id=session.session_id)
        response = await asyncio.wait_for(running, 5)
        assert time.monotonic() - asked < CANCELLED_WITHIN_S
        assert response.stop_reason == "cancelled"
        assert gone_within(spinning, CANCELLED_WITHIN_S)
        assert client.statuses() == ["in_progress", "failed"]
        assert client.messages().startswith("stopped: the prompt was cancelled")
        client.clear()
        after = await prompt(conn, session.session_id, "read the file notes.txt")
        assert after.stop_reason == "end_turn"
        assert client.messages() == block("remember the milk")


async def _program_child(pid: int) -> int:
    """The sandbox child spinning the program of ``pid``'s one session, once it runs: the one
    whose CPU time grows (the worker may also hold a twin forked ahead, which waits)."""
    async with asyncio.timeout(60):
        while True:
            children = [child for worker in workers_of(pid) for child in children_of(worker)]
            before = {child: cpu_ticks(child) for child in children}
            await asyncio.sleep(0.2)
            spinning = [child for child in children if cpu_ticks(child) > before[child]]
            if spinning:
                return spinning[0]


async def test_bad_requests_get_an_error_or_a_message_and_the_server_stays_up(workspace):
    async with lackpy_acp(workspace) as (conn, client, process):
        with pytest.raises(RequestError, match="Invalid params") as unknown:
            await prompt(conn, "no-such-session", "read the file notes.txt")
        assert "unknown session" in str(unknown.value.data)
        with pytest.raises(RequestError, match="Invalid params"):
            await conn.new_session(cwd="relative/path", mcp_servers=[])
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        with pytest.raises(RequestError, match="Invalid params") as mode:
            await conn.set_session_mode(session_id=session.session_id, mode_id="yolo")
        assert "run, plan, agent" in str(mode.value.data)
        response = await settled(conn.prompt(
            session_id=session.session_id, prompt=[image_block("iVBORw0KGgo=", "image/png")]))
        assert response.stop_reason == "end_turn"
        assert "reads text only" in client.messages()
        assert process.returncode is None
        client.clear()
        await prompt(conn, session.session_id, "read the file notes.txt")
        assert client.messages() == block("remember the milk")


async def test_a_kept_session_is_loaded_by_a_new_agent_with_its_conversation_and_mode(workspace):
    async with lackpy_acp(workspace) as (conn, _, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await prompt(conn, session.session_id, "read the file notes.txt")
        await conn.set_session_mode(session_id=session.session_id, mode_id="plan")
    assert (workspace / ".lackpy" / "acp" / f"{session.session_id}.json").is_file()
    async with lackpy_acp(workspace) as (conn, client, _):
        loaded = await settled(conn.load_session(cwd=str(workspace),
                                                 session_id=session.session_id, mcp_servers=[]))
        assert loaded.modes.current_mode_id == "plan"
        assert client.said() == "read the file notes.txt"
        assert "read_file('notes.txt')" in client.tool_calls()[0].content[0].content.text
        assert client.messages() == block("remember the milk")
        client.clear()
        await prompt(conn, session.session_id, "read the file notes.txt")
        assert "plan mode" in client.messages()


async def test_jupyter_ai_which_keeps_the_chat_itself_gets_no_replay_and_no_repeat(workspace):
    """jupyter-ai's ACP client would attach a replay to its next reply (issue 42): it gets
    none, and its next prompt's reply is that prompt's alone."""
    async with lackpy_acp(workspace) as (conn, _, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await prompt(conn, session.session_id, "read the file notes.txt")
    async with lackpy_acp(workspace, client_name="Jupyter AI") as (conn, client, _):
        await settled(conn.load_session(cwd=str(workspace), session_id=session.session_id,
                                        mcp_servers=[]))
        assert (client.said(), client.messages(), client.tool_calls()) == ("", "", [])
        await prompt(conn, session.session_id, "read the file notes.txt")
        assert client.messages() == block("remember the milk")
        assert len(client.tool_calls()) == 1


async def test_loading_a_session_that_is_not_kept_is_an_invalid_params_error(workspace, tmp_path):
    async with lackpy_acp(workspace) as (conn, _, process):
        with pytest.raises(RequestError, match="Invalid params") as missing:
            await conn.load_session(cwd=str(workspace), session_id="0" * 32, mcp_servers=[])
        assert "no session" in str(missing.value.data) and "session/new" in str(missing.value.data)
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        other = tmp_path / "other"
        other.mkdir()
        with pytest.raises(RequestError, match="Invalid params"):  # kept in its own workspace
            await conn.load_session(cwd=str(other), session_id=session.session_id, mcp_servers=[])
        assert process.returncode is None


async def test_an_mcp_server_passed_at_session_new_is_a_tool_source_of_that_session(workspace):
    template(workspace, "sum", "add {a} and {b}", "add(int({a}), int({b}))")
    async with lackpy_acp(workspace) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[tool_server()])
        await prompt(conn, session.session_id, "add 2 and 40")
        assert client.messages().startswith(block("42"))
        client.clear()
        plain = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await prompt(conn, plain.session_id, "add 2 and 40")  # not in that session's kit
        assert "42" not in client.messages()


KEEP = "keep {key} as {value}", "remember({key}, {value})"  # the MCP server's write tool


async def test_a_call_of_an_mcp_tool_that_writes_is_asked_for_and_runs_once_allowed(workspace):
    template(workspace, "keep", *KEEP)
    async with lackpy_acp(workspace) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[tool_server()])
        await prompt(conn, session.session_id, "keep colour as blue")
        [(call, options)] = client.asked
        assert (call.title, call.kind) == ("call remember", "other")
        assert [(option.option_id, option.name) for option in options] == [
            ("apply", "Run this call"), ("discard", "Do not run it")]
        program, asked = call.content
        assert "remember('colour', 'blue')" in program.content.text
        assert asked.content.text.startswith("call remember('colour', 'blue')\n")
        assert "remember acts beyond the workspace's files" in asked.content.text
        assert client.statuses() == ["in_progress", "completed"]
        assert "'colour': 'blue'" in client.messages()  # the server kept it


@pytest.mark.parametrize("permission, why", [
    ("discard", "remember() was not run: it was declined"),
    (None, "remember() was not run: this client cannot be asked to allow a call of remember"),
])
async def test_a_call_refused_or_that_no_one_can_allow_does_not_run(workspace, permission, why):
    template(workspace, "keep", *KEEP)
    async with lackpy_acp(workspace) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[tool_server()])
        client.permission = permission
        await prompt(conn, session.session_id, "keep colour as blue")
        assert len(client.asked) == 1
        assert client.statuses() == ["in_progress", "failed"]
        assert why in client.messages()
        assert '[sandbox] approve = "never"' in client.messages()  # the setting is named
        client.clear()
        client.permission = "apply"
        await prompt(conn, session.session_id, "keep size as big")
        said = client.messages()
        assert "'size': 'big'" in said and "colour" not in said  # the refused call never ran


async def test_where_calls_are_not_asked_for_a_program_calling_a_write_tool_is_not_run(
        workspace):
    (workspace / ".lackpy").mkdir()
    (workspace / ".lackpy" / "config.toml").write_text('[sandbox]\napprove = "never"\n')
    template(workspace, "keep", *KEEP)
    async with lackpy_acp(workspace) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[tool_server()])
        await prompt(conn, session.session_id, "keep colour as blue")
        assert "remember('colour', 'blue')" in client.tool_calls()[0].content[0].content.text
        assert client.messages().startswith("not run: it calls remember, whose changes cannot "
                                            "be shown as a diff")
        assert client.statuses() == ["failed"] and not client.asked


async def test_an_mcp_server_over_http_with_its_headers_is_a_tool_source_too(workspace):
    template(workspace, "header", "which client am I", "request_header('x-client')")
    with http_tool_server() as url:
        server = HttpMcpServer(name="web", url=url, type="http",
                               headers=[HttpHeader(name="X-Client", value="zed")])
        async with lackpy_acp(workspace) as (conn, client, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[server])
            await prompt(conn, session.session_id, "which client am I")
            assert client.messages().startswith(block("zed"))


async def test_a_server_that_cannot_start_is_left_out_saying_why_and_the_session_works(
        workspace):
    broken = tool_server("broken")
    broken.command = str(workspace / "no-such-server")
    async with lackpy_acp(workspace) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[broken])
        said = await client.message_within(30)
        assert "the MCP server 'broken' is left out" in said and "was not found" in said
        client.clear()
        await prompt(conn, session.session_id, "read the file notes.txt")
        assert client.messages() == block("remember the milk")


def _model_config(workspace: Path, url: str) -> None:
    (workspace / ".lackpy").mkdir(exist_ok=True)
    (workspace / ".lackpy" / "config.toml").write_text(
        '[inference]\norder = ["local"]\n\n[inference.providers.local]\nplugin = "openai"\n'
        f'base_url = "{url}/v1"\nmodel = "m"\n')


async def test_a_model_answer_then_create_makes_the_same_prompt_need_no_model(
        workspace, model_env, model_server):
    _model_config(workspace, model_server.url)
    model_server.script(loopback.openai_answer("read_file('notes.txt')"))
    async with lackpy_acp(workspace) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await prompt(conn, session.session_id, "what is in my notes")
        *_, title = [u.title for u in client.call_updates("program-1") if u.title]
        assert title.startswith("lackpy program (written by local in ")
        assert client.messages().startswith(block("remember the milk"))
        assert "/create NAME saves this program as a template" in client.messages()
        asked = len(model_server.requests)
        client.clear()
        await prompt(conn, session.session_id, "/create notes")
        assert client.messages().startswith("saved `.lackpy/templates/notes.tmpl` (pattern: "
                                            "`what is in my notes`)")
        client.clear()
        await prompt(conn, session.session_id, "What is in my notes")
        assert "written by templates" in client.tool_calls()[0].title
        assert "answered by the template notes: no model call" in client.messages()
        assert len(model_server.requests) == asked


async def test_a_model_program_grows_in_its_tool_call_as_it_streams_then_is_checked(
        workspace, model_env, model_server):
    _model_config(workspace, model_server.url)
    resume = threading.Event()
    model_server.script(loopback.openai_stream(
        ["```python\n", "read_file(", "'notes", ".txt')", "\n```"], stall_after=3, resume=resume))
    async with lackpy_acp(workspace) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        running = asyncio.ensure_future(prompt(conn, session.session_id, "what is in my notes"))
        async with asyncio.timeout(60):  # the model holds its answer until the test has seen it
            while not any("read_file('notes" in _text(u) for u in client.call_updates("program-1")):
                assert not running.done(), client.messages()
                await asyncio.sleep(0.05)
        [start] = client.tool_calls()
        assert start.title == "lackpy program (local is writing it: generate)"
        assert start.status == "pending" and client.statuses() == []
        resume.set()
        response = await running
        assert response.stop_reason == "end_turn"
        shown = [_text(u) for u in client.call_updates("program-1") if u.content]
        partial = shown.index(next(text for text in shown if "read_file('notes" in text))
        assert "read_file('notes.txt')" not in shown[partial]  # seen before the model finished
        assert "read_file('notes.txt')" in shown[partial + 1]
        final = next(u for u in client.call_updates("program-1") if u.raw_input)
        assert final.title.startswith("lackpy program (written by local in ")
        assert _text(final) == "```python\nread_file('notes.txt')\n```"  # sanitized
        assert "checked: valid lackpy, calling read_file" in client.thoughts()
        assert client.statuses() == ["in_progress", "completed"]
        assert client.messages().startswith(block("remember the milk"))
    kept = json.loads((workspace / ".lackpy" / "acp" / f"{session.session_id}.json").read_text())
    passing = [u for u in kept["history"] if u.get("toolCallId") == "program-1"
               and u["sessionUpdate"] == "tool_call_update" and "status" not in u
               and "rawInput" not in u]
    assert passing == []  # the program as it streamed is not kept: session/load shows the end
    assert [u["sessionUpdate"] for u in kept["history"] if u.get("toolCallId") == "program-1"] \
        == ["tool_call", "tool_call_update", "tool_call_update", "tool_call_update"]


def _text(update) -> str:
    return "".join(c.content.text for c in update.content or () if c.type == "content")


async def test_create_says_what_is_missing(workspace):
    async with lackpy_acp(workspace) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await prompt(conn, session.session_id, "/create notes")
        assert client.messages().startswith("no program has run well in this session yet")
        client.clear()
        await prompt(conn, session.session_id, "read the file notes.txt")
        client.clear()
        await prompt(conn, session.session_id, "/create")
        assert client.messages() == "name the template: /create NAME [pattern]"
        client.clear()
        await prompt(conn, session.session_id, "/create ../escape")
        assert client.messages().startswith("not saved: ")
        client.clear()
        await prompt(conn, session.session_id, "/create notes show the notes")
        assert "(pattern: `show the notes`)" in client.messages()
        client.clear()
        await prompt(conn, session.session_id, "/explode")
        assert client.messages().startswith("unknown command /explode; the commands are /create")
    assert not list(workspace.parent.glob("escape*"))


async def test_kit_shows_and_sets_the_kit_and_a_loaded_session_keeps_it(workspace):
    async with lackpy_acp(workspace) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        for _ in range(20):  # sent right after the response
            if client.commands():
                break
            await asyncio.sleep(0.05)
        assert [command.name for command in client.commands()] == ["create", "kit"]
        await prompt(conn, session.session_id, "/kit")
        assert client.messages().startswith("```text\nkit: debug")
        assert "from builtin: read_file, find_files" in client.messages()
        client.clear()
        await prompt(conn, session.session_id, "/kit find_files")
        assert client.messages().startswith("```text\nkit: find_files")
        client.clear()
        await prompt(conn, session.session_id, "/kit no_such_tool")
        assert client.messages().startswith("the kit is unchanged: ")
        client.clear()
        await prompt(conn, session.session_id, "read the file notes.txt")
        assert "milk" not in client.messages()  # read_file is not in the kit now
    async with lackpy_acp(workspace) as (conn, client, _):
        await settled(conn.load_session(cwd=str(workspace), session_id=session.session_id,
                                        mcp_servers=[]))
        client.clear()
        await prompt(conn, session.session_id, "/kit")
        assert client.messages().startswith("```text\nkit: find_files")


@pytest.mark.parametrize("permission", ["apply", "discard"])
async def test_agent_mode_asks_for_a_calls_write_with_its_diff_and_a_refusal_changes_nothing(
        workspace, model_env, model_server, permission):
    agents.write_config(workspace, "openai", model_server, retry_delay=0.001,
                        extra='[agent]\nprovider = "loop"\nmodel = "loop-model"\n'
                              '[kit]\ndefault = ["read_file", "write_file"]\n')
    model_server.script(
        loopback.tool_turn("openai", "Let me read it.", [
            ("read_file", {"path": "notes.txt"}),
            ("write_file", {"path": "copy.txt", "content": "milk"})]),
        loopback.tool_turn("openai", "You should remember the milk."))
    async with lackpy_acp(workspace) as (conn, client, _):
        client.permission = permission
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.set_session_mode(session_id=session.session_id, mode_id="agent")
        response = await prompt(conn, session.session_id, "what should I remember")
        assert response.stop_reason == "end_turn"
        titles = [call.title for call in client.tool_calls()]
        assert titles == ["read_file(path='notes.txt')",
                          "write_file(path='copy.txt', content='milk')"]
        [(asked, options)] = client.asked
        assert asked.tool_call_id == client.tool_calls()[1].tool_call_id
        assert [option.option_id for option in options] == ["apply", "discard"]
        [diff] = asked.content
        assert diff.type == "diff" and diff.path == str(workspace / "copy.txt")
        assert diff.old_text is None and diff.new_text == "milk"
        assert "Let me read it." in client.thoughts()
        assert client.messages().startswith("You should remember the milk.\n\n(2 turns, 2 tool")
        [write] = [u for u in client.updates if getattr(u, "tool_call_id", None) == asked.tool_call_id
                   and getattr(u, "status", None) in ("completed", "failed")]
        assert write.content[0].type == "diff"  # the call keeps the diff it asked about
        if permission == "apply":
            assert client.statuses() == ["completed", "completed"]
            assert (workspace / "copy.txt").read_text() == "milk"
        else:
            assert sorted(client.statuses()) == ["completed", "failed"]
            assert write.status == "failed" and "declined" in write.content[1].content.text
            assert not (workspace / "copy.txt").exists()


async def test_cancel_while_an_agents_write_is_asked_writes_nothing(
        workspace, model_env, model_server):
    agents.write_config(workspace, "openai", model_server, retry_delay=0.001,
                        extra='[agent]\nprovider = "loop"\nmodel = "loop-model"\n'
                              '[kit]\ndefault = ["read_file", "write_file"]\n')
    model_server.script(loopback.tool_turn("openai", "", [
        ("write_file", {"path": "copy.txt", "content": "milk"})]))
    async with lackpy_acp(workspace) as (conn, client, _):
        client.permission = "wait"
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.set_session_mode(session_id=session.session_id, mode_id="agent")
        running = asyncio.ensure_future(prompt(conn, session.session_id, "copy my notes"))
        async with asyncio.timeout(60):
            while not client.asked:
                await asyncio.sleep(0.05)
        await conn.cancel(session_id=session.session_id)  # the client never answers
        response = await asyncio.wait_for(running, 10)
        assert response.stop_reason == "cancelled"
        assert client.statuses() == ["failed"]
        assert client.messages().startswith("stopped: the prompt was cancelled")
        client.clear()
        await conn.set_session_mode(session_id=session.session_id, mode_id="run")
        await prompt(conn, session.session_id, "read the file notes.txt")  # the session goes on
        assert client.messages() == block("remember the milk")
    assert not (workspace / "copy.txt").exists()


async def test_agent_mode_leaves_out_a_tool_that_writes_without_a_diff(
        workspace, model_env, model_server):
    agents.write_config(workspace, "openai", model_server, retry_delay=0.001,
                        extra='[agent]\nprovider = "loop"\nmodel = "loop-model"\n')
    model_server.script(
        loopback.tool_turn("openai", "", [("remember", {"key": "colour", "value": "blue"})]),
        loopback.tool_turn("openai", "I cannot keep it."))
    async with lackpy_acp(workspace) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[tool_server()])
        await conn.set_session_mode(session_id=session.session_id, mode_id="agent")
        await prompt(conn, session.session_id, "keep colour as blue")
        assert "left out of the agent's tools: exit_now, remember (they change things " \
               "without a diff" in client.thoughts()
        [call] = client.tool_calls()
        assert client.statuses() == ["failed"] and not client.asked
        [failed] = [u for u in client.updates if getattr(u, "status", None) == "failed"]
        assert failed.tool_call_id == call.tool_call_id
        assert "there is no tool 'remember'" in failed.content[0].content.text


async def test_agent_mode_without_a_model_says_which_to_set(workspace):
    async with lackpy_acp(workspace) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.set_session_mode(session_id=session.session_id, mode_id="agent")
        await prompt(conn, session.session_id, "what should I remember")
        assert client.messages().startswith("the agent cannot start: which model? set [agent]")


async def test_an_agent_runs_calls_saved_with_create_answer_the_next_time_with_no_model(
        workspace, model_env, model_server):
    agents.write_config(workspace, "openai", model_server, retry_delay=0.001,
                        extra='[agent]\nprovider = "loop"\nmodel = "loop-model"\n')
    model_server.script(loopback.tool_turn("openai", "", [("read_file", {"path": "notes.txt"})]),
                        loopback.tool_turn("openai", "Milk."))
    async with lackpy_acp(workspace) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.set_session_mode(session_id=session.session_id, mode_id="agent")
        await prompt(conn, session.session_id, "what should I remember")
        assert "/create NAME saves the run's tool calls as one program" in client.messages()
        client.clear()
        await prompt(conn, session.session_id, "/create remember")
        assert client.messages().startswith("saved `.lackpy/templates/remember.tmpl`")
        asked = len(model_server.requests)
        await conn.set_session_mode(session_id=session.session_id, mode_id="run")
        client.clear()
        await prompt(conn, session.session_id, "what should I remember")
        assert "remember the milk" in client.messages()
        assert "answered by the template remember: no model call" in client.messages()
        assert len(model_server.requests) == asked


async def test_cancel_stops_an_agent_mid_run(workspace, model_env, model_server):
    agents.write_config(workspace, "openai", model_server, retry_delay=0.001,
                        extra='[agent]\nprovider = "loop"\nmodel = "loop-model"\n')
    model_server.script(loopback.tool_turn("openai", "", [("read_file", {"path": "notes.txt"})]),
                        loopback.hang())
    async with lackpy_acp(workspace) as (conn, client, _):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.set_session_mode(session_id=session.session_id, mode_id="agent")
        running = asyncio.ensure_future(prompt(conn, session.session_id, "what is in my notes"))
        async with asyncio.timeout(60):
            while len(model_server.requests) < 2:  # the second turn waits on the model
                await asyncio.sleep(0.05)
        await conn.cancel(session_id=session.session_id)
        response = await asyncio.wait_for(running, 10)
        assert response.stop_reason == "cancelled"
        assert client.statuses() == ["completed"]
        assert client.messages().startswith("stopped: the prompt was cancelled")


def test_acp_help_explains_every_mode_and_command():
    shown = subprocess.run([sys.executable, "-m", "lackpy_kernel", "acp", "--help"],
                           capture_output=True, text=True, check=True).stdout
    for mode in MODES:
        assert f"\n  {mode} " in shown, mode
    for command in COMMANDS:
        assert f"\n  /{command} " in shown, command
