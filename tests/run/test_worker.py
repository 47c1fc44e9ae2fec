"""The worker's preparations before a program arrives: the kit it resolves before it forks,
and the warm-up each child runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import lackpy_kernel
from lackpy_kernel.run import runner, sandbox_supported, wire, worker

pytestmark = pytest.mark.skipif(not sandbox_supported(), reason="the worker needs Linux")


@pytest.fixture
def like(tmp_path):
    (tmp_path / "a.txt").write_text("hello")
    return {"op": "run", "kit": ["read_file", "write_file"], "workspace": str(tmp_path),
            "kits_dir": None, "keep": True, "timeout": 5.0, "memory_mb": 256,
            "max_result_bytes": 1_000_000}


def _snapshot(like):
    return worker._Snapshot({}, worker.UnitLog(keep_blobs=False), like, b"",
                            worker.wall_plan(like), worker._walled_for(like),
                            worker.PythonTools())


def test_a_child_takes_programs_like_the_one_it_was_forked_for(like, tmp_path):
    """The warm-up checks a request like the last one as a waiting child checks what it
    reads: that request fits, so the warm-up goes the way a program will."""
    snapshot = _snapshot(like)
    assert worker._fits({**like, "program": "1 + 1", "params": {}}, snapshot)
    assert worker._fits({**like, "workspace": f"{like['workspace']}/."}, snapshot)  # same folder
    other = tmp_path / "other"
    other.mkdir()
    assert not worker._fits({**like, "program": "1 + 1", "workspace": str(other)}, snapshot)
    assert not worker._fits({"op": "reset"}, snapshot)
    assert not worker._fits(["run"], snapshot)


def test_the_warm_up_runs_and_calls_its_tools(like):
    """A warm-up that failed would leave every program to pay for what it should have done."""
    request = {**like, "program": worker.WARM_UP_PROGRAM, "params": {}}
    frame = worker._run_request(request, _snapshot(like), lambda path: None, warming_up=True)
    result = frame["result"]
    assert result["success"], result["error"]
    shipped = Path(lackpy_kernel.__file__).parent / worker.WARM_UP_SHIPPED
    assert result["output"] == sorted([len(shipped.read_text(encoding="utf-8")), 2])
    assert [entry["tool"] for entry in result["trace"]["entries"]] == [worker.WARM_UP_READ,
                                                                      worker.WARM_UP_TOOL]
    assert result["trace"]["files_read"] == [worker.WARM_UP_SHIPPED]
    assert frame["commit"] is None or not frame["commit"]["units"]


@pytest.mark.parametrize("tool", [worker.WARM_UP_TOOL, worker.WARM_UP_READ])
def test_the_warm_ups_tools_are_its_own(like, tool):
    request = {**like, "program": f"{tool}({worker.WARM_UP_SHIPPED!r})", "params": {}}
    result = worker._run_request(request, _snapshot(like), lambda path: None)["result"]
    assert not result["success"]
    assert tool in result["error"]


def test_a_kit_named_by_its_tools_is_resolved_once_before_the_fork(like):
    worker._named_kits.clear()
    worker.preresolve(like)
    resolved = worker._named_kits.copy()
    assert len(resolved) == 1
    tools, _ = worker._kit_for({**like, "program": "1"}, _snapshot(like))
    assert tools["read_file"] is next(iter(resolved.values())).callables["read_file"]


def test_the_signatures_of_a_named_kits_tools_are_read_before_the_fork(like):
    """Each program wraps the tools it names with their signatures: read in the worker, the
    children find them read."""
    worker._named_kits.clear()
    worker.preresolve(like)
    kit = next(iter(worker._named_kits.values()))
    before = runner._cached_signature.cache_info()
    for tool in kit.callables.values():
        assert runner.signature_of(tool) is not None
    after = runner._cached_signature.cache_info()
    assert (after.hits - before.hits, after.misses - before.misses) == (len(kit.callables), 0)


def test_protected_files_are_part_of_what_the_kit_is_resolved_for(like, monkeypatch):
    worker._named_kits.clear()
    protected = os.path.realpath(os.path.join(like["workspace"], "a.txt"))
    guarded = {**like, "protected": [protected]}
    open_tools, _ = worker._kit_for(like, _snapshot(like))
    guarded_tools, _ = worker._kit_for(guarded, _snapshot(guarded))
    monkeypatch.chdir(like["workspace"])
    open_tools["write_file"]("a.txt", "changed")
    with pytest.raises(Exception, match="a.txt"):
        guarded_tools["write_file"]("a.txt", "refused")
    assert open(protected).read() == "changed"


def test_a_kit_that_does_not_resolve_is_left_to_the_child_to_report(like):
    worker._named_kits.clear()
    bad = {**like, "kit": ["no_such_tool"]}
    worker.preresolve(bad)  # does not raise
    frame = worker._run_request({**bad, "program": "1", "params": {}}, _snapshot(bad),
                                lambda path: None)
    assert frame["result"]["error_type"] == "KitError"
    assert "no_such_tool" in frame["result"]["error"]


def test_a_child_whose_request_has_come_already_goes_straight_to_it(like):
    """Programs sent back to back: the warm-up would make the waiting one wait longer."""
    snapshot = _snapshot(like)
    read, write = os.pipe()
    try:
        assert not worker._request_waiting(snapshot, read)
        os.write(write, wire.dumps({**like, "program": "1 + 1"}))
        assert worker._request_waiting(snapshot, read)
    finally:
        os.close(read)
        os.close(write)
    snapshot.pending = wire.dumps({**like, "program": "1 + 1"})  # read by the worker
    empty, write = os.pipe()
    try:
        assert worker._request_waiting(snapshot, empty)
    finally:
        os.close(empty)
        os.close(write)
