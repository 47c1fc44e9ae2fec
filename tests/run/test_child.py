"""The worker's preparations before a program arrives: the kit it resolves before it forks,
and the warm-up each child runs (``lackpy_kernel.run.child``)."""

from __future__ import annotations

import inspect
import os
from dataclasses import replace
from pathlib import Path

import pytest

import lackpy_kernel
from lackpy_kernel.run import child, runner, sandbox_supported, wire
from lackpy_kernel.run.commit import UnitLog
from lackpy_kernel.run.protocol import RunRequest

pytestmark = pytest.mark.skipif(not sandbox_supported(), reason="the worker needs Linux")


@pytest.fixture
def like(tmp_path):
    (tmp_path / "a.txt").write_text("hello")
    return RunRequest(program="", workspace=str(tmp_path), kit=["read_file", "write_file"],
                      timeout=5.0, memory_mb=256, max_result_bytes=1_000_000)


def _snapshot(like):
    return child.Snapshot({}, UnitLog(keep_blobs=False), like, b"", child.wall_plan(like),
                          like.walled_for(), child.PythonTools())


def test_a_child_takes_programs_like_the_one_it_was_forked_for(like, tmp_path):
    """The warm-up checks a request like the last one as a waiting child checks what it
    reads: that request fits, so the warm-up goes the way a program will."""
    snapshot = _snapshot(like)
    assert child.fits(replace(like, program="1 + 1", params={}), snapshot)
    assert child.fits(replace(like, workspace=f"{like.workspace}/."), snapshot)  # same folder
    other = tmp_path / "other"
    other.mkdir()
    assert not child.fits(replace(like, program="1 + 1", workspace=str(other)), snapshot)


def test_a_frame_that_is_no_run_request_is_refused(like):
    with pytest.raises(wire.WireError):
        RunRequest.from_frame({"op": "reset"})
    with pytest.raises(wire.WireError):
        RunRequest.from_frame(["run"])
    assert RunRequest.from_frame(like.to_frame()) == like


def test_the_warm_up_runs_and_calls_its_tools(like):
    """A warm-up that failed would leave every program to pay for what it should have done."""
    request = replace(like, program=child.WARM_UP_PROGRAM)
    reply = child.run_request(request, _snapshot(like), lambda path: None, warming_up=True)
    result = reply.result
    assert result.success, result.error
    shipped = Path(lackpy_kernel.__file__).parent / child.WARM_UP_SHIPPED
    assert result.output == sorted([len(shipped.read_text(encoding="utf-8")), 2])
    assert [entry.tool for entry in result.trace.entries] == [child.WARM_UP_READ,
                                                              child.WARM_UP_TOOL]
    assert result.trace.files_read == [child.WARM_UP_SHIPPED]
    assert reply.commit is None or not reply.commit.units


@pytest.mark.parametrize("tool", [child.WARM_UP_TOOL, child.WARM_UP_READ])
def test_the_warm_ups_tools_are_its_own(like, tool):
    request = replace(like, program=f"{tool}({child.WARM_UP_SHIPPED!r})")
    result = child.run_request(request, _snapshot(like), lambda path: None).result
    assert not result.success
    assert tool in result.error


def test_a_kit_named_by_its_tools_is_resolved_once_before_the_fork(like):
    child.named_kits.clear()
    child.preresolve(like)
    resolved = list(child.named_kits)
    assert len(resolved) == 1
    tools, _ = child.kit_for(replace(like, program="1"), _snapshot(like))
    assert tools["read_file"] is resolved[0].callables["read_file"]


def test_the_signatures_of_a_named_kits_tools_are_read_before_the_fork(like, monkeypatch):
    """Each program wraps the tools it names with their signatures: read in the worker, the
    children find them read."""
    child.named_kits.clear()
    child.preresolve(like)
    kit = next(iter(child.named_kits))
    read_again = []
    monkeypatch.setattr(inspect, "signature", lambda fn, *args, **kwargs: read_again.append(fn))
    for tool in kit.callables.values():
        assert runner.signature_of(tool) is not None
    assert read_again == [] and len(kit.callables) == 2


def test_protected_files_are_part_of_what_the_kit_is_resolved_for(like, monkeypatch):
    child.named_kits.clear()
    protected = os.path.realpath(os.path.join(like.workspace, "a.txt"))
    guarded = replace(like, protected=[protected])
    open_tools, _ = child.kit_for(like, _snapshot(like))
    guarded_tools, _ = child.kit_for(guarded, _snapshot(guarded))
    monkeypatch.chdir(like.workspace)
    open_tools["write_file"]("a.txt", "changed")
    with pytest.raises(Exception, match="a.txt"):
        guarded_tools["write_file"]("a.txt", "refused")
    assert open(protected).read() == "changed"


def test_a_kit_that_does_not_resolve_is_left_to_the_child_to_report(like):
    child.named_kits.clear()
    bad = replace(like, kit=["no_such_tool"])
    child.preresolve(bad)  # does not raise
    reply = child.run_request(replace(bad, program="1"), _snapshot(bad), lambda path: None)
    assert reply.result.error_type == "KitError"
    assert "no_such_tool" in reply.result.error


def test_a_child_whose_request_has_come_already_goes_straight_to_it(like):
    """Programs sent back to back: the warm-up would make the waiting one wait longer."""
    snapshot = _snapshot(like)
    read, write = os.pipe()
    try:
        assert not child.request_waiting(snapshot, read)
        os.write(write, wire.dumps(replace(like, program="1 + 1").to_frame()))
        assert child.request_waiting(snapshot, read)
    finally:
        os.close(read)
        os.close(write)
    snapshot.pending = wire.dumps(replace(like, program="1 + 1").to_frame())  # read by the worker
    empty, write = os.pipe()
    try:
        assert child.request_waiting(snapshot, empty)
    finally:
        os.close(empty)
        os.close(write)
