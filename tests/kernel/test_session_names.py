"""The kernel tells the front end the names its session knows, after each cell (the Lab
extension's live validation flags no name the session knows)."""

from __future__ import annotations


def _names(outcome):
    return outcome.reply["metadata"]["lackpy"]


def test_each_reply_names_the_kit_tools_parameters_and_variables(kernel):
    said = _names(kernel.execute("%params limit=3"))
    assert "read_file" in said["names"] and "read_file" in said["tools"]
    assert "limit" in said["names"] and "limit" not in said["tools"]
    said = _names(kernel.execute("notes_text = read_file('notes.txt')"))
    assert "notes_text" in said["names"]


def test_a_failed_cell_names_only_what_the_session_still_knows(kernel):
    said = _names(kernel.execute("never_kept = 1\nimport os"))
    assert kernel.execute("never_kept").status == "error"
    assert "never_kept" not in said["names"]
