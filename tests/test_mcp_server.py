"""The MCP server, driven by the official SDK's own client.

Most tests share one server: ``python -m lackpy_kernel.mcp_server --workspace
<tmp>`` started over stdio with ``stdio_client`` and ``ClientSession``. The
session lives in a background task of the module's event loop, because anyio's
cancel scopes must be entered and left in the same task, and pytest-asyncio
runs a fixture's setup and teardown in different ones.
"""

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from mcp import Client, StdioServerParameters
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client

from lackpy_kernel.mcp_server import build_server

pytestmark = pytest.mark.asyncio(loop_scope="module")

TOOL_NAMES = {
    "validate", "generate", "run_program", "delegate", "create", "kit_info", "kit_list",
    "kit_create", "toolbox_list", "docs_index", "resolve_doc",
}
START_TIMEOUT = 60


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("mcp")
    ws = root / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("remember the milk\n")
    (root / "outside.txt").write_text("a secret outside the workspace\n")
    return ws


def server_params(workspace: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "lackpy_kernel.mcp_server", "--workspace", str(workspace)],
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def session(workspace: Path, tmp_path_factory: pytest.TempPathFactory):
    errlog_path = tmp_path_factory.mktemp("mcp-log") / "server-stderr.txt"
    ready: asyncio.Future = asyncio.get_running_loop().create_future()
    stop = asyncio.Event()

    async def hold() -> None:
        try:
            with errlog_path.open("w") as errlog:
                async with stdio_client(server_params(workspace), errlog=errlog) as (read, write):
                    async with ClientSession(read, write) as client:
                        initialized = await client.initialize()
                        ready.set_result((client, initialized))
                        await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    task = asyncio.create_task(hold())
    try:
        client, initialized = await asyncio.wait_for(asyncio.shield(ready), START_TIMEOUT)
    except BaseException:
        task.cancel()
        print(errlog_path.read_text() if errlog_path.exists() else "", file=sys.stderr)
        raise
    client.initialized = initialized
    yield client
    stop.set()
    await asyncio.wait_for(task, 30)


async def call(session: ClientSession, tool: str, /, **arguments: Any) -> dict[str, Any]:
    """Call a tool that must succeed; its structured result (also checked against the text)."""
    result = await session.call_tool(tool, arguments)
    text = "\n".join(getattr(block, "text", "") for block in result.content)
    assert not result.is_error, text
    assert result.structured_content is not None
    assert json.loads(text) == result.structured_content
    return result.structured_content


async def call_error(session: ClientSession, tool: str, /, **arguments: Any) -> str:
    """Call a tool that must fail; the error text."""
    result = await session.call_tool(tool, arguments)
    text = "\n".join(getattr(block, "text", "") for block in result.content)
    assert result.is_error, f"expected an error, got {text}"
    return text


# -- handshake -----------------------------------------------------------------


async def test_initialize_names_the_server(session):
    assert session.initialized.server_info.name == "lackpy"
    assert "lackpy" in (session.initialized.instructions or "")


async def test_list_tools_has_every_service_operation(session):
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert TOOL_NAMES <= set(tools)
    for tool in tools.values():
        assert tool.description and len(tool.description) > 40, tool.name
        # dedented, as a client shows it: no line starts with the source's indentation
        assert not any(line.startswith("    ") for line in tool.description.splitlines())
    kit_schema = tools["run_program"].input_schema["properties"]["kit"]
    assert {"string", "array", "object"} <= {
        option.get("type") for option in kit_schema["anyOf"]}
    assert tools["kit_list"].annotations.read_only_hint is True
    assert tools["run_program"].annotations.read_only_hint is False
    # generate writes the ratchet's intent log, so it is not read-only, but it destroys nothing
    assert tools["generate"].annotations.read_only_hint is False
    assert tools["generate"].annotations.destructive_hint is False


# -- validate ---------------------------------------------------------------------


async def test_validate_a_valid_program(session):
    result = await call(session, "validate", program="text = read_file('notes.txt')\ntext")
    assert result == {"valid": True, "errors": [], "calls": ["read_file"], "variables": ["text"]}


async def test_validate_an_invalid_program_is_a_normal_result(session):
    result = await call(session, "validate", program="import os\nos.listdir('.')")
    assert result["valid"] is False
    assert any("Import" in error for error in result["errors"])


async def test_validate_with_a_tool_list_kit(session):
    result = await call(session, "validate", program="find_files('*.txt')", kit=["read_file"])
    assert result["valid"] is False
    assert any("find_files" in error for error in result["errors"])


