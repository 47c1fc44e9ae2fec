"""The kernel tells the front end the names its session knows, after each cell (the Lab
extension's live validation flags no name the session knows)."""

from __future__ import annotations

from tests.support.kernel import Kernel, make_workspace


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


def test_each_reply_names_the_kit_and_its_grade_for_the_status_bar(kernel):
    said = _names(kernel.execute("%kit read_file,write_file"))
    assert (said["kit"], said["grade"]) == ("read_file,write_file", {"w": 3, "d": 3})
    said = _names(kernel.execute("%kit debug"))
    assert (said["kit"], said["grade"]) == ("debug", {"w": 1, "d": 1})


def test_a_silent_request_answers_the_kit_and_shows_nothing_nor_counts(tmp_path):
    """What the Lab extension sends when a notebook opens, to show the kit before a cell runs:
    the kernel's start-up problems still go to the first cell a person runs."""
    kernel = Kernel(make_workspace(tmp_path, "[sandbox]\ntimout = 3\n"))
    try:
        asked = kernel.execute("", silent=True, store_history=False)
        assert _names(asked)["kit"] == "debug" and asked.messages == []
        first = kernel.execute("1")
        assert "unknown key 'timout'" in first.stream("stderr")
        assert first.reply["content"]["execution_count"] == 1
    finally:
        kernel.close()
