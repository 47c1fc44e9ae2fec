"""The frames on the sandbox's pipes: each crosses as plain data and comes back the same
dataclass, and a frame of the wrong shape is refused with a WireError that says which frame
and which field (a program's process may send anything)."""

from __future__ import annotations

import dataclasses
import functools
import textwrap

import pytest

from lackpy_kernel.kit import builtin_toolbox
from lackpy_kernel.kit.changes import Change
from lackpy_kernel.kit.sources import ToolSources
from lackpy_kernel.run import ExecutionResult, Sandbox, SandboxLimits, sandbox_supported, wire
from lackpy_kernel.run import protocol as p

LOAD = p.PythonLoad("mine", "tools.py", None, "digest")
TOOLS = {"digest": p.ToolDescription("digest", "mine", ("text",), 5.0, LOAD),
         "post": p.ToolDescription("post", "mcp github")}
REQUEST = p.RunRequest(program="digest('x')", workspace="/work", kit=["read_file"], tools=TOOLS,
                       protected={"tools.py": "mine"}, params={"n": 1}, timeout=5,
                       memory_mb=256, max_tool_calls=None, dry=True, approve=True,
                       path_guard={"writable": ["src/"], "floor": {"deny": []}, "source": "g.py"})
RESULT = ExecutionResult(True, output=[1, 2.5, "x"], notes=["kept"])
REPLY = p.Reply(RESULT, p.Commit([(["a"], b"pickle")], ["gone"], {"a": "int"}))

REQUESTS = [REQUEST, p.Cancel(), p.Describe(previews=False), p.Reset(),
            p.Restore([(["a", "b"], b"pickle")]), p.Verdict(False, "they were declined"),
            p.Answer(1, True, {"rows": [1, 2]}, protect={"t.py": "mine"}),
            p.Answer(2, False, error_type="ValueError", error_args=["bad"]),
            p.Asking(3), p.Asked(3)]
RESPONSES = [p.Ready(42), p.Ack(), p.Ack("n: int"), REPLY, p.Reply(RESULT),
             p.Question(Change.of_call("post", "'x'")), p.ToolCall(1, "post", ["x"], {"to": "y"})]
TAKEN = [p.Started(REQUEST.without_program(), b"rest"), p.HandedBack(p.Reset(), b""),
         p.Closed(b"")]
EVENTS = [p.Modified("notes/a.txt"), p.ToolCall(2, "post", [], {}), REPLY]


def _across(frame: dict) -> object:
    """``frame`` as the other end of a pipe reads it."""
    return wire.loads_body(wire.dumps(frame)[wire.HEADER_SIZE:])


def _event(frame):
    """The event in ``frame`` (as a program's process sends it, sealed with its nonce)."""
    return p.read_event(p.sealed(frame, 7), 7)


@pytest.mark.parametrize(("read", "sent"), [
    *((p.read_request, sent) for sent in REQUESTS),
    *((p.read_response, sent) for sent in RESPONSES),
    *((p.read_taken, sent) for sent in TAKEN),
    *((_event, sent) for sent in EVENTS),
    (p.Go.from_frame, p.Go(b"next")),
    (p.Commit.from_frame, p.Commit()),
], ids=lambda value: type(value).__name__)
def test_each_frame_crosses_as_plain_data_and_comes_back_the_same(read, sent):
    assert read(_across(sent.to_frame())) == sent


def test_a_run_request_is_made_by_keyword_only():
    with pytest.raises(TypeError):
        p.RunRequest("1 + 1", "/work")
    with pytest.raises(dataclasses.FrozenInstanceError):
        REQUEST.timeout = 512


def _run(**fields: object) -> dict:
    return {**REQUEST.to_frame(), **fields}


def _reply(**result: object) -> dict:
    return {**p.Reply(RESULT).to_frame(), "result": {**RESULT.to_dict(), **result}}


