"""Escape attempts through the forwarded tool calls: a program's process that an attacker
controls cannot use the channel to run anything in the kernel's process.

The attacker here is a Python tool that runs in the program's process and
writes raw frames up its pipe, as code that took over that process would: a
call of a tool that is not in the kit, or that runs in the child; frames that
are malformed, carry objects that are not plain data, or announce a huge size;
calls out of turn, two at once, or more than ``[sandbox] max_tool_calls``. The
worker stops the program each time and says why; the kernel's tools never run
for it, the worker lives on and the session's variables are as they were.
"""

from __future__ import annotations

import textwrap

import pytest

from lackpy_kernel.kit import ToolSpec, builtin_toolbox
from lackpy_kernel.kit.builtin_specs import READ_GRADE
from lackpy_kernel.kit.sources import ToolSources
from lackpy_kernel.run import Sandbox, SandboxLimits, sandbox_supported

pytestmark = pytest.mark.skipif(not sandbox_supported(), reason="the worker needs Linux")

MAX_CALLS = 3
HOSTILE = '''
import os
import pickle
import struct
import sys

from lackpy_kernel.run import wire


def _channel():
    """The program's end of the forwarded calls, found as an attacker would."""
    frame = sys._getframe()
    while frame is not None:
        snapshot = frame.f_locals.get("snapshot")
        if snapshot is not None and hasattr(snapshot, "channel"):
            return snapshot.channel
        frame = frame.f_back
    raise RuntimeError("no channel")


def _frame(message, nonce=None):
    """``message`` sealed as the program's process seals its frames (the attacker reads the
    program's nonce from the channel)."""
    return wire.dumps({"nonce": _channel().nonce if nonce is None else nonce,
                       "event": message})


def forge(attempt: str) -> str:
    """Send the worker what a well-behaved program never sends."""
    channel = _channel()
    call = {"kind": "call", "id": channel.made + 1, "tool": "record", "args": ["forged"],
            "kwargs": {}}
    if attempt == "flood":
        for number in range(10):
            channel.call("record", "record", (number,), {})
        return "all answered"
    frames = {
        "not_in_kit": [_frame({**call, "tool": "secret"})],
        "child_tool": [_frame({**call, "tool": "read_file", "args": ["notes.txt"]})],
        "itself": [_frame({**call, "tool": "forge", "args": ["flood"]})],
        "malformed": [_frame({**call, "extra": "key"})],
        "kwargs_not_str": [_frame({**call, "kwargs": {1: "x"}})],
        "out_of_turn": [_frame({**call, "id": channel.made + 7})],
        "unsealed": [wire.dumps(call)],
        "another_programs": [_frame(call, nonce=channel.nonce + 1)],
        # one write: the worker reads both before the first is answered
        "two_at_once": [_frame(call) + _frame({**call, "id": channel.made + 2})],
        "non_plain": [struct.pack("!Q", len(body := pickle.dumps(
            {**call, "args": [os.system]}, protocol=5))) + body],
        "oversized": [struct.pack("!Q", 1 << 40) + b"x" * 64],
    }[attempt]
    for data in frames:
        wire.write_all(channel.up, data)
    return str(channel._next_answer("forge"))
'''


class KernelSide:
    """The tools that run in the kernel's process, and who called them."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple]] = []

    def register(self, toolbox) -> None:
        toolbox.register_tool(ToolSpec("record", "custom", **READ_GRADE), self.record)
        toolbox.register_tool(ToolSpec("secret", "custom", **READ_GRADE), self.secret)

    def record(self, *args):
        self.calls.append(("record", args))
        return len(self.calls)

    def secret(self, *args):
        self.calls.append(("secret", args))
        return "the kernel's secret"


@pytest.fixture
def kernel_side():
    return KernelSide()


@pytest.fixture(params=[1, 10], ids=["reuse=1", "reuse=10"])
def sandbox(request, tmp_path, kernel_side):
    """A sandbox whose walled processes run one program each, or up to ten of a key (the
    default): the attacks hold for both. (``Sandbox`` takes its limits, ``[sandbox]
    reuse`` among them, from its caller, not from ``.lackpy/config.toml``.)"""
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "hostile.py").write_text(textwrap.dedent(HOSTILE))
    toolbox = builtin_toolbox(tmp_path)
    kernel_side.register(toolbox)
    sources = ToolSources({"hostile": {"plugin": "python", "path": "hostile.py"}}, tmp_path)
    sources.attach(toolbox)
    box = Sandbox(tmp_path, SandboxLimits(timeout=20, max_result_mb=1, max_tool_calls=MAX_CALLS,
                                          reuse=request.param), toolbox=toolbox)
    assert box.run("kept = [1, 2]", ["read_file"]).success
    yield box
    box.close()
    sources.close()


@pytest.mark.parametrize(("attempt", "error_type", "reason"), [
    ("not_in_kit", "SandboxError", "a call of 'secret', which is not a tool of its kit that runs "
                                   "in the kernel"),
    ("child_tool", "SandboxError", "a call of 'read_file', which is not a tool of its kit"),
    ("itself", "SandboxError", "a call of 'forge', which is not a tool of its kit"),
    ("malformed", "SandboxError", "a malformed tool call"),
    ("kwargs_not_str", "SandboxError", "a malformed tool call"),
    ("out_of_turn", "SandboxError", "a tool call out of turn"),
    ("unsealed", "SandboxError", "a frame from the program's process that is not sealed"),
    ("another_programs", "SandboxError", "a frame from the program's process that is not the "
                                         "current program's"),
    ("two_at_once", "SandboxError", "a tool call before the last one was answered"),
    ("non_plain", "SandboxError", "refusing to load posix.system: frames carry plain data only"),
    ("oversized", "ResultTooLarge", "over the 1 MB limit"),
])
def test_a_forged_tool_call_stops_the_program_and_runs_nothing_here(sandbox, kernel_side,
                                                                    attempt, error_type, reason):
    result = sandbox.run(f"kept.append(3)\nforge({attempt!r})", ["forge", "record", "read_file"])
    assert not result.success
    assert (result.error_type, reason in result.error) == (error_type, True), result.error
    assert ("secret", ()) not in kernel_side.calls
    assert [call for call in kernel_side.calls if call[1] == ("forged",)] in (
        [], [("record", ("forged",))])  # two_at_once: the first, well-formed, call ran
    assert sandbox.run("kept", ["read_file"]).output == [1, 2]


def test_calls_past_max_tool_calls_are_refused_even_when_the_program_skips_its_own_count(
        sandbox, kernel_side):
    result = sandbox.run("forge('flood')", ["forge", "record"])
    assert result.error_type == "SandboxError"
    assert f"more tool calls than [sandbox] max_tool_calls ({MAX_CALLS}) allows" in result.error
    assert kernel_side.calls == [("record", (number,)) for number in range(MAX_CALLS)]
    assert sandbox.run("len(kept)", ["read_file"]).output == 2


def test_the_worker_outlives_every_forged_call(sandbox):
    pid = sandbox.worker_pid
    for attempt in ("not_in_kit", "oversized", "non_plain", "flood"):
        assert not sandbox.run(f"forge({attempt!r})", ["forge", "record"]).success
    assert sandbox.worker_pid == pid
    assert sandbox.run("record('honest')", ["record"]).output >= 1
