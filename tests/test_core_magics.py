"""The core magics (lackpy_kernel.notebook.core), each run on both hosts: the lackpy kernel
and a Python kernel with the extension (tests/support/hosts.py), so the two cannot drift."""

from __future__ import annotations

import json
import sys

from lackpy_kernel.infer.tiers import format_template
from lackpy_kernel.notebook.bundles import PROGRESS_MIME
from tests.support.hosts import Host, host_with
from tests.support.kernel import make_workspace
from tests.support.mcp_servers import TOOL_SERVER

NOTES = "alpha\nbeta\ngamma\n"
CONFIG = f"""
[sandbox]
timeout = 5
approve = "never"  # these tests write files with no one to ask: the changes land unseen

[tools.providers.words]
plugin = "python"
path = "tools/words.py"
grade = "read"

[tools.providers.calc]
plugin = "mcp"
command = [{json.dumps(sys.executable)}, {json.dumps(str(TOOL_SERVER))}]
tools = ["add"]
startup_timeout = 60
"""
WORDS = '''
def count_words(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())
'''


def words_workspace(folder):
    workspace = make_workspace(folder, CONFIG)
    (workspace / "tools").mkdir()
    (workspace / "tools" / "words.py").write_text(WORDS)
    return workspace


host = host_with(words_workspace)


def test_delegate_inserts_the_program_as_the_hosts_cell(host: Host):
    shown = host.run("%delegate --kit read_file read the file notes.txt")
    assert shown.ok, shown
    assert "written by rules" in shown.stdout and shown.stdout.endswith("it is in the next cell\n")
    head = "%kit read_file\n" if host.name == "kernel" else "%%lackpy --kit read_file\n"
    assert shown.next_input["text"].startswith(head)
    assert "read_file('notes.txt')" in shown.next_input["text"]
    assert shown.next_input["replace"] is False and shown.result is None


def test_delegate_run_shows_the_output_as_the_result(host: Host):
    shown = host.run("%delegate --run --kit read_file read the file notes.txt")
    assert shown.ok, shown
    assert shown.stdout.endswith("and it ran here: its output is below\n")
    assert shown.result == host.shown_text(NOTES)


def test_delegate_says_what_is_wrong_with_its_line(host: Host):
    missing = host.run("%delegate --kit read_file")
    assert missing.ename == "UsageError" and "what should the program do?" in missing.evalue
    unapproved = host.run("%delegate --yes read the file notes.txt")
    assert unapproved.ename == "UsageError" and "use it with --run" in unapproved.evalue


def test_delegate_failure_lists_the_tiers_and_says_what_to_do_once(host: Host):
    shown = host.run("%delegate write me a sonnet")
    assert shown.ename == "GenerationError"
    assert "rules: no program for this intent" in shown.evalue
    assert "no model tier is configured. Configure one ([inference] in .lackpy/config.toml" in shown.evalue
    assert "or write the program in a cell under `%%create NAME --pattern 'write me a sonnet'`" \
        in shown.evalue
    assert "no provider could write" not in shown.stdout  # the card and the error say it


def test_delegate_names_the_kit_a_template_needs_and_asks_no_model_again(host: Host):
    template = host.kernel.workspace / ".lackpy" / "templates" / f"defs-{host.name}.tmpl"
    template.parent.mkdir(parents=True, exist_ok=True)
    template.write_text(format_template(f"defs-{host.name}", "find the main definition",
                                        "find_definitions('main')"))
    try:
        shown = host.run("%delegate --kit read_file find the main definition")
    finally:
        template.unlink()
    assert shown.ename == "GenerationError"
    assert (f"templates: the template defs-{host.name} has a program for this, but it calls "
            "find_definitions, which the kit (read_file) does not have") in shown.evalue
    assert "Next: `%kit read_file,find_definitions`, then delegate again" in shown.evalue
    assert "did you mean" not in shown.evalue
    steps = [item["name"] for update in shown.updates if PROGRESS_MIME in update
             for item in update[PROGRESS_MIME]["items"]]
    assert steps and not [step for step in steps if step.endswith(("retry", "fixer", "cleanup"))]