@pytest.mark.parametrize(("read", "frame", "message"), [
    # the kernel's requests (a waiting child and the worker read them)
    (p.read_request, ["run"], "unexpected request: a list"),
    (p.read_request, {"op": "explode"}, "unexpected request: 'explode'"),
    (p.RunRequest.from_frame, {"op": "reset"}, "malformed run request: its op is 'reset', not 'run'"),
    (p.read_request, _run(workspace=None), "malformed run request: 'workspace' is None, not str"),
    (p.read_request, _run(timeout="120"), "'timeout' is str, not int or float"),
    (p.read_request, _run(memory_mb=True), "'memory_mb' is bool, not int or float"),
    (p.read_request, _run(dry="yes"), "'dry' is str, not bool"),
    (p.read_request, _run(import_path=["/lib", 3]), "'import_path' holds something other than"),
    (p.read_request, _run(protected={"a.py": 1}), "'protected' holds something other than"),
    (p.read_request, _run(tools={"post": {"tool": "post"}}),
     "malformed tool description: it has no 'source'"),
    (p.read_request, _run(tools={"t": {"tool": "t", "source": "s", "load": {
        "provider": "s", "path": None, "module": "m"}}}), "malformed tool's load: it has no 'function'"),
    (p.read_request, {"op": "describe", "previews": "no"}, "malformed describe request: 'previews'"),
    (p.read_request, {"op": "restore", "units": [[["a"], "not bytes"]]},
     "a commit unit must be a list of names and a pickle"),
    (p.read_request, {"op": "run", "workspace": "/w", "path_guard": ["src/"]},
     "malformed run request: 'path_guard' is list"),
    (p.read_request, {"op": "approve", "apply": "yes", "reason": ""},
     "malformed verdict: 'apply' is str, not bool"),
    (p.read_request, {"op": "answer", "id": "1", "ok": True},
     "malformed tool call's answer: 'id' is str, not int"),
    (p.read_request, {"op": "answer", "id": 1, "ok": True, "protect": {"a.py": None}},
     "'protect' holds something other than strings"),
    (p.read_request, {"op": "asking"}, "malformed asking: it has no 'id'"),
    (p.read_request, {"op": "asked", "id": 1.0}, "malformed asked: 'id' is float, not int"),
    # the worker's frames, to the kernel
    (p.read_response, ("ready",), "unexpected frame from the worker: a tuple"),
    (p.read_response, {"kind": "ready", "pid": "1"}, "malformed ready: 'pid' is str, not int"),
    (p.read_response, {"kind": "ack", "description": 7}, "malformed acknowledgement"),
    (p.read_response, {"kind": "approve", "change": {"files": 3}},
     "the worker asked about malformed change"),
    # a child's frames, to the worker
    (p.read_taken, {"kind": "done"}, "unexpected frame from the waiting child: 'done'"),
    (p.read_taken, {"kind": "started", "request": {"op": "reset"}, "leftover": b""},
     "malformed run request: its op is 'reset'"),
    (p.read_taken, {"kind": "handoff", "request": {"op": "explode"}, "leftover": b""},
     "unexpected request: 'explode'"),
    (p.read_taken, {"kind": "closed", "leftover": ""}, "'leftover' is str, not bytes"),
    (_event, {"kind": "modified", "path": 7}, "malformed modified: 'path' is int, not str"),
    (functools.partial(p.read_event, nonce=7), {"kind": "modified", "path": "a.txt"},
     "a frame from the program's process that is not sealed"),
    (functools.partial(p.read_event, nonce=7), p.sealed({"kind": "modified", "path": "a.txt"}, 8),
     "a frame from the program's process that is not the current program's"),
    (_event, {"kind": "call", "id": 1, "tool": "post", "args": (), "kwargs": {}},
     "a malformed tool call"),
    (_event, {"kind": "call", "id": 1, "tool": 5, "args": [], "kwargs": {}},
     "a malformed tool call"),
    (_event, _reply(success="yes"), "malformed result: 'success' is str, not bool"),
    (_event, _reply(notes="kept"), "malformed result: 'notes' is str, not list"),
    (_event, _reply(trace={"files_modified": ["a.txt", 1]}),
     "malformed result's trace: 'files_modified' holds something other than strings"),
    (_event, _reply(surprise=1), "malformed result: TypeError"),
    (_event, {**_reply(), "commit": {"units": [], "deleted": [1], "types": {}}},
     "malformed commit: 'deleted' holds something other than strings"),
    (p.Go.from_frame, {"kind": "go", "pending": "x"}, "malformed go: 'pending' is str, not bytes"),
])
def test_a_malformed_frame_is_refused_naming_what_is_wrong(read, frame, message):
    with pytest.raises(wire.WireError, match=message.replace("(", r"\(")):
        read(_across(frame) if type(frame) is dict else frame)


HOSTILE = '''
import sys

from lackpy_kernel.run import wire


def forge(frame: dict) -> str:
    """Send the worker ``frame`` up the program's pipe, as code that took over the program's
    process could, then wait."""
    caller = sys._getframe()
    while "snapshot" not in caller.f_locals:
        caller = caller.f_back
    channel = caller.f_locals["snapshot"].channel
    wire.write_all(channel.up, wire.dumps({"nonce": channel.nonce, "event": frame}))
    return str(channel._next_answer("forge"))
'''


@pytest.fixture
def hostile_sandbox(tmp_path):
    (tmp_path / "hostile.py").write_text(textwrap.dedent(HOSTILE))
    toolbox = builtin_toolbox(tmp_path)
    sources = ToolSources({"hostile": {"plugin": "python", "path": "hostile.py"}}, tmp_path)
    sources.attach(toolbox)
    box = Sandbox(tmp_path, SandboxLimits(timeout=20), toolbox=toolbox)
    assert box.run("kept = [1]", ["forge"]).success
    yield box
    box.close()
    sources.close()


@pytest.mark.skipif(not sandbox_supported(), reason="the worker needs Linux")
@pytest.mark.parametrize(("frame", "message"), [
    ({"kind": "modified", "path": ["a.txt"]}, "malformed modified: 'path' is list, not str"),
    ({"kind": "exploded"}, "unexpected frame from the program's process: 'exploded'"),
    (_reply(success=1), "malformed result: 'success' is int, not bool"),
    (_reply(trace={"files_modified": ["a.txt", 5]}), "'files_modified' holds something other"),
])
def test_a_forged_frame_from_the_programs_process_stops_it_and_keeps_the_session(
        hostile_sandbox, frame, message):
    result = hostile_sandbox.run(f"kept.append(2)\nforge({frame!r})", ["forge"])
    assert (result.error_type, message in str(result.error)) == ("SandboxError", True), \
        result.error
    assert "the program's process sent a bad reply" in result.error
    assert hostile_sandbox.run("kept", ["forge"]).output == [1]
