"""Attacks on the sandbox's new parts: partial commits, the frames' opcode check, budgets.

A program's process sends back only the variables it may have changed (``run/commit.py``):
a program must not be able to change a variable without the change being kept, grow the
session past its limit a little at a time, or break the sharing of values it aliased. What
comes back is read opcode by opcode (``run/wire.py``): a crafted frame is refused without
the reader allocating more than the frame warrants, and never builds an object. Budgets
(tool calls, the session's size) hold however a program spends them. Programs run in the
real sandbox worker, through ``Sandbox`` and ``LackpyService``.
"""

from __future__ import annotations

import os
import pickletools
import signal
import struct
import time
import tracemalloc

import pytest

from lackpy_kernel.run import Sandbox, SandboxLimits, sandbox_supported, wire
from lackpy_kernel.run.plain import display_problem, jsonable
from lackpy_kernel.service import LackpyService

pytestmark = pytest.mark.skipif(not sandbox_supported(), reason="the worker needs Linux")
KIT = ["read_file", "find_files"]


@pytest.fixture(scope="module")
def box(tmp_path_factory):
    workspace = tmp_path_factory.mktemp("commits")
    (workspace / "a.txt").write_text("a")
    with Sandbox(workspace, SandboxLimits(timeout=30, max_result_mb=2)) as running:
        yield running


def run(box, program):
    result = box.run(program, KIT)
    assert result.success, (program, result.error)
    return result.output


# -- partial commits: what a program changed is kept, whatever its names --------------------


@pytest.mark.parametrize("name", ["v\u0300", "x\u0301\u0301", "n\u0903", "c\u00b7d",
                                  "u\u203f", "p\u2118"],
                         ids=["grave", "two-acutes", "visarga", "middle-dot", "tie", "weierstrass"])
def test_a_change_in_place_is_kept_whatever_letters_the_name_has(box, name):
    assert name.isidentifier()
    run(box, f"{name} = [1]")
    run(box, f"{name}.append(2)")
    run(box, f"{name}[0] = 0")
    assert run(box, name) == [0, 2]


def test_a_change_through_an_alias_reaches_every_name_of_the_value(box):
    run(box, "al = [1]\nbl = {'k': al}")
    run(box, "cl = bl['k']")
    run(box, "cl.append(2)")
    assert run(box, "[al, bl['k'], cl]") == [[1, 2], [1, 2], [1, 2]]
    run(box, "bl['k'].append(3)")
    assert run(box, "[al, cl, al == cl]") == [[1, 2, 3], [1, 2, 3], True]


def test_aliases_survive_the_worker_dying(tmp_path):
    with Sandbox(tmp_path, SandboxLimits(timeout=30)) as box:
        run(box, "da = [1]\ndb = [da, da]")
        run(box, "dc = db[0]")
        os.kill(box.worker_pid, signal.SIGKILL)
        box.run("1", KIT)  # the worker's death is this program's SandboxError, or not seen
        run(box, "dc.append(2)")
        assert run(box, "[da, db, dc]") == [[1, 2], [[1, 2], [1, 2]], [1, 2]]


def test_the_session_cannot_grow_past_its_limit_a_little_at_a_time(box):
    run(box, "kept = 'still here'")
    grown = 0
    for step in range(10):
        result = box.run(f"g{step} = 'x' * 400000", KIT)
        if not result.success:
            assert result.error_type == "ResultTooLarge", result.error
            break
        grown += 1
    assert grown < 10
    assert run(box, "kept") == "still here"
    result = box.run(f"g{grown}", KIT)
    assert not result.success  # the cell over the limit kept nothing
    for step in range(grown):
        run(box, f"g{step} = None")


def test_a_value_cannot_grow_in_place_past_the_limit(box):
    run(box, "growing = ['x' * 300000]")
    outcomes = [box.run("growing.append('y' * 300000)", KIT) for _ in range(10)]
    assert any(outcome.error_type == "ResultTooLarge" for outcome in outcomes)
    size = run(box, "sum([len(part) for part in growing])")
    assert size <= 2_000_000
    run(box, "growing = None")


