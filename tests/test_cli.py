"""The lackpy command line, run as a user runs it."""

import json
import subprocess
import sys

import pytest


def lackpy(*args, cwd, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "lackpy_kernel", *args],
        cwd=cwd, input=stdin, capture_output=True, text=True, timeout=60,
    )


@pytest.fixture
def workspace(tmp_path):
    (tmp_path / "notes.txt").write_text("one\ntwo\nthree\n")
    (tmp_path / "count.lackpy").write_text(
        "lines = read_file('notes.txt').splitlines()\nprint('counted')\nlen(lines) + bonus"
    )
    return tmp_path


def test_run_prints_stdout_then_the_output(workspace):
    done = lackpy("run", "count.lackpy", "--param", "bonus=10", cwd=workspace)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "counted\n13\n"


def test_run_json_has_the_trace(workspace):
    done = lackpy("run", "count.lackpy", "--param", "bonus=0", "--json", cwd=workspace)
    data = json.loads(done.stdout)
    assert data["success"] and data["output"] == 3
    assert data["trace"]["entries"][0]["tool"] == "read_file"
    assert data["trace"]["files_read"] == ["notes.txt"]
    assert data["variables"] == {"lines": ["one", "two", "three"]}


def test_program_from_stdin_and_a_tool_list_kit(workspace):
    done = lackpy("run", "-", "--kit", "read_file,write_file", cwd=workspace,
                  stdin="write_file('out.txt', 'x')")
    assert done.returncode == 0, done.stderr
    assert (workspace / "out.txt").read_text() == "x"


def test_a_param_that_is_not_a_literal_is_a_string(workspace):
    done = lackpy("run", "-", "--param", "who=ada lovelace", cwd=workspace, stdin="who.title()")
    assert done.stdout == "Ada Lovelace\n"


def test_invalid_program_fails_with_positions(workspace):
    done = lackpy("run", "-", cwd=workspace, stdin="x = 1\nimport os")
    assert done.returncode == 1
    assert "line 2, col 1: Import is not allowed" in done.stderr


def test_runtime_error_fails_with_the_line(workspace):
    done = lackpy("run", "-", cwd=workspace, stdin="x = read_file('missing.txt')")
    assert done.returncode == 1
    assert "(line 1: x = read_file('missing.txt'))" in done.stderr


def test_time_limit(workspace):
    done = lackpy("run", "-", "--timeout", "1", cwd=workspace, stdin="sum(range(1000000000000))")
    assert done.returncode == 1
    assert "longer than the 1 s limit" in done.stderr


def test_no_sandbox_runs_in_process(workspace):
    done = lackpy("run", "count.lackpy", "--param", "bonus=1", "--no-sandbox", cwd=workspace)
    assert done.stdout == "counted\n4\n"


def test_validate(workspace):
    assert lackpy("validate", "count.lackpy", cwd=workspace).stdout == "valid\n"
    bad = lackpy("validate", "-", "--json", cwd=workspace, stdin="open('x')")
    assert bad.returncode == 1
    assert "forbidden" in json.loads(bad.stdout)["errors"][0]


def test_missing_file_and_unknown_kit_are_clear(workspace):
    missing = lackpy("run", "nope.lackpy", cwd=workspace)
    assert missing.returncode == 2 and "nope.lackpy" in missing.stderr
    unknown = lackpy("run", "count.lackpy", "--kit", "nosuch", cwd=workspace)
    assert unknown.returncode == 2 and "no kit named 'nosuch'" in unknown.stderr


def test_workspace_option(workspace, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    done = lackpy("run", "-", "--workspace", str(workspace), cwd=elsewhere, stdin="read_file('notes.txt')")
    assert done.stdout.startswith("one")
