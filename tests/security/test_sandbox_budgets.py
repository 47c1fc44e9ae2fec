"""Budgets a program cannot sidestep: folders, tool calls, hard links, and the frames that
come back from its process.

Each reproduction from the second security round is a test here; programs run with the
real tools, in the runner and in the sandbox worker.
"""

from __future__ import annotations

import os
import pickle
import tracemalloc

import pytest

from lackpy_kernel.config import LackpyConfig, load_config
from lackpy_kernel.errors import (
    ConfigError,
    LackpyRuntimeError,
    ToolCallBudgetError,
    WriteBudgetError,
)
from lackpy_kernel.kit import builtin_toolbox, effects, resolve_kit
from lackpy_kernel.lang import max_calls, validate
from lackpy_kernel.run import RestrictedRunner, Sandbox, SandboxLimits, sandbox_supported, wire
from lackpy_kernel.service import LackpyService

ALL_TOOLS = ["read_file", "find_files", "write_file", "edit_file", "find_definitions", "find_callers"]
SECRET = "TOP-SECRET-linked"


def run_here(workspace, program, **runner_options):
    kit = resolve_kit(ALL_TOOLS, builtin_toolbox(workspace))
    return RestrictedRunner(**runner_options).run(program, kit.callables)


def folders_in(root):
    return sum(len(dirs) for _, dirs, _ in os.walk(root))


# -- folders count against the write budget (15,191 folders, 248 files counted) ----------


def test_a_program_cannot_make_more_folders_than_its_budget(tmp_path):
    program = "for i in range(5000):\n    write_file('d' + str(i) + '/e/f.txt', 'x')"
    result = run_here(tmp_path, program)
    assert result.error_type == "WriteBudgetError"
    assert "folders" in result.error and "per program" in result.error
    assert folders_in(tmp_path) <= effects.WRITE_BUDGET_FOLDERS


def test_a_program_cannot_make_folders_deeper_than_the_limit(tmp_path):
    result = run_here(tmp_path, "write_file('a/' * 200 + 'f.txt', 'x')")
    assert result.error_type == "WriteBudgetError"
    assert f"at most {effects.MAX_FOLDER_DEPTH} levels" in result.error
    assert folders_in(tmp_path) == 0  # refused before the first folder


def test_writing_into_folders_that_exist_spends_no_folder_budget(tmp_path, monkeypatch):
    monkeypatch.setattr(effects, "WRITE_BUDGET_FOLDERS", 2)
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    result = run_here(tmp_path, "for i in range(20):\n    write_file('a/b/c/' + str(i), 'x')\n"
                                "write_file('new/one.txt', 'x')\nwrite_file('new/two/x', 'y')")
    assert result.success, result.error
    assert run_here(tmp_path, "write_file('n1/n2/n3/x', 'y')").error_type == "WriteBudgetError"


@pytest.mark.skipif(not sandbox_supported(), reason="the worker needs Linux")
def test_the_folder_budget_holds_in_the_sandbox_and_the_session_survives(tmp_path):
    with Sandbox(tmp_path, SandboxLimits(timeout=60), approve_writes=False) as box:
        box.run("kept = 1", ALL_TOOLS)
        result = box.run("for i in range(5000):\n    write_file('d' + str(i) + '/f', 'x')",
                         ALL_TOOLS)
        assert result.error_type == "WriteBudgetError"
        assert len(result.trace.files_modified) == effects.WRITE_BUDGET_FOLDERS
        assert box.run("kept", ALL_TOOLS).output == 1


# -- a runtime cap on tool calls --------------------------------------------------------


@pytest.fixture
def five_files(tmp_path):
    for name in "abcde":
        (tmp_path / f"{name}.txt").write_text(name)
    return tmp_path


SORT_BY_CONTENT = "sorted(find_files('*.txt'), key=read_file)"


def test_one_call_site_cannot_make_more_calls_than_the_cap(five_files):
    # A max_calls rule counts call sites; key=read_file calls once per path at run time.
    assert validate(SORT_BY_CONTENT, set(ALL_TOOLS), [max_calls(2)]).valid
    result = run_here(five_files, SORT_BY_CONTENT, max_tool_calls=3)
    assert result.error_type == "ToolCallBudgetError"
    assert "max_tool_calls" in result.error
    assert [entry.success for entry in result.trace.entries] == [True, True, True, False]
    with pytest.raises(LackpyRuntimeError, match="tool call budget exceeded") as raised:
        result.raise_for_error()
    assert raised.value.error_type == "ToolCallBudgetError"


def test_without_a_cap_the_runner_makes_every_call(five_files):
    assert run_here(five_files, SORT_BY_CONTENT).output == [f"{n}.txt" for n in "abcde"]