def test_sharing_cannot_hide_a_value_from_the_session_limit(box):
    # pickle keeps the sharing of the rows but writes each int again: 2.5 MB, over 2 MB
    result = box.run("n = int('9' * 4000)\nrow = [n] * 1500\nhidden = [row] * 100000", KIT)
    assert not result.success and result.error_type == "ResultTooLarge", result.error
    assert not box.run("hidden", KIT).success


def test_variables_that_cannot_be_kept_within_the_memory_limit_are_a_memory_error(tmp_path):
    # 8 MB in the program, 1.7 GB as a pickle (pickle writes each int again): the child runs
    # out of memory after the program, while it readies the commit
    with Sandbox(tmp_path, SandboxLimits(timeout=30, memory_mb=256)) as small:
        assert small.run("kept = 'still here'", KIT).success
        result = small.run("n = int('9' * 4000)\nbig = [n] * 1000000\nlen(big)", KIT)
        assert (result.success, result.error_type) == (False, "MemoryError"), result.error
        assert "256 MB" in result.error and "[sandbox] memory_mb" in result.error
        assert small.run("kept", KIT).output == "still here"
        assert not small.run("big", KIT).success


# -- frames: crafted pickles are refused without building or allocating ---------------------


def peak_while(call):
    tracemalloc.start()
    try:
        call()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def refused(body):
    def load():
        with pytest.raises(wire.WireError):
            wire.loads_body(body)
    return peak_while(load)


PROTO = b"\x80\x05"


@pytest.mark.parametrize("body", [
    PROTO + b"\x8c\x08builtins\x8c\x04eval\x93\x8c\x011\x85R.",     # STACK_GLOBAL eval, REDUCE
    PROTO + b"cos\nsystem\n\x8c\x02id\x85R.",                         # GLOBAL os.system
    PROTO + b"\x8c\x02os\x8c\x06system\x93.",                         # a reference, not a call
    PROTO + b"\x8c\x08builtins\x8c\x07complex\x93\x8c\x03abc\x85R.",  # complex('abc')
    PROTO + b"\x8c\x08builtins\x8c\x07complex\x93]\x85R.",            # complex([])
    PROTO + b"}\x8c\x01a\x8c\x01b\x87a.",                             # APPEND to a dict
    PROTO + b"\x8f(]e\x90.",                                          # ADDITEMS of a list to a set
    PROTO + b"\x95" + struct.pack("<Q", 2 ** 62) + b"N.",             # a frame of 4 EiB
    PROTO + b"\x8d" + struct.pack("<Q", 2 ** 62) + b"abc.",           # a string of 4 EiB
    PROTO + b"\x8b" + struct.pack("<I", 2 ** 31) + b"\x01.",          # a long of 2 GiB
    PROTO + b"j\xff\xff\xff\x7f.",                                    # LONG_BINGET of an index
    PROTO + b"N\x94h\x05.",                                           # BINGET past the memo
    PROTO + b"Nb.",                                                   # BUILD
    PROTO + b"N\x8c\x01x\x8c\x01y\x86\x81.",                          # NEWOBJ
    PROTO + b"(\x8c\x08builtins\x8c\x04eval\x93o.",                   # OBJ
    PROTO + b"\x8c\x03abcP.",                                         # PERSID
    PROTO + b"\x82\x01\x00.",                                         # EXT1
], ids=["stack-global-eval", "global-system", "reference", "complex-text", "complex-list",
        "append-to-dict", "additems-list", "frame-4eib", "string-4eib", "long-2gib",
        "memo-index", "memo-miss", "build", "newobj", "obj", "persid", "ext"])
def test_a_crafted_frame_is_refused_without_allocating(body):
    assert refused(body) < 1_000_000


