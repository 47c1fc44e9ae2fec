"""Data that lackpy writes or reads back, attacked (issue 25): ``trace_to_program`` writes
only exact plain types, by their type; deep MCP tool schemas, plan checkpoints and recorded
conversations are refused with the error of their kind naming where they came from, never
a ``RecursionError``."""

from __future__ import annotations

import ast
import json
import sqlite3

import pytest

from lackpy_kernel.config import LackpyConfig
from lackpy_kernel.engines import (
    Agent,
    LLMEngine,
    Plan,
    PlanPaused,
    PlanResumeError,
    Step,
    Store,
    trace_to_program,
)
from lackpy_kernel.engines.plans import PlanLibrary
from lackpy_kernel.errors import KitError, LackpyError, UsageError
from lackpy_kernel.kit import builtin_toolbox
from lackpy_kernel.kit.sources import ToolSources
from lackpy_kernel.run import TraceEntry
from lackpy_kernel.service import LackpyService
from tests.support.mcp_servers import hostile_settings


def entry(step, tool, args):
    return TraceEntry(step, tool, args, None, 0.1, True, None)


class Sneaky(str):
    """A str whose repr is a call the trace never made."""

    def __repr__(self) -> str:
        return "'x'); write_file('pwned.txt', 'x'); ('"


class Count(int):
    def __repr__(self) -> str:
        return "write_file('pwned.txt', 'x')"


class Rows(list):
    pass


@pytest.mark.parametrize("value", [Sneaky("notes.txt"), [Sneaky("a")], {"k": Sneaky("a")},
                                   {Sneaky("k"): 1}, Count(3), Rows(["a"]), object(),
                                   b"bytes", 1j, frozenset({1})],
                         ids=["str subclass", "in a list", "in a dict", "as a key",
                              "int subclass", "list subclass", "object", "bytes", "complex",
                              "frozenset"])
def test_trace_to_program_refuses_what_is_not_exactly_plain(value):
    with pytest.raises(UsageError, match="not plain data a program can write"):
        trace_to_program([entry(1, "read_file", {"path": value})])


def test_trace_to_program_writes_exact_plain_types_by_their_type():
    value = {"t": (1,), "u": (1, 2.5), "s": {3}, "e": set(), "n": None, "b": True,
             "l": ["a", -1]}
    program = trace_to_program([entry(1, "find_files", {"pattern": value})])
    call = ast.parse(program).body[0].value
    assert ast.literal_eval(call.keywords[0].value) == value


def test_trace_to_program_refuses_a_value_nested_too_deep():
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(UsageError, match="nested more than"):
        trace_to_program([entry(1, "read_file", {"path": deep})])


# -- MCP tool schemas --------------------------------------------------------------------


@pytest.mark.parametrize("mode, tool", [("deep_schema", "nested"), ("huge_schema", "wide")])
def test_a_deep_or_huge_tool_schema_is_refused_at_listing_naming_server_and_tool(
        tmp_path, mode, tool):
    sources = ToolSources({"hostile": hostile_settings(mode)}, tmp_path)
    try:
        (status,) = sources.check()
        toolbox = builtin_toolbox(tmp_path)
        sources.attach(toolbox)
        with pytest.raises(KitError) as raised:  # the tool is unknown: its source failed
            toolbox.get("answer")
    finally:
        sources.close()
    assert status.state == "failed"
    for message in (status.error, str(raised.value)):
        assert "tool source 'hostile'" in message and f"its tool {tool!r}" in message, message


async def test_run_program_with_a_deep_schema_server_is_a_lackpy_error(tmp_path):
    (tmp_path / ".lackpy").mkdir()
    settings = hostile_settings("deep_schema")
    (tmp_path / ".lackpy" / "config.toml").write_text(
        "[tools.providers.hostile]\nplugin = \"mcp\"\n"
        f"command = {json.dumps(settings['command'])}\n")
    with LackpyService(tmp_path) as service:
        try:
            result = await service.run_program("answer()", kit="answer,read_file")
            error = result.error
        except LackpyError as exc:  # the kit does not resolve: a tool of it is unknown
            error = str(exc)
    assert "RecursionError" not in error and "its tool 'nested'" in error, error


# -- checkpoints and recorded conversations -----------------------------------------------

DEEP = 5000


def _deep_json() -> str:
    return "[" * DEEP + "]" * DEEP


def _tamper(path, key: str, text: str) -> None:
    with sqlite3.connect(path) as db:
        db.execute("UPDATE store SET value = ? WHERE key = ?", (text, key))


@pytest.mark.parametrize("nesting", ["deep", "parseable"])
def test_a_checkpoint_tampered_with_a_deep_value_fails_resume_naming_the_file(tmp_path, nesting):
    path = tmp_path / "plans.sqlite"
    calls = []

    def gate(task):
        calls.append(task)
        raise PlanPaused("waiting")

    def plan(store, **options):
        return Plan(Step(gate, writes="approved"), store=store, checkpoint_key="run", **options)

    with Store(path) as store:
        assert plan(store).run("report").error.type == "PlanPaused"
    row = json.loads(sqlite3.connect(path).execute(
        "SELECT value FROM store WHERE key = 'run'").fetchone()[0])
    row["kv"] = {"x": json.loads("[" * 300 + "]" * 300)} if nesting == "parseable" else "HOLE"
    text = json.dumps(row).replace('"HOLE"', _deep_json())
    _tamper(path, "run", text)
    with Store(path) as store:
        with pytest.raises(PlanResumeError) as raised:
            plan(store, resume=True).run()
        assert str(path) in str(raised.value) and "nested" in str(raised.value)
        restarted = plan(store).restart("again")  # a restart writes over it
    assert restarted.error.type == "PlanPaused" and calls == ["report", "again"]


def test_the_plan_library_lists_a_tampered_checkpoint_as_unreadable(tmp_path):
    library = PlanLibrary(tmp_path)
    library.store.write("run", {"status": "done"})
    path = library.store.path
    library.close()
    _tamper(path, "run", _deep_json())
    library = PlanLibrary(tmp_path)
    try:
        (status,) = library.runs()
    finally:
        library.close()
    assert status.status == "unreadable" and str(path) in status.error["message"]


def test_a_store_refuses_to_write_a_value_it_could_not_read_back():
    with Store() as store, pytest.raises(TypeError, match="nested more than"):
        store.write("deep", json.loads("[" * 300 + "]" * 300))


@pytest.mark.parametrize("depth", [300, 100_000])
def test_a_recorded_conversation_nested_too_deep_is_a_provider_error_naming_the_file(
        tmp_path, depth):
    (tmp_path / "notes.txt").write_text("alpha\n")
    path = tmp_path / ".lackpy" / "conversations.jsonl"
    path.parent.mkdir()
    arguments = "[" * depth + "]" * depth
    path.write_text('{"intent": "do it", "tools": ["read_file"], "model": "m", "turns": '
                    '[{"text": "", "calls": [{"name": "read_file", "arguments": '
                    + arguments + '}]}]}\n')
    with LackpyService(tmp_path, LackpyConfig(sandbox_enabled=False)) as service:
        envelope = Agent(LLMEngine("replay", provider="replay", workspace=tmp_path),
                         tools="read_file", service=service).run("do it")
    assert envelope.error is not None and envelope.error.type == "ProviderError"
    assert str(path) in envelope.error.message and "line 1" in envelope.error.message