@pytest.mark.parametrize("sandbox", [True, False], ids=["sandbox", "in-process"])
async def test_the_config_key_caps_tool_calls(five_files, sandbox):
    if sandbox and not sandbox_supported():
        pytest.skip("the worker needs Linux")
    (five_files / ".lackpy").mkdir()
    (five_files / ".lackpy" / "config.toml").write_text("[sandbox]\nmax_tool_calls = 3\n")
    config = load_config(five_files)
    assert config.sandbox_max_tool_calls == 3
    with LackpyService(five_files, config) as service:
        capped = await service.run_program(SORT_BY_CONTENT, ALL_TOOLS, sandbox=sandbox)
        within = await service.run_program("read_file('a.txt')", ALL_TOOLS, sandbox=sandbox)
    assert capped.error_type == "ToolCallBudgetError"
    assert within.output == "a"


def test_the_default_cap_is_generous():
    assert LackpyConfig().sandbox_max_tool_calls == SandboxLimits().max_tool_calls >= 10_000


@pytest.mark.parametrize("value", ["0", "-1", "'many'", "2.5"])
def test_a_bad_max_tool_calls_is_a_config_error(tmp_path, value):
    (tmp_path / ".lackpy").mkdir()
    (tmp_path / ".lackpy" / "config.toml").write_text(f"[sandbox]\nmax_tool_calls = {value}\n")
    with pytest.raises(ConfigError, match="max_tool_calls"):
        load_config(tmp_path)


# -- hard links: another name may be outside ---------------------------------------------


@pytest.fixture
def linked(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET)
    (outside / "secret.py").write_text(f"def leak():\n    return '{SECRET}'\n")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    os.link(outside / "secret.txt", workspace / "inside.txt")
    os.link(outside / "secret.py", workspace / "inside.py")
    return workspace, outside


def test_a_file_with_another_name_is_not_read(linked):
    workspace, _ = linked
    result = run_here(workspace, "read_file('inside.txt')")
    assert result.error_type == "WorkspaceError"
    assert "hard links" in result.error and SECRET not in str(result.to_dict())


def test_a_file_with_another_name_is_not_written_or_edited(linked):
    workspace, outside = linked
    for program in ("write_file('inside.txt', 'changed')",
                    f"edit_file('inside.txt', '{SECRET}', 'changed')"):
        result = run_here(workspace, program)
        assert result.error_type == "WorkspaceError", result.error
    assert (outside / "secret.txt").read_text() == SECRET
    assert (workspace / "inside.txt").stat().st_nlink == 2


def test_code_search_skips_files_with_another_name(linked):
    workspace, _ = linked
    result = run_here(workspace, "find_definitions('leak')")
    assert result.success and result.output == []


def test_a_file_with_one_name_is_read_as_before(linked):
    workspace, _ = linked
    (workspace / "own.txt").write_text("mine")
    assert run_here(workspace, "read_file('own.txt')").output == "mine"


# -- frames: the unpickler allocates no more than the frame warrants ---------------------


HUGE_MEMO_INDEX = b"\x80\x05r\xff\xff\xff\x0fN."  # PROTO 5, LONG_BINPUT 0x0fffffff, None, STOP


def test_a_nine_byte_frame_with_a_huge_memo_index_is_refused_without_allocating():
    assert len(HUGE_MEMO_INDEX) == 9
    tracemalloc.start()
    try:
        with pytest.raises(wire.WireError, match="opcode"):
            wire.loads_body(HUGE_MEMO_INDEX)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000


@pytest.mark.parametrize("opcode", [b"p4294967295\n", b"q\xff", b"r\xff\xff\xff\xff"])
def test_every_memo_put_opcode_is_refused(opcode):
    with pytest.raises(wire.WireError):
        wire.loads_body(b"\x80\x05N" + opcode + b".")


@pytest.mark.parametrize("value", [
    None, True, 2, -2 ** 70, 1.5, 2j, "é" * 300, b"raw", [1, [2]], (1, (2,)), {1: {2}},
    frozenset({1}), {"k" * 300: "v" * 70_000},
])
def test_plain_data_passes_the_opcode_check(value):
    assert wire.loads_body(pickle.dumps(value, protocol=wire.PROTOCOL)) == value


def test_a_frame_that_ends_early_is_refused():
    body = pickle.dumps("x" * 1000, protocol=wire.PROTOCOL)
    with pytest.raises(wire.WireError):
        wire.loads_body(body[:50])


def test_old_protocol_pickles_are_refused():
    with pytest.raises(wire.WireError):
        wire.loads_body(pickle.dumps([1, 2], protocol=2))


def test_errors_are_in_the_one_tree():
    assert issubclass(ToolCallBudgetError, Exception)
    assert WriteBudgetError.__module__ == ToolCallBudgetError.__module__ == "lackpy_kernel.errors"