def test_kit_show_and_set(host: Host):
    assert host.run("%kit").text.startswith("kit: debug  (grade w=1 d=1)")
    assert host.program("write_file('out.txt', 'x')").ename is not None
    changed = host.run("%kit read_file,write_file")
    assert changed.ok and changed.text.startswith("kit: read_file,write_file")
    assert host.program("write_file('out.txt', 'x')").ok
    assert (host.kernel.workspace / "out.txt").read_text() == "x"
    unknown = host.run("%kit nosuch")
    assert unknown.ename == "UnknownKitError" and "nosuch" in unknown.evalue
    assert host.run("%kit debug").ok


def test_kit_shows_where_each_tool_comes_from(host: Host):
    shown = host.run("%kit read_file,count_words,add,find_files")
    assert shown.ok, shown
    assert shown.text.splitlines()[-3:] == [
        "from builtin: read_file, find_files",
        "from words (python: tools/words.py): count_words",
        f"from calc (mcp: {sys.executable} {TOOL_SERVER}): add"]
    assert host.run("%kit debug").text.endswith(
        "\nfrom builtin: read_file, find_files, find_definitions, find_callers")


def test_params(host: Host):
    assert host.run('%params limit=2 "label=first lines" xs=[1,2]').text == (
        "limit = 2\nlabel = 'first lines'\nxs = [1, 2]")
    assert host.program("[limit, label, xs]").result == "[2, 'first lines', [1, 2]]"
    bad = host.run("%params other=1 broken")
    assert bad.ename == "UsageError"
    assert host.program("other").ename is not None  # nothing was set by the bad line
    assert host.run("%params --clear").text == "no parameters"
    assert host.program("limit").ename is not None


def test_create_saves_a_template_the_next_delegate_uses(host: Host):
    saved = host.run('%%create defs --pattern "where is {name} defined"\n'
                     "found = find_definitions({name})\n[d['line'] for d in found]")
    assert saved.ok, saved
    assert saved.text == "saved .lackpy/templates/defs.tmpl\npattern: where is {name} defined"
    shown = host.run("%delegate --run where is helper defined")
    assert "written by templates" in shown.stdout and shown.result == "[5]"


def test_create_needs_a_name_and_a_valid_program(host: Host):
    assert host.run("%%create\nx = 1").ename == "UsageError"
    bad = host.run("%%create bad --pattern p\nimport os")
    assert bad.ename == "LackpyCreateError"


def test_create_says_which_kit_it_checked_and_takes_another(host: Host):
    assert host.run("%kit").text.startswith("kit: debug ")
    program = "write_file('copy.txt', read_file('notes.txt'))"
    refused = host.run(f"%%create copy --pattern 'copy the notes'\n{program}")
    assert refused.ename == "LackpyCreateError"
    assert "'write_file'" in refused.evalue
    assert refused.evalue.endswith("(checked against the kit debug, the session's; --kit K "
                                   "checks against another)")
    narrow = host.run(f"%%create copy --kit read_file --pattern 'copy the notes'\n{program}")
    assert narrow.ename == "LackpyCreateError"
    assert narrow.evalue.endswith("(checked against the kit read_file)")
    saved = host.run(f"%%create copy --kit read_file,write_file --pattern 'copy the notes'\n"
                     f"{program}")
    assert saved.ok, saved
    assert saved.text == "saved .lackpy/templates/copy.tmpl\npattern: copy the notes"
    assert host.run("%kit").text.startswith("kit: debug ")  # the session's kit is unchanged


def test_providers_lists_the_tiers(host: Host):
    providers = host.run("%providers").text
    assert "rules" in providers and "yes" in providers


def test_trace_shows_the_last_programs_calls_in_full(host: Host):
    assert host.program("found = find_files('*.py')\nfound").ok
    trace = host.run("%trace").displays[0]
    assert "<details open>" in trace["text/html"] and "['app.py']" in trace["text/plain"]