# -- run_program -----------------------------------------------------------------


async def test_run_program_output_and_trace(session):
    program = "text = read_file('notes.txt')\nprint('got it')\ntext.upper()"
    result = await call(session, "run_program", program=program, kit="read_file",
                        include_variables=True)
    assert result["success"] is True, result["error"]
    assert result["output"] == "REMEMBER THE MILK\n"
    assert result["stdout"] == "got it\n"
    assert result["variables"]["text"] == "remember the milk\n"
    unasked = await call(session, "run_program", program=program, kit="read_file")
    assert unasked["output"] == result["output"] and unasked["variables"] == {}
    entries = result["trace"]["entries"]
    assert [(e["tool"], e["args"], e["success"]) for e in entries] == [
        ("read_file", {"path": "notes.txt"}, True)]
    assert result["trace"]["files_read"] == ["notes.txt"]


async def test_run_program_with_params_and_a_comma_kit(session):
    result = await call(session, "run_program", program="len(read_file(name))",
                        kit="read_file,find_files", params={"name": "notes.txt"})
    assert result["success"] is True, result["error"]
    assert result["output"] == len("remember the milk\n")


async def test_run_program_with_an_alias_kit(session):
    result = await call(session, "run_program", program="cat('notes.txt')",
                        kit={"cat": "read_file"})
    assert result["success"] is True, result["error"]
    assert result["output"] == "remember the milk\n"


async def test_run_program_runtime_error_is_success_false(session):
    result = await call(session, "run_program", program="items = [1, 2]\nitems[5]")
    assert result["success"] is False
    assert "IndexError" in result["error"]
    assert result["error_line"] == 2


async def test_run_program_tool_error_is_success_false(session):
    result = await call(session, "run_program", program="read_file('missing.txt')")
    assert result["success"] is False
    assert "missing.txt" in result["error"]
    assert result["trace"]["entries"][0]["success"] is False


async def test_run_program_invalid_program_is_success_false(session):
    result = await call(session, "run_program", program="import os")
    assert result["success"] is False
    assert "invalid program" in result["error"]
    assert result["issues"] and result["issues"][0]["line"] == 1


async def test_run_program_non_json_output_comes_back_as_json_data(session):
    result = await call(session, "run_program", program="x = {3}\n[x, (1, 2), {'k': x, 4: None}]")
    assert result["success"] is True, result["error"]
    assert result["output"] == [[3], [1, 2], {"k": [3], "4": None}]


# -- delegate, create: the ratchet ------------------------------------------------------


async def test_delegate_then_create_then_templates_answer(session, workspace):
    first = await call(session, "delegate", intent="read the file notes.txt", kit="read_file")
    assert first["success"] is True, first["error"]
    assert first["generation_tier"] == "rules"
    assert first["output"] == "remember the milk\n"
    assert first["files_read"] == ["notes.txt"]
    assert first["trace"][0]["tool"] == "read_file"
    for key in ("program", "grade", "generation_time_ms", "execution_time_ms", "total_time_ms",
                "files_modified", "error"):
        assert key in first

    created = await call(session, "create", program=first["program"], name="read_notes",
                         kit="read_file")
    assert created["success"] is True
    assert Path(created["path"]) == workspace / ".lackpy" / "templates" / "read_notes.tmpl"

    second = await call(session, "delegate", intent="read the file notes.txt", kit="read_file")
    assert second["success"] is True, second["error"]
    assert second["generation_tier"] == "templates"
    assert second["output"] == "remember the milk\n"


async def test_create_with_a_pattern_generalises(session):
    created = await call(session, "create", program="read_file('{path}')", name="show_file",
                         kit="read_file", pattern="show me {path}")
    assert created["success"] is True
    generated = await call(session, "generate", intent="show me notes.txt", kit="read_file")
    assert generated["provider_name"] == "templates"
    assert generated["program"] == "read_file('notes.txt')"
    ran = await call(session, "delegate", intent="Show me notes.txt", kit="read_file")
    assert ran["generation_tier"] == "templates"
    assert ran["output"] == "remember the milk\n"
    assert set(generated) >= {"program", "provider_name", "generation_time_ms",
                              "correction_strategy", "correction_attempts", "attempts_log"}


async def test_create_an_invalid_program_is_a_tool_error(session):
    text = await call_error(session, "create", program="import os", name="bad", pattern="x")
    assert "bad" in text and "Import" in text


