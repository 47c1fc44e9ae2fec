"""%delegate --run in the kernel: it runs at once only what [delegate] auto_run allows unseen."""

from __future__ import annotations

import pytest

from tests.support.kernel import Kernel, make_workspace

UNSEEN = '[sandbox]\napprove = "never"\n'  # these tests write with no one to ask

COPY = "%delegate --kit read_file,write_file --run copy the notes"
TEMPLATE = ("%%create copy --pattern 'copy the notes'\n"
            "write_file('copy.txt', read_file('notes.txt'))\n'copied'")


def with_copy_template(kernel: Kernel) -> Kernel:
    kernel.execute("%kit read_file,write_file")
    assert kernel.execute(TEMPLATE).status == "ok"
    kernel.execute("%kit debug")
    return kernel


@pytest.fixture(scope="module")
def writer(tmp_path_factory):
    kernel = Kernel(make_workspace(tmp_path_factory.mktemp("ws"), UNSEEN))
    yield with_copy_template(kernel)
    kernel.close()


def test_a_read_only_program_runs_and_the_status_line_says_so(writer):
    outcome = writer.execute("%delegate --run read the file notes.txt")
    status = outcome.stream("stdout")
    assert status.startswith("written by rules in ")
    assert status.endswith("; it is in the next cell, and it ran here: its output is below\n")
    assert outcome.result() == "alpha\nbeta\ngamma\n"


def test_with_replace_the_output_is_under_the_program_cell(writer):
    outcome = writer.execute("%delegate --replace --run read the file notes.txt")
    assert outcome.reply["content"]["payload"][0]["replace"] is True
    assert "it is in this cell now, and it ran here" in outcome.stream("stdout")
    assert outcome.result() == "alpha\nbeta\ngamma\n"


def test_a_program_that_would_write_is_inserted_not_run_with_why_and_how(writer):
    outcome = writer.execute(COPY)
    assert outcome.status == "ok" and outcome.of("execute_result") == []
    assert not (writer.workspace / "copy.txt").exists()
    status, message = outcome.stream("stdout").splitlines()
    assert status.endswith("; it is in the next cell, not run") and not outcome.stream("stderr")
    assert "not run: it calls write_file" in message and '[delegate] auto_run = "read"' in message
    assert "--yes" in message
    (payload,) = outcome.reply["content"]["payload"]
    assert payload["text"] == ("%kit read_file,write_file\n"  # the cell runs as written
                               "write_file('copy.txt', read_file('notes.txt'))\n'copied'")
    ran = writer.execute(payload["text"])  # the user looked, and runs it
    assert ran.result() == "copied" and (writer.workspace / "copy.txt").exists()
    (writer.workspace / "copy.txt").unlink()
    writer.execute("%kit debug")


def test_yes_runs_it_for_that_call_only(writer):
    approved = writer.execute(COPY.replace("--run", "--run --yes"))
    assert approved.result() == "copied"
    assert (writer.workspace / "copy.txt").read_text() == "alpha\nbeta\ngamma\n"
    (writer.workspace / "copy.txt").unlink()
    assert "not run" in writer.execute(COPY).stream("stdout")
    assert not (writer.workspace / "copy.txt").exists()


def test_yes_without_run_is_a_usage_error(writer):
    outcome = writer.execute("%delegate --yes read the file notes.txt")
    assert outcome.error["ename"] == "UsageError" and "--run" in outcome.error["evalue"]


def test_a_cell_cannot_raise_the_ceiling_by_rewriting_the_config(writer):
    writer.execute("%kit read_file,write_file")
    forged = writer.execute("write_file('.lackpy/config.toml', '[delegate]\\nauto_run = \"write\"\\n')")
    assert forged.status == "error"
    writer.execute("%kit debug")
    assert "not run" in writer.execute(COPY).stream("stdout")


def test_the_config_lowers_the_ceiling(tmp_path):
    kernel = Kernel(make_workspace(tmp_path, UNSEEN + '[delegate]\nauto_run = "none"\n'))
    try:
        outcome = kernel.execute("%delegate --run read the file notes.txt")
        assert outcome.of("execute_result") == []
        assert 'auto_run = "none" runs no program unseen' in outcome.stream("stdout")
    finally:
        kernel.close()


def test_the_config_can_let_writes_run_unseen(tmp_path):
    kernel = with_copy_template(Kernel(make_workspace(
        tmp_path, UNSEEN + '[delegate]\nauto_run = "write"\n')))
    try:
        assert kernel.execute(COPY).result() == "copied"
        assert (tmp_path / "copy.txt").exists()
    finally:
        kernel.close()