def test_trace_aligns_text_left_and_numbers_right(host: Host):
    assert host.program("found = find_files('*.py')\nfound").ok
    trace = host.run("%trace").displays[0]
    head, row = trace["text/plain"].split("\n")[1:3]
    assert head.startswith("#  tool        args") and row.startswith("0  find_files  pattern=")
    end = head.index(" ms ") + 3  # a number ends under the end of its column's name
    assert row[end - 1].isdigit() and row[end] == " "
    assert "<th style='text-align: left'>tool</th>" in trace["text/html"]
    assert "<th style='text-align: right'>ms</th>" in trace["text/html"]


def test_validate_checks_without_running(host: Host):
    valid = host.run("%%validate\nn = len(read_file('notes.txt'))")
    assert valid.ok and valid.text.startswith("valid: calls ")
    invalid = host.run("%%validate\nwhile True:\n    pass")
    assert invalid.ename == "LackpyValidationError"
    assert invalid.traceback[0] == ("LackpyValidationError: the cell is not valid lackpy "
                                    "(1 error); nothing ran")


def test_who_lists_the_notebooks_variables(host: Host):
    if host.name == "kernel":
        host.program("found = find_files('*.py')")
        who = host.run("%who").text
        assert "found" in who and "list" in who
    else:  # IPython's own %who, which sees what %%lackpy --out bound
        assert host.run("%%lackpy --out found\nfind_files('*.py')").ok
        assert "found" in host.run("%who").stdout


def test_reset_forgets_the_variables(host: Host):
    if host.name == "kernel":
        host.program("found = find_files('*.py')")
        assert host.run("%reset").text == "the session's variables are cleared"
        assert host.run("found").ename is not None
    else:  # IPython's own %reset
        host.run("%%lackpy --out found\nfind_files('*.py')")
        assert host.run("%reset -f").ok
        assert host.run("found").ename == "NameError"


def test_undo_takes_back_the_last_programs_file_changes(host: Host):
    workspace = host.kernel.workspace
    (workspace / "kept.txt").write_text("kept before")
    program = "write_file('kept.txt', 'changed')\nwrite_file('made.txt', 'new')"
    assert host.program(program, kit="read_file,write_file").ok
    (workspace / "made.txt").write_text("edited by hand")
    refused = host.run("%undo")
    assert refused.ename == "WorkspaceError"
    assert "'made.txt' changed since the last commit" in refused.evalue
    assert (workspace / "kept.txt").read_text() == "changed"
    (workspace / "made.txt").write_text("new")
    undone = host.run("%undo")
    assert undone.ok, undone
    assert undone.text == "restored kept.txt\nremoved made.txt (the program created it)"
    assert (workspace / "kept.txt").read_text() == "kept before"
    assert not (workspace / "made.txt").exists()
    walked_back = [host.run("%undo").text for _ in range(21)]  # the earlier tests' commits
    assert walked_back[-1] == "nothing to undo: no program's file changes are kept"
    assert host.run("%kit debug").ok


def test_lsmagic_lists_the_magics(host: Host):
    shown = host.run("%lsmagic")
    if host.name == "kernel":
        for name in ("%delegate", "%kit", "%params", "%%create", "%providers", "%trace",
                     "%%validate", "%who", "%reset", "%lsmagic", "%undo"):
            assert name in shown.text
    else:  # IPython's own, listing the extension's magics among its own
        assert "Available line magics" in shown.result
        for name in ("%delegate", "%kit", "%params", "%%create", "%providers", "%trace",
                     "%%validate", "%%lackpy", "%undo"):
            assert name in shown.result


def test_lackpy_cell_magic_is_the_python_notebooks(host: Host):
    shown = host.run("%%lackpy --kit read_file\nread_file('notes.txt')")
    if host.name == "kernel":  # its cells are lackpy already
        assert shown.ename == "UsageError" and "unknown magic %lackpy" in shown.evalue
    else:
        assert shown.ok and shown.result == repr(NOTES)