async def test_generate_with_no_provider_able_is_a_tool_error(session):
    text = await call_error(session, "generate", intent="compose a symphony", kit="read_file")
    assert "compose a symphony" in text
    assert "rules" in text


async def test_delegate_with_no_model_says_what_to_do_in_mcps_terms(session):
    text = await call_error(session, "delegate", intent="compose a symphony", kit="read_file")
    assert "no model tier is configured. Configure one ([inference] in .lackpy/config.toml" in text
    assert "or write the program and keep it as a template with the create tool " \
           "(pattern 'compose a symphony')" in text


# -- kits, toolbox, docs --------------------------------------------------------------


async def test_kit_list_includes_debug(session):
    kits = (await call(session, "kit_list"))["kits"]
    assert "debug" in {kit["name"] for kit in kits}


async def test_kit_info_debug(session):
    info = await call(session, "kit_info", kit="debug")
    assert {"read_file", "find_files"} <= set(info["tools"])
    assert info["tools"]["read_file"]["args"][0]["name"] == "path"
    assert set(info["grade"]) == {"w", "d"}
    assert "read_file" in info["description"]


async def test_kit_create_then_use(session, workspace):
    made = await call(session, "kit_create", name="reader", tools=["read_file"],
                      description="just reads")
    assert made["tools"] == ["read_file"]
    assert (workspace / ".lackpy" / "kits" / "reader.kit").is_file()
    kits = {kit["name"]: kit for kit in (await call(session, "kit_list"))["kits"]}
    assert kits["reader"]["source"] == "workspace"
    assert list((await call(session, "kit_info", kit="reader"))["tools"]) == ["read_file"]


async def test_kit_create_with_an_unknown_tool_is_a_tool_error(session):
    text = await call_error(session, "kit_create", name="bad", tools=["read_file", "teleport"])
    assert "teleport" in text


async def test_toolbox_list(session):
    tools = {tool["name"]: tool for tool in (await call(session, "toolbox_list"))["tools"]}
    assert {"read_file", "write_file", "find_files"} <= set(tools)
    assert set(tools["read_file"]) >= {"provider", "description", "grade_w", "effects_ceiling"}


async def test_resolve_doc_of_a_tool_doc_from_docs_index(session):
    index = await call(session, "docs_index", kit="debug")
    doc_path = index["tool_docs"]["read_file"]
    doc = await call(session, "resolve_doc", doc_path=doc_path)
    assert doc["found"] is True
    assert "read_file" in doc["content"]


async def test_resolve_doc_cannot_read_outside_the_workspace(session, workspace):
    assert (workspace.parent / "outside.txt").is_file()
    doc = await call(session, "resolve_doc", doc_path="../outside.txt")
    assert doc == {"doc_path": "../outside.txt", "found": False, "content": None}


async def test_unknown_kit_is_a_tool_error_naming_the_kit(session):
    for tool, arguments in [("kit_info", {}), ("run_program", {"program": "1"}),
                            ("validate", {"program": "1"}), ("delegate", {"intent": "x"})]:
        text = await call_error(session, tool, kit="no_such_kit", **arguments)
        assert "no_such_kit" in text, tool


async def test_unknown_tool_in_a_kit_is_a_tool_error(session):
    text = await call_error(session, "run_program", program="1", kit=["read_file", "teleport"])
    assert "teleport" in text


async def test_server_is_still_up_after_errors(session):
    await call_error(session, "kit_info", kit="no_such_kit")
    assert (await call(session, "validate", program="1 + 1"))["valid"] is True


# -- lifecycle ---------------------------------------------------------------------


async def test_the_service_is_closed_when_the_server_stops(tmp_path):
    (tmp_path / "a.txt").write_text("a")
    server = build_server(tmp_path)
    service = server.lackpy_service
    async with Client(server) as client:
        result = await client.call_tool("run_program", {"program": "read_file('a.txt')"})
        assert result.structured_content["output"] == "a"
        worker = service.sandbox_worker_pid
        assert worker is not None  # the program ran in the sandbox worker
    assert service.sandbox_worker_pid is None  # the sandbox worker was stopped
    assert not Path(f"/proc/{worker}").exists()  # and reaped


async def test_main_reports_a_malformed_config(tmp_path):
    (tmp_path / ".lackpy").mkdir()
    (tmp_path / ".lackpy" / "config.toml").write_text("[inference\n")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "lackpy_kernel.mcp_server", "--workspace", str(tmp_path),
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 2
    assert "config.toml" in stderr.decode()
    assert stdout == b""
