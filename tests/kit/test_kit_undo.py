"""Undo records: each commit of staged files keeps its files' pre-images under
``.lackpy/undo/``, bounded, and ``undo_last`` puts the newest back."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lackpy_kernel.errors import WorkspaceError
from lackpy_kernel.kit import FileToolsProvider, Workspace, undo_last
from lackpy_kernel.kit import undo as undo_module
from lackpy_kernel.kit.journal import commit_stage
from lackpy_kernel.kit.staging import discard_stage
from tests.support.staging import staged


def commit(ws: Path, files: dict[str, str]) -> None:
    """Stage ``files`` through the file tools and commit them, as the worker does."""
    stage = staged(ws, files)
    commit_stage(Workspace(ws), stage.folder, sorted(stage.files)).finish()
    discard_stage(stage.folder)


def records(ws: Path) -> list[str]:
    return sorted(os.listdir(ws / ".lackpy" / "undo"))


def test_undo_restores_a_changed_file_and_removes_a_created_one(ws):
    commit(ws, {"a.txt": "new a", "d/b.txt": "new b"})
    assert undo_last(Workspace(ws)) == ["restored a.txt",
                                        "removed d/b.txt (the program created it)"]
    assert (ws / "a.txt").read_text() == "old a" and not (ws / "d/b.txt").exists()
    assert records(ws) == []
    assert undo_last(Workspace(ws)) == []  # nothing left to undo


def test_undoing_twice_walks_back_one_commit_further(ws):
    commit(ws, {"a.txt": "first"})
    commit(ws, {"a.txt": "second"})
    assert undo_last(Workspace(ws)) == ["restored a.txt"]
    assert (ws / "a.txt").read_text() == "first"
    assert undo_last(Workspace(ws)) == ["restored a.txt"]
    assert (ws / "a.txt").read_text() == "old a"


def test_a_file_changed_since_refuses_naming_it_and_changes_nothing(ws):
    commit(ws, {"a.txt": "new a", "b.txt": "new b"})
    (ws / "b.txt").write_text("edited by hand")
    with pytest.raises(WorkspaceError, match=r"'b.txt' changed since .*was edited.*nothing was "
                                             "undone"):
        undo_last(Workspace(ws))
    assert (ws / "a.txt").read_text() == "new a"
    assert (ws / "b.txt").read_text() == "edited by hand"
    assert len(records(ws)) == 1
    (ws / "b.txt").unlink()
    with pytest.raises(WorkspaceError, match="'b.txt' changed since .*is gone"):
        undo_last(Workspace(ws))


def test_the_bound_on_records_drops_the_oldest(ws, monkeypatch):
    monkeypatch.setattr(undo_module, "MAX_UNDO_RECORDS", 2)
    for text in ("one", "two", "three"):
        commit(ws, {"a.txt": text})
    assert len(records(ws)) == 2
    assert undo_last(Workspace(ws)) == ["restored a.txt"]
    assert undo_last(Workspace(ws)) == ["restored a.txt"]
    assert (ws / "a.txt").read_text() == "one"  # the record of the first commit was dropped
    assert undo_last(Workspace(ws)) == []


def test_the_bound_on_size_drops_the_oldest_and_an_oversized_file_is_named_not_dropped(
        ws, monkeypatch):
    monkeypatch.setattr(undo_module, "MAX_UNDO_BYTES", 1000)
    (ws / "big.txt").write_text("x" * 700)
    (ws / "huge.txt").write_text("x" * 1200)
    commit(ws, {"a.txt": "one"})
    commit(ws, {"big.txt": "y"})  # with its 700-byte pre-image, both records are over 1000
    assert len(records(ws)) == 1
    assert undo_last(Workspace(ws)) == ["restored big.txt"]
    assert undo_last(Workspace(ws)) == []
    commit(ws, {"a.txt": "two"})
    commit(ws, {"huge.txt": "z"})  # over the bound alone: its record names it, the older stays
    assert len(records(ws)) == 2
    with pytest.raises(WorkspaceError, match=r"'huge.txt' cannot be undone: it is 1,200 bytes, "
                                             r"over the 1,000 bytes an undo record keeps; "
                                             "nothing was undone"):
        undo_last(Workspace(ws))
    assert (ws / "huge.txt").read_text() == "z" and len(records(ws)) == 2
    assert undo_last(Workspace(ws), skip_changed=True) == [
        "left huge.txt as it is: it cannot be undone: it is 1,200 bytes, over the 1,000 bytes "
        "an undo record keeps"]
    assert undo_last(Workspace(ws)) == ["restored a.txt"]
    assert (ws / "a.txt").read_text() == "one"


def test_programs_cannot_write_the_undo_records(ws):
    commit(ws, {"a.txt": "new a"})
    [record] = records(ws)
    with pytest.raises(WorkspaceError):
        FileToolsProvider(ws).write_file(f".lackpy/undo/{record}", "forged")
    assert undo_last(Workspace(ws)) == ["restored a.txt"]


def test_a_link_made_on_the_way_since_refuses_and_changes_nothing(ws):
    commit(ws, {"a.txt": "new a", "d/b.txt": "new b"})
    (ws / "d").rename(ws / "e")
    (ws / "d").symlink_to("e")
    with pytest.raises(WorkspaceError, match="'d/b.txt' now leads to 'e/b.txt'"):
        undo_last(Workspace(ws))
    assert (ws / "a.txt").read_text() == "new a" and (ws / "e/b.txt").read_text() == "new b"
