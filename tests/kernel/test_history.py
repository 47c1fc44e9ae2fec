"""The kernel's history, in the workspace's .lackpy/history.sqlite, across kernel restarts."""

from __future__ import annotations

import sqlite3

import pytest

from lackpy_kernel.kernel import history as history_module
from lackpy_kernel.kernel.history import HISTORY_FILE, History
from tests.support.kernel import Kernel, make_workspace


def history(kernel, **request):
    request.setdefault("output", False)
    request.setdefault("raw", True)
    kernel.client.history(**request)
    reply = kernel.client.get_shell_msg(timeout=60)["content"]
    assert reply["status"] == "ok", reply
    return [tuple(entry[:2]) + (tuple(entry[2]) if isinstance(entry[2], list) else entry[2],)
            for entry in reply["history"]]


@pytest.fixture
def restarted(tmp_path):
    """A kernel that ran three cells, then was restarted: (kernel, first session number)."""
    kernel = Kernel(make_workspace(tmp_path))
    try:
        kernel.execute("words = read_file('notes.txt').splitlines()")
        kernel.execute("len(words)")
        kernel.execute("len(words)")
        (first_session, _, _), *_ = history(kernel, hist_access_type="tail", n=1)
        kernel.manager.restart_kernel(now=True)
        kernel.client.wait_for_ready(timeout=60)
        kernel.execute("'after the restart'")
        yield kernel, first_session
    finally:
        kernel.close()


def test_history_survives_a_kernel_restart(restarted):
    kernel, first = restarted
    assert history(kernel, hist_access_type="tail", n=4) == [
        (first, 1, "words = read_file('notes.txt').splitlines()"),
        (first, 2, "len(words)"),
        (first, 3, "len(words)"),
        (first + 1, 1, "'after the restart'"),
    ]
    assert (kernel.workspace / ".lackpy" / HISTORY_FILE).is_file()


def test_a_range_of_this_or_an_earlier_session(restarted):
    kernel, first = restarted
    assert history(kernel, hist_access_type="range", session=0, start=1, stop=None) == [
        (first + 1, 1, "'after the restart'")]
    earlier = history(kernel, hist_access_type="range", session=-1, start=2, stop=3)
    assert earlier == [(first, 2, "len(words)")]


def test_search_with_a_glob_unique_and_a_count(restarted):
    kernel, first = restarted
    assert [e[1] for e in history(kernel, hist_access_type="search", pattern="len(*")] == [2, 3]
    assert history(kernel, hist_access_type="search", pattern="len(*", unique=True) == [
        (first, 3, "len(words)")]
    assert history(kernel, hist_access_type="search", pattern="*", n=1) == [
        (first + 1, 1, "'after the restart'")]


def test_history_with_output(restarted):
    kernel, first = restarted
    assert history(kernel, hist_access_type="range", session=-1, start=2, stop=3, output=True) == [
        (first, 2, ("len(words)", "3"))]


def test_a_program_cannot_rewrite_the_history(tmp_path):
    kernel = Kernel(make_workspace(tmp_path))
    try:
        kernel.execute("%kit read_file,write_file")
        outcome = kernel.execute("write_file('.lackpy/history.sqlite', 'forged')")
        assert outcome.status == "error"
        assert history(kernel, hist_access_type="tail", n=1)[0][2] == (
            "write_file('.lackpy/history.sqlite', 'forged')")
    finally:
        kernel.close()


def test_the_history_is_capped_oldest_first(tmp_path):
    kept = History(tmp_path, limit=3)
    for line in range(1, 6):
        kept.store(line, f"cell {line}", "")
    kept.flush()
    again = History(tmp_path, limit=3)
    again.store(1, "next session", "")
    assert [source for _, _, source in again.tail(None)] == ["cell 4", "cell 5", "next session"]
    kept.close()
    again.close()


def test_an_unusable_history_file_keeps_the_history_in_memory(tmp_path):
    (tmp_path / HISTORY_FILE).write_text("this is not a database, it is text " * 100)
    kept = History(tmp_path)
    assert "cannot be used" in kept.problem and "memory" in kept.problem
    kept.store(1, "x = 1", "")
    assert kept.tail(1) == [(kept.session, 1, "x = 1")]
    kept.close()


def test_a_broken_history_file_does_not_stop_the_kernel(tmp_path):
    make_workspace(tmp_path)
    (tmp_path / ".lackpy").mkdir()
    (tmp_path / ".lackpy" / HISTORY_FILE).write_text("garbage " * 100)
    kernel = Kernel(tmp_path)
    try:
        outcome = kernel.execute("1 + 1")
        assert outcome.result() == "2"
        assert "history file" in outcome.stream("stderr")
        assert history(kernel, hist_access_type="tail", n=1)[0][1:] == (1, "1 + 1")
    finally:
        kernel.close()


def test_stored_cells_reach_the_file_when_flushed_read_or_closed(tmp_path):
    kept = History(tmp_path)
    kept.store(1, "a = 1", "")
    assert History(tmp_path).range(kept.session, 1, None) == []
    kept.flush()
    assert History(tmp_path).range(kept.session, 1, None) == [(kept.session, 1, "a = 1")]
    kept.store(2, "b = 2", "")
    assert [line for _, line, _ in kept.range(0, 1, None)] == [1, 2]  # a read writes first
    kept.store(3, "c = 3", "")
    kept.close()
    assert [line for _, line, _ in History(tmp_path).range(kept.session, 1, None)] == [1, 2, 3]


def test_cells_that_cannot_be_written_stay_pending_until_they_can(tmp_path, monkeypatch):
    monkeypatch.setattr(history_module, "_BUSY_TIMEOUT_S", 0.05)
    kept = History(tmp_path)
    locker = sqlite3.connect(tmp_path / HISTORY_FILE, isolation_level=None)
    locker.execute("BEGIN EXCLUSIVE")
    kept.store(1, "a = 1", "")
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        kept.flush()
    locker.execute("ROLLBACK")
    kept.flush()
    assert kept.tail(None) == [(kept.session, 1, "a = 1")]
    kept.close()
    locker.close()


def test_the_kernel_says_once_that_the_history_cannot_be_written(tmp_path):
    """Each cell's reply comes before its history is written; a write that fails is said on
    the next cell, once, and the cells are written when the file is free again."""
    kernel = Kernel(make_workspace(tmp_path))
    locker = sqlite3.connect(tmp_path / ".lackpy" / HISTORY_FILE, isolation_level=None)
    try:
        kernel.execute("1 + 1")
        # a history request flushes first: cell 1 is in the file before the lock is taken
        assert [entry[2] for entry in history(kernel, hist_access_type="tail", n=1)] == ["1 + 1"]
        locker.execute("BEGIN EXCLUSIVE")
        assert kernel.execute("2 + 2").result() == "4"  # its write then waits, and fails
        said = kernel.execute("3 + 3")
        assert "history file could not be written" in said.stream("stderr")
        assert said.stream("stderr").count("lackpy:") == 1
        assert "history" not in kernel.execute("4 + 4").stream("stderr")  # not said again
        locker.execute("ROLLBACK")
        kernel.execute("5 + 5")
        assert [entry[2] for entry in history(kernel, hist_access_type="tail", n=5)] == [
            "1 + 1", "2 + 2", "3 + 3", "4 + 4", "5 + 5"]
    finally:
        locker.close()
        kernel.close()
