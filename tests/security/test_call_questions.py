"""Attacks on the question a call of a write tool asks (``[sandbox] approve = "write"``):
a program chooses the arguments it shows the person. They are shown printable (control,
escape and bidi characters escaped, so they cannot rewrite a terminal or reorder what the
person reads) and bounded, however large or many they are; the question's frame from the
kernel's side is checked like any other."""

from __future__ import annotations

import pytest

from lackpy_kernel.kit import ToolSpec, builtin_toolbox
from lackpy_kernel.kit.changes import MAX_CALL_CHARS, Change
from lackpy_kernel.run import Sandbox, SandboxLimits, sandbox_supported
from lackpy_kernel.run.kernel_side._approval import call_change

pytestmark = pytest.mark.skipif(not sandbox_supported(), reason="the worker needs Linux")

HIDDEN = ("\x1b", "\u202e", "\u2066", "\r", "\x07", "\u2028")


@pytest.fixture
def asked(tmp_path):
    """Run a program with a kernel tool ``post`` (graded write); what it was asked."""
    toolbox = builtin_toolbox(tmp_path)
    toolbox.register_tool(ToolSpec("post", "custom"), lambda *args, **kwargs: "sent")
    box = Sandbox(tmp_path, SandboxLimits(timeout=20, memory_mb=256, max_result_mb=2),
                  toolbox=toolbox)
    changes: list[Change] = []

    def run(program: str):
        result = box.run(program, ["post"], approve=lambda change: changes.append(change)
                         or False)
        return result, changes

    yield run
    box.close()


def shown(change: Change) -> str:
    return change.summary() + change.to_text() + repr(change.to_frame())


def test_control_and_bidi_characters_in_arguments_are_shown_escaped(asked):
    result, (change,) = asked("post('\\x1b[2J\\x1b]0;pwned\\x07', 'a\\u202eevil\\u2066',"
                              " note='line\\rover\\u2028')")
    assert result.error_type == "ToolCallError"
    text = change.summary() + change.to_text()
    assert not any(char in text for char in HIDDEN)
    assert "\\x1b[2J" in change.summary() and "\\u202e" in change.summary()


def test_a_huge_argument_is_shown_bounded(asked):
    result, (change,) = asked("post('x' * 1500000)")
    assert "was not run: it was declined" in result.error
    assert len(change.call.arguments) <= MAX_CALL_CHARS + 3
    assert len(change.to_text()) < 3 * MAX_CALL_CHARS


def test_many_arguments_are_shown_bounded(asked):
    result, (change,) = asked("post(*[[str(n)] * 10 for n in range(20000)])")
    assert "was not run" in result.error
    assert len(change.call.arguments) <= MAX_CALL_CHARS + 3


def test_deeply_nested_arguments_are_shown_bounded():
    nested: list = []
    for _ in range(5000):
        nested = [nested]
    change = call_change("post", [nested], {"k\x1b": "v"})
    assert len(change.call.arguments) <= MAX_CALL_CHARS + 3
    assert "\x1b" not in shown(change)


def test_a_hostile_tool_name_and_a_malformed_call_frame(asked):
    change = Change.of_call("post\u202e\x1b" * 1000, "a")
    assert not any(char in change.summary() for char in HIDDEN)
    assert len(change.call.name) < 2000
    for bad in ({"files": [], "call": "post"}, {"files": [], "call": {"name": 1}},
                {"files": [], "call": {"name": "x"}}):
        with pytest.raises(ValueError, match="malformed change"):
            Change.from_frame(bad)
    frame = Change.of_call("post", "'\\x1b'").to_frame()
    assert Change.from_frame(frame) == Change.of_call("post", "'\\x1b'")