# The opcodes a pickle of plain data may use (pickletools' names), the rest refused
PLAIN_OPCODES = {
    "MARK", "STOP", "BININT", "BININT1", "BININT2", "LONG1", "LONG4", "NONE", "NEWTRUE",
    "NEWFALSE", "BINFLOAT", "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "SHORT_BINBYTES",
    "BINBYTES", "BINBYTES8", "EMPTY_LIST", "APPEND", "APPENDS", "EMPTY_TUPLE", "TUPLE",
    "TUPLE1", "TUPLE2", "TUPLE3", "EMPTY_DICT", "DICT", "SETITEM", "SETITEMS", "EMPTY_SET",
    "ADDITEMS", "FROZENSET", "BINGET", "LONG_BINGET", "MEMOIZE", "STACK_GLOBAL", "REDUCE",
    "PROTO", "FRAME", "POP", "POP_MARK", "DUP"}


@pytest.mark.parametrize("code", range(256))
def test_each_opcode_is_checked_as_plain_data_needs(code):
    """Every byte as the first opcode after PROTO: refused unless plain data uses it (a
    pickle of those may still fail to load; it gets past the check only to its STOP)."""
    opcode = pickletools.code2op.get(chr(code))
    body = PROTO + bytes([code]) + b"N" * 9 + b"."  # NONE after it: its argument, or NONEs
    if opcode is None or opcode.name not in PLAIN_OPCODES:
        with pytest.raises(wire.WireError, match="refusing pickle opcode"):
            wire.check_opcodes(body)
    else:
        try:
            wire.check_opcodes(body)
        except wire.WireError as exc:
            assert "refusing" not in str(exc), opcode.name


def test_a_frame_of_references_allocates_no_more_than_its_size():
    count = 500_000
    body = PROTO + b"\x8c\x01x(" + b"2" * count + b"l."  # DUP the string, then LIST: refused
    assert refused(body) < 1_000_000
    body = PROTO + b"]\x8c\x01x\x940(" + b"h\x00" * count + b"e."  # a list of 500,000 refs
    peak = peak_while(lambda: wire.loads_body(body))
    assert peak < 16 * len(body)  # 8 bytes a reference, on the stack and in the list


def test_a_frame_nested_a_million_deep_is_read_and_sent_nowhere_recursive():
    body = PROTO + b"]" * 1_000_000 + b"a" * 999_999 + b"."
    value = wire.loads_body(body)
    assert display_problem(value) == "nested too deeply to show"
    assert isinstance(jsonable(value), list)


# -- budgets however they are spent ------------------------------------------------------


@pytest.fixture(scope="module")
def capped(tmp_path_factory):
    workspace = tmp_path_factory.mktemp("capped")
    for name in "abcde":
        (workspace / f"{name}.txt").write_text(name)
    (workspace / ".lackpy").mkdir()
    (workspace / ".lackpy" / "config.toml").write_text("[sandbox]\nmax_tool_calls = 20\n")
    with LackpyService(workspace) as service:
        yield service


@pytest.mark.parametrize("program", [
    "[read_file('a.txt') for i in range(1000)]",
    "[[read_file(p) for p in find_files('*.txt')] for i in range(100)]",
    "max(find_files('*.txt') * 100, key=read_file)",
    "t = 0\nfor i in range(100):\n    for p in find_files('*.txt'):\n        t += len(read_file(p))",
    "sorted(find_files('*.txt') * 100, key=lambda p: read_file(p))",
    "{p: read_file(p) for p in find_files('*.txt') * 50}",
], ids=["comprehension", "nested", "max-key", "loops", "lambda-key", "dict"])
async def test_the_tool_call_budget_holds_however_calls_are_made(capped, program):
    started = time.monotonic()
    result = await capped.run_program(program, KIT)
    assert result.error_type == "ToolCallBudgetError", result.error
    assert len(result.trace.entries) == 21 and time.monotonic() - started < 60
    assert (await capped.run_program("read_file('a.txt')", KIT)).output == "a"
