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
import pickle
import signal
import struct
import time
import tracemalloc

import pytest

from lackpy_kernel.config import LackpyConfig
from lackpy_kernel.run import Sandbox, SandboxLimits, sandbox_supported, wire
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
