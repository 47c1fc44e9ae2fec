"""The lackpy command line, run as a user runs it."""

import json
import subprocess
import sys

import pytest


def lackpy(*args, cwd, stdin=None):
    """Run ``lackpy`` as a script does: without a terminal (a session of its own)."""
    return subprocess.run(
        [sys.executable, "-m", "lackpy_kernel", *args],
        cwd=cwd, input=stdin, capture_output=True, text=True, timeout=60,
        start_new_session=True,
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


@pytest.mark.parametrize("json_option", [[], ["--json"]])
def test_a_reader_that_leaves_early_gets_no_traceback(workspace, json_option):
    """``lackpy run P --json | head``: the rest of the output has nowhere to go."""
    (workspace / "big.lackpy").write_text("['x' * 100 for i in range(5000)]")
    process = subprocess.Popen([sys.executable, "-m", "lackpy_kernel", "run", "big.lackpy",
                                *json_option], cwd=workspace, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    assert process.stdout.read(10)
    process.stdout.close()  # as head does once it has its lines
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=60) in (0, 1)
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr


def test_program_from_stdin_and_a_tool_list_kit(workspace):
    done = lackpy("run", "-", "--kit", "read_file,write_file", "--yes", cwd=workspace,
                  stdin="write_file('out.txt', 'x')")
    assert done.returncode == 0, done.stderr
    assert (workspace / "out.txt").read_text() == "x"


@pytest.mark.parametrize("last, written", [("read_file('missing.txt')", False), ("1", True)])
def test_a_run_is_atomic_for_files(workspace, last, written):
    done = lackpy("run", "-", "--kit", "read_file,write_file", "--yes", cwd=workspace,
                  stdin=f"write_file('one.txt', '1')\nwrite_file('sub/two.txt', '2')\n{last}")
    assert done.returncode == (0 if written else 1), done.stderr
    assert (workspace / "one.txt").exists() is written
    assert (workspace / "sub" / "two.txt").exists() is written
    assert (workspace / "notes.txt").read_text() == "one\ntwo\nthree\n"


def test_undo_takes_back_the_last_runs_file_changes(workspace):
    nothing = lackpy("undo", cwd=workspace)
    assert nothing.stdout == "nothing to undo: no program's file changes are kept\n"
    done = lackpy("run", "-", "--kit", "read_file,write_file", "--yes", cwd=workspace,
                  stdin="write_file('notes.txt', 'changed')\nwrite_file('sub/new.txt', 'n')")
    assert done.returncode == 0, done.stderr
    (workspace / "sub" / "new.txt").write_text("edited by hand")
    refused = lackpy("undo", cwd=workspace)
    assert refused.returncode == 1
    assert "'sub/new.txt' changed since the last commit" in refused.stderr
    assert (workspace / "notes.txt").read_text() == "changed"
    (workspace / "sub" / "new.txt").write_text("n")
    undone = lackpy("undo", cwd=workspace)
    assert undone.returncode == 0, undone.stderr
    assert undone.stdout == "restored notes.txt\nremoved sub/new.txt (the program created it)\n"
    assert (workspace / "notes.txt").read_text() == "one\ntwo\nthree\n"
    assert not (workspace / "sub" / "new.txt").exists()


@pytest.mark.parametrize("way", ["--skip-changed", "--drop"])
def test_a_stuck_undo_names_its_ways_past_and_each_works(workspace, way):
    done = lackpy("run", "-", "--kit", "read_file,write_file", "--yes", cwd=workspace,
                  stdin="write_file('notes.txt', 'changed')\nwrite_file('sub/new.txt', 'n')")
    assert done.returncode == 0, done.stderr
    (workspace / "sub" / "new.txt").write_text("edited by hand")
    refused = lackpy("undo", cwd=workspace)
    assert refused.returncode == 1 and "--skip-changed" in refused.stderr
    assert "--drop" in refused.stderr
    past = lackpy("undo", way, cwd=workspace)
    assert past.returncode == 0, past.stderr
    assert (workspace / "sub" / "new.txt").read_text() == "edited by hand"  # kept either way
    restored = (workspace / "notes.txt").read_text() == "one\ntwo\nthree\n"
    assert restored is (way == "--skip-changed")
    again = lackpy("undo", cwd=workspace)  # the stuck commit is gone: nothing older is kept
    assert again.stdout == "nothing to undo: no program's file changes are kept\n"


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
    assert lackpy("validate", "count.lackpy", "--param", "bonus=1", cwd=workspace).stdout == "valid\n"
    unknown = lackpy("validate", "count.lackpy", cwd=workspace)
    assert "unknown name 'bonus'" in unknown.stderr
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


def test_the_documented_ratchet_walkthrough(workspace):
    (workspace / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    first = lackpy("delegate", "read the file pyproject.toml", "--kit", "read_file", cwd=workspace)
    assert first.returncode == 0, first.stderr
    assert "generation_tier: rules" in first.stdout
    assert "name = 'demo'" in first.stdout
    (workspace / "read_pyproject.py").write_text("content = read_file('pyproject.toml')\ncontent\n")
    saved = lackpy("create", "read_pyproject.py", "--name", "read-pyproject", "--kit", "read_file",
                   cwd=workspace)
    assert saved.returncode == 0, saved.stderr
    again = lackpy("delegate", "read the file pyproject.toml", "--kit", "read_file", "--json",
                   cwd=workspace)
    assert json.loads(again.stdout)["generation_tier"] == "templates"
    listing = lackpy("templates", cwd=workspace)
    assert "read-pyproject" in listing.stdout and "1 ok" in listing.stdout


def test_generate_prints_the_program(workspace):
    done = lackpy("generate", "find all txt files", "--kit", "find_files", cwd=workspace)
    assert done.returncode == 0
    assert "files = find_files('**/*.txt')" in done.stdout


def test_delegate_with_no_provider_fails_clearly_and_says_what_to_do(workspace):
    done = lackpy("delegate", "write me a poem", cwd=workspace)
    assert done.returncode == 1
    assert "rules: no program for this intent" in done.stderr
    assert "no model tier is configured. Configure one ([inference] in .lackpy/config.toml; " \
           "`lackpy doctor` shows which tiers are reachable)" in done.stderr
    assert "or write the program in a file and keep it as a template with " \
           "`lackpy create FILE --name NAME --pattern 'write me a poem'`." in done.stderr
    assert "%%create" not in done.stderr  # a shell's words, not a notebook's


def test_a_template_needing_another_kit_names_the_kit_that_runs_it(workspace):
    (workspace / "defs.py").write_text("find_definitions('main')\n")
    saved = lackpy("create", "defs.py", "--name", "defs", "--pattern", "find the main definition",
                   "--kit", "find_definitions", cwd=workspace)
    assert saved.returncode == 0, saved.stderr
    done = lackpy("delegate", "find the main definition", "--kit", "read_file,find_files", cwd=workspace)
    assert done.returncode == 1
    assert done.stderr.splitlines()[1:] == [
        "  - templates: the template defs has a program for this, but it calls find_definitions, "
        "which the kit (find_files, read_file) does not have",
        "  - rules: no program for this intent",
        "Next: run it with `--kit find_files,read_file,find_definitions` "
        "(the template defs calls find_definitions).",
    ]
    again = lackpy("delegate", "find the main definition", "--kit", "find_files,read_file,find_definitions",
                   cwd=workspace)
    assert again.returncode == 0, again.stderr
    assert "generation_tier: templates" in again.stdout


def test_kit_commands(workspace):
    made = lackpy("kit", "create", "mine", "--tools", "read_file,find_files", cwd=workspace)
    assert made.returncode == 0, made.stderr
    listing = lackpy("kit", "list", "--json", cwd=workspace)
    assert {kit["name"] for kit in json.loads(listing.stdout)} == {"debug", "mine"}
    info = lackpy("kit", "info", "mine", cwd=workspace)
    assert "grade: w=1 d=1" in info.stdout and "find_files(pattern: str)" in info.stdout
    bad = lackpy("kit", "create", "x", "--tools", "read_fil", cwd=workspace)
    assert bad.returncode == 2 and "read_fil" in bad.stderr


def test_toolbox_and_providers(workspace):
    assert "write_file" in lackpy("toolbox", cwd=workspace).stdout
    providers = lackpy("providers", cwd=workspace).stdout
    assert "rules" in providers and "available" in providers


def test_a_malformed_config_is_a_clear_error(workspace):
    (workspace / ".lackpy").mkdir()
    (workspace / ".lackpy" / "config.toml").write_text("[sandbox]\ntimout = 3\n")
    done = lackpy("run", "count.lackpy", cwd=workspace)
    assert done.returncode == 2
    assert "config.toml, line 2: unknown key 'timout'" in done.stderr


def test_mcp_reports_a_bad_start_in_its_exit_status(workspace):
    (workspace / ".lackpy").mkdir()
    (workspace / ".lackpy" / "config.toml").write_text("[sandbox]\ntimout = 3\n")
    done = lackpy("mcp", cwd=workspace, stdin="")
    assert done.returncode != 0
    assert "timout" in done.stderr


def test_acp_help_explains_the_modes(workspace):
    done = lackpy("acp", "--help", cwd=workspace)
    assert done.returncode == 0
    assert "Agent Client Protocol" in done.stdout
    assert "run   the default: write the program and run it when it only reads" in done.stdout
    assert "plan  write the program and show it, without running it" in done.stdout


def test_acp_ends_when_its_client_closes_stdin(workspace):
    done = lackpy("acp", cwd=workspace, stdin="")
    assert done.returncode == 0
    assert done.stdout == ""


def test_acp_without_its_extra_says_how_to_install_it(workspace):
    hide_sdk = ("import sys; sys.modules['acp'] = None; from lackpy_kernel.cli import main; "
                "sys.exit(main(['acp']))")
    done = subprocess.run([sys.executable, "-c", hide_sdk], cwd=workspace, input="",
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "pip install 'lackpy-kernel[acp]'" in done.stderr
