"""The lackpy kernel, driven through jupyter_client from an installed kernelspec."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support import loopback as lb
from tests.support.kernel import Kernel, make_workspace, wait_for_exit

# -- cells, variables and outputs ------------------------------------------------


def test_variables_persist_and_are_known_to_the_validator(kernel):
    assert kernel.execute("text = read_file('notes.txt')").status == "ok"
    outcome = kernel.execute("lines = text.splitlines()\nlen(lines)")
    assert outcome.status == "ok"
    assert outcome.result() == "3"


def test_a_cell_that_fails_validation_changes_nothing(kernel):
    kernel.execute("count = 1")
    outcome = kernel.execute("count = 2\nimport os")
    assert outcome.status == "error"
    assert outcome.reply["content"]["ename"] == "LackpyValidationError"
    assert kernel.execute("count").result() == "1"


def test_a_cell_that_fails_at_run_time_changes_nothing(kernel):
    kernel.execute("items = [1, 2]")
    failed = kernel.execute("items.append(3)\nnew_name = 1\nitems[10]")
    assert failed.status == "error" and failed.error["ename"] == "IndexError"
    assert kernel.execute("items").value() == [1, 2]
    assert kernel.execute("new_name").status == "error"


def test_output_bundles(kernel):
    rows = kernel.execute("[{'name': 'a', 'size': 1}, {'name': '<b>', 'size': 2}]")
    assert rows.value() == [{"name": "a", "size": 1}, {"name": "<b>", "size": 2}]
    table = rows.result("text/html")
    assert "<th style='text-align: left'>name</th>" in table and "&lt;b&gt;" in table
    assert "<td style='text-align: right'>2</td>" in table
    assert kernel.execute("{'k': (1, 2)}").value() == {"k": (1, 2)}
    assert kernel.execute("'plain text'").result() == "plain text"
    assert kernel.execute("x_none = None\nx_none").of("execute_result") == []


def test_modest_lists_and_dicts_are_their_text_and_large_nested_data_a_json_tree(kernel):
    words = kernel.execute("['alpha', 'beta', 'gamma']")
    (result,) = words.of("execute_result")
    assert result["data"] == {"text/plain": "['alpha', 'beta', 'gamma']"}
    nested = kernel.execute("{str(g): [{'i': i} for i in range(20)] for g in range(3)}")
    assert nested.result("application/json")["2"][19] == {"i": 19}
    assert nested.result().startswith("{'0': [{'i': 0},\n")
    one_line_each = kernel.execute("{str(i): [i, i] for i in range(40)}")
    assert "application/json" not in one_line_each.of("execute_result")[0]["data"]


def test_print_goes_to_stdout(kernel):
    outcome = kernel.execute("print('one', 2)\nprint('three')")
    assert outcome.stream("stdout") == "one 2\nthree\n"


def test_tool_calls_show_an_expandable_trace(kernel):
    outcome = kernel.execute("defs = find_definitions('helper')\nlen(defs)")
    (trace,) = outcome.of("display_data")
    assert trace["data"]["text/html"].startswith("<details><summary>trace: 1 tool call")
    assert "find_definitions" in trace["data"]["text/plain"]
    assert "name='helper'" in trace["data"]["text/plain"]


def test_validation_errors_have_lines_and_carets(kernel):
    outcome = kernel.execute("x = 1\ny = open('notes.txt')\nz = x.__class__")
    error = outcome.error
    assert error["ename"] == "LackpyValidationError"
    lines = error["traceback"]
    assert lines[0].startswith("LackpyValidationError: the cell is not valid lackpy (2 errors)")
    assert "line 2, col 5: the name 'open' is forbidden" in lines[1]
    assert lines[2] == "    y = open('notes.txt')"
    assert lines[3] == "        ^"
    assert "line 3, col 5: attribute '.__class__' is private" in lines[4]


def test_runtime_errors_name_the_lackpy_line(kernel):
    outcome = kernel.execute("a = 1\nb = read_file('missing.txt')")
    error = outcome.error
    assert error["ename"] == "FileNotFoundError"
    assert "(line 2: b = read_file('missing.txt'))" in error["evalue"]
    assert not any("Traceback" in line or ".py\"" in line for line in error["traceback"])


def test_silent_execution_shows_nothing(kernel):
    outcome = kernel.execute("print('hidden')\n1", silent=True)
    assert outcome.status == "ok" and outcome.messages == []


# -- limits and interrupts ----------------------------------------------------------


def test_time_limit_stops_the_cell_and_keeps_the_session(kernel):
    kernel.execute("kept = 'still here'")
    outcome = kernel.execute("sum(range(1000000000000))")
    assert outcome.error["ename"] == "ProgramTimeoutError"
    assert "3 s limit" in outcome.error["evalue"]
    assert kernel.execute("kept").result() == "still here"


def test_memory_limit_stops_the_cell_and_keeps_the_session(kernel):
    kernel.execute("kept = 'still here'")
    outcome = kernel.execute("big = 'x' * 100000000000")
    assert outcome.error["ename"] == "ProgramMemoryError"
    assert "256 MB" in outcome.error["evalue"]
    assert kernel.execute("kept").result() == "still here"


def test_interrupt_while_a_program_runs(kernel):
    kernel.execute("kept = 1")
    msg_id = kernel.start("total = 0\nfor i in range(100000000000):\n    total += i")
    time.sleep(0.5)  # into the program (an earlier interrupt stops the cell all the same)
    kernel.manager.interrupt_kernel()
    outcome = kernel.wait(msg_id)
    assert outcome.reply["content"]["ename"] == "KeyboardInterrupt"
    assert kernel.execute("kept + 1").result() == "2"
    assert kernel.execute("total").status == "error"  # the interrupted cell kept nothing


def test_interrupt_while_waiting_on_a_model(tmp_path):
    with lb.LoopbackServer(default=lb.hang()) as server:
        config = (f'[inference]\norder = ["slow"]\n[inference.providers.slow]\nplugin = "ollama"\n'
                  f'host = "{server.url}"\nrequest_timeout = 60\nmax_retries = 0\n')
        kernel = Kernel(make_workspace(tmp_path, config))
        try:
            msg_id = kernel.client.execute("%delegate summarise every file in a poem",
                                           stop_on_error=False)
            deadline = time.monotonic() + 60
            while not server.requests and time.monotonic() < deadline:
                time.sleep(0.05)
            assert server.requests, "the kernel never called the model"
            kernel.manager.interrupt_kernel()
            outcome = kernel.wait(msg_id, timeout=20)
            assert outcome.reply["content"]["ename"] == "KeyboardInterrupt"
            assert kernel.execute("1 + 1").result() == "2"
        finally:
            server.release.set()
            kernel.close()


def test_killing_the_kernel_leaves_no_worker(tmp_path):
    kernel = Kernel(make_workspace(tmp_path))
    try:
        kernel.execute("x = 1")
        workers = _children(kernel.pid)
        assert workers, "the cell should have started a sandbox worker"
        os.kill(kernel.pid, signal.SIGKILL)
        for pid in workers:
            assert _gone_within(pid, 10), f"worker {pid} outlived the kernel"
    finally:
        kernel.client.stop_channels()
        kernel.manager.cleanup_resources()


def _children(pid: int) -> list[int]:
    children = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        children += [int(child) for child in (task / "children").read_text().split()]
    return children


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
                return True
        except FileNotFoundError:
            return True
        time.sleep(0.05)
    return False


def test_replies_wait_for_no_fixed_sleep():
    from lackpy_kernel.kernel import LackpyKernel

    assert LackpyKernel.class_traits()["_execute_sleep"].default() == 0


def test_what_the_kernel_process_prints_stays_in_its_log(tmp_path):
    """Cells' output goes out as messages. The kernel's own stdout and stderr (a library's
    warning) are not captured into whichever cell runs: they stay the files the kernel was
    started with."""
    log = tmp_path / "kernel.log"
    # ipykernel leaves the file descriptors alone under pytest: this kernel does not know
    env = {key: value for key, value in os.environ.items() if key != "PYTEST_CURRENT_TEST"}
    with log.open("w") as output:
        kernel = Kernel(make_workspace(tmp_path), env=env, stdout=output, stderr=output)
    try:
        assert kernel.execute("1 + 1").value() == 2
        for fd in (1, 2):
            assert os.readlink(f"/proc/{kernel.pid}/fd/{fd}") == str(log)
    finally:
        kernel.close()


def test_a_malformed_config_does_not_stop_the_kernel(tmp_path):
    kernel = Kernel(make_workspace(tmp_path, "[sandbox]\ntimout = 3\n"))
    try:
        outcome = kernel.execute("len(read_file('notes.txt'))")
        assert outcome.result() == "17"
        warning = outcome.stream("stderr")
        assert "config.toml, line 2: unknown key 'timout'" in warning
        assert "started on the default settings" in warning
        assert kernel.execute("1").stream("stderr") == ""  # said once
    finally:
        kernel.close()


# -- magics ------------------------------------------------------------------------------


def test_delegate_inserts_the_program_as_the_next_cell(kernel):
    outcome = kernel.execute("%delegate read the file notes.txt")
    assert outcome.status == "ok"
    (payload,) = outcome.reply["content"]["payload"]
    assert payload == {"source": "set_next_input", "replace": False,
                       "text": "content = read_file('notes.txt')\ncontent"}
    (progress,) = outcome.of("display_data")  # the live display, back to its title
    assert progress["data"]["text/plain"] == "delegating: read the file notes.txt ..."
    status = outcome.stream("stdout")
    assert status.startswith("written by rules in ")
    assert status.endswith("; it is in the next cell\n")


def test_delegate_replace_and_run(kernel):
    outcome = kernel.execute("%delegate --replace --run find all py files")
    assert outcome.reply["content"]["payload"][0]["replace"] is True
    assert outcome.value() == ["app.py"]


def test_delegate_takes_the_intent_literally(kernel):
    outcome = kernel.execute("%delegate --kit read_file read the file {notes}.txt")
    assert "read_file('{notes}.txt')" in outcome.reply["content"]["payload"][0]["text"]


def test_the_ratchet_in_the_kernel(kernel):
    first = kernel.execute("%delegate read the file app.py")
    program = first.reply["content"]["payload"][0]["text"]
    saved = kernel.execute(f"%%create read-app\n{program}")
    assert saved.status == "ok", saved.messages
    shown = saved.of("display_data")[0]["data"]["text/plain"]
    assert shown == "saved .lackpy/templates/read-app.tmpl\npattern: read the file app.py"
    again = kernel.execute("%delegate read the file app.py")
    assert "written by templates" in again.stream("stdout")


def test_create_with_a_pattern_after_the_name_and_a_bare_placeholder(kernel):
    saved = kernel.execute('%%create defs --pattern "where is {name} defined"\n'
                           "found = find_definitions({name})\n[d['line'] for d in found]")
    assert saved.status == "ok", saved.messages
    outcome = kernel.execute("%delegate --run where is helper defined")
    assert "written by templates" in outcome.stream("stdout")
    assert outcome.value() == [5]


def test_magics_and_code_in_one_cell(kernel):
    outcome = kernel.execute("%params base=10\nvalue = base + 1\nvalue")
    assert outcome.result() == "11"


def test_unknown_and_misplaced_magics(kernel):
    assert "unknown magic %nope" in kernel.execute("%nope").error["evalue"]
    assert "cell magic" in kernel.execute("%validate x = 1").error["evalue"]
    assert "unknown option --frob" in kernel.execute("%delegate --frob x").error["evalue"]


# -- completion, inspection, history, kernel_info ---------------------------------------------


def test_complete(kernel):
    kernel.execute("my_variable = 1")
    reply = kernel.client.complete("x = my_v", 8, reply=True)["content"]
    assert reply["matches"] == ["my_variable"] and reply["cursor_start"] == 4
    tools = kernel.client.complete("find_", 5, reply=True)["content"]["matches"]
    assert tools == ["find_callers", "find_definitions", "find_files"]
    magics = kernel.client.complete("%de", 3, reply=True)["content"]
    assert magics["matches"] == ["%delegate"] and magics["cursor_start"] == 0


def test_inspect(kernel):
    reply = kernel.client.inspect("x = read_file(", 6, reply=True)["content"]
    assert reply["found"]
    assert reply["data"]["text/plain"].startswith("read_file(path: str) -> str")
    assert not kernel.client.inspect("nothing_here", 3, reply=True)["content"]["found"]


def test_shift_tab_shows_a_tools_doc_as_plain_text_and_as_markdown(kernel):
    data = kernel.client.inspect("read_file(", 10, reply=True)["content"]["data"]
    plain = data["text/plain"]
    assert plain.startswith("read_file(path: str) -> str\n\nRead a text file")
    assert plain.count("read_file(path: str) -> str") == 1  # the signature once
    assert "#" not in plain and "`" not in plain  # no heading marks, backticks or fences
    assert "\n- path is relative to the workspace root." in plain  # a list stays a list
    assert '\n    content = read_file("pyproject.toml")\n' in plain  # code indented
    markdown = data["text/markdown"]
    assert markdown.startswith("```python\nread_file(path: str) -> str\n```\n\nRead a text file")
    assert "- `path` is relative" in markdown and '```python\ncontent = read_file(' in markdown
    builtin = kernel.client.inspect("sorted(", 7, reply=True)["content"]["data"]
    assert list(builtin) == ["text/plain"]  # a builtin's doc is plain text already


def _inspect(kernel, code, cursor=None):
    reply = kernel.client.inspect(code, len(code) if cursor is None else cursor, reply=True)
    return reply["content"]["data"].get("text/plain") if reply["content"]["found"] else None


def test_shift_tab_anywhere_inside_a_tool_calls_parentheses_shows_the_tool(kernel):
    for code in ("x = read_file(", "x = read_file('notes.txt', ", "len(read_file('no"):
        shown = _inspect(kernel, code)
        assert shown is not None and shown.startswith("read_file(path: str) -> str"), code
        assert "UTF-8" in shown  # the tool's doc follows its signature
    inside_a_list = "find_files('*.py') + sorted(find_files('*.txt'), key="
    assert _inspect(kernel, inside_a_list).startswith("Return a new list")  # sorted's doc
    cursor_in_the_middle = "read_file('notes.txt')"
    assert _inspect(kernel, cursor_in_the_middle, cursor=15).startswith("read_file(")
    assert _inspect(kernel, "text.splitlines(") is None  # a method is not a tool


def _complete(kernel, code):
    return kernel.client.complete(code, len(code), reply=True)["content"]


def test_completion_offers_a_tools_argument_names_inside_its_call(kernel):
    reply = _complete(kernel, "read_file(pa")
    assert reply["matches"][0] == "path="
    assert reply["cursor_start"] == len("read_file(")
    assert "path=" not in _complete(kernel, "pa")["matches"]


def test_completion_lists_workspace_paths_inside_a_file_tools_string(kernel):
    (kernel.workspace / "docs").mkdir(exist_ok=True)
    (kernel.workspace / "docs" / "guide.md").write_text("# guide\n")
    reply = _complete(kernel, "text = read_file('no")
    assert reply["matches"] == ["notes.txt"] and reply["cursor_start"] == len("text = read_file('")
    everything = _complete(kernel, "read_file('")["matches"]
    assert {"app.py", "docs/", "notes.txt"} <= set(everything)
    assert not any(path.startswith(".") for path in everything)  # .lackpy/ only when asked
    assert _complete(kernel, "read_file(path='docs/")["matches"] == ["docs/guide.md"]
    assert _complete(kernel, "find_files('do")["matches"] == ["docs/"]
    assert _complete(kernel, "read_file('../")["matches"] == []  # nothing outside
    assert _complete(kernel, "find_definitions('no")["matches"] == []  # a name, not a path


def _is_complete(kernel, code):
    kernel.client.is_complete(code)
    return kernel.client.get_shell_msg(timeout=60)["content"]


def test_is_complete(kernel):
    assert _is_complete(kernel, "x = 1")["status"] == "complete"
    assert _is_complete(kernel, "for x in range(3):") == {"status": "incomplete", "indent": "    "}
    assert _is_complete(kernel, "x = [1,")["status"] == "incomplete"
    assert _is_complete(kernel, "x = )")["status"] == "invalid"
    assert _is_complete(kernel, "%kit")["status"] == "complete"


def test_history(kernel):
    kernel.execute("history_marker = 7")
    kernel.client.history(hist_access_type="tail", n=1, output=False, raw=True)
    reply = kernel.client.get_shell_msg(timeout=60)["content"]
    assert reply["history"][-1][2] == "history_marker = 7"


def test_kernel_info_advertises_only_what_it_implements(kernel):
    info = kernel.client.kernel_info(reply=True)["content"]
    assert info["supported_features"] == []
    assert info["language_info"]["codemirror_mode"]["name"] == "ipython"
    assert info["language_info"]["pygments_lexer"] == "python3"
    assert info["implementation"] == "lackpy_kernel"
    json.dumps(info)


def test_shell_messages_reach_the_main_thread_without_a_thread_between(tmp_path):
    """No subshells (kernel_info lists none), so no shell channel thread handing each
    request to the main thread and each reply back."""
    probe = ("import sys\n"
             "from lackpy_kernel.kernel import LackpyKernelApp\n"
             "app = LackpyKernelApp(connection_file=sys.argv[1])\n"
             "app.init_connection_file()\n"
             "app.init_sockets()\n"
             "print(app.shell_channel_thread, app.control_thread is not None)\n"
             "app.close()\n")
    done = subprocess.run([sys.executable, "-c", probe, str(tmp_path / "kernel.json")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "None True\n"


def test_the_kernelspec_says_what_the_kernel_says(kernel):
    info = kernel.client.kernel_info(reply=True)["content"]
    spec = kernel.manager.kernel_spec
    assert spec.language == info["language_info"]["name"] == "lackpy"
    assert info["language_info"]["mimetype"] == "text/x-lackpy"
    assert spec.kernel_protocol_version == info["protocol_version"]



def test_the_kernel_exits_when_asked(tmp_path):
    # ipykernel's shutdown raced with its own IOPub teardown about half the time: a flush
    # waited 10 s for the IOPub thread that was gone, said "IOStream.flush timed out" and the
    # process lingered. Five polite shutdowns in a row must all end the process without that
    # wait. The race is told by what the kernel says, not by a clock: a loaded machine's
    # shutdown can take seconds (three xdist workers on two cores took over 9 s once).
    for attempt in range(5):
        folder = tmp_path / str(attempt)
        folder.mkdir()
        with open(folder / "kernel.log", "w") as log:
            kernel = Kernel(make_workspace(folder), stderr=log, stdout=log)
            kernel.execute("x = 1")
            kernel.client.shutdown()
            exited = wait_for_exit(kernel)
            kernel.close()
        said = (folder / "kernel.log").read_text()
        assert exited, f"shutdown {attempt + 1} left the kernel running: {said}"
        assert "flush timed out" not in said, f"shutdown {attempt + 1} waited for IOPub: {said}"


def test_a_kit_that_breaks_later_gives_an_error_not_a_hung_cell(tmp_path):
    kernel = Kernel(make_workspace(tmp_path))
    try:
        kits = tmp_path / ".lackpy" / "kits"
        kits.mkdir(parents=True)
        (kits / "mine.kit").write_text("---\nname: mine\n---\nread_file\n")
        assert kernel.execute("%kit mine").status == "ok"
        (kits / "mine.kit").unlink()
        outcome = kernel.execute("1 + 1", timeout=20)
        assert outcome.error["ename"] == "KitError"
        assert "no kit named 'mine'" in outcome.error["evalue"]
        assert kernel.client.complete("re", 2, reply=True)["content"]["status"] == "ok"
        assert kernel.execute("%kit debug").status == "ok"
        assert kernel.execute("1 + 1").result() == "2"
    finally:
        kernel.close()


def test_delegate_runs_with_the_kit_it_was_given(kernel):
    kernel.execute("%kit find_files")
    try:
        outcome = kernel.execute("%delegate --kit read_file --run read the file notes.txt")
        assert outcome.result() == "alpha\nbeta\ngamma\n"
    finally:
        kernel.execute("%kit debug")


def test_interrupt_with_the_sandbox_off(tmp_path):
    kernel = Kernel(make_workspace(tmp_path, "[sandbox]\nenabled = false\n"))
    try:
        kernel.execute("kept = [1]")
        msg_id = kernel.start("kept.append(2)\ntotal = 0\nfor i in range(100000000000):\n"
                              "    total += i")
        time.sleep(0.5)
        kernel.manager.interrupt_kernel()
        outcome = kernel.wait(msg_id, timeout=20)
        assert outcome.reply["content"]["ename"] == "KeyboardInterrupt"
        assert kernel.execute("kept").value() == [1]
    finally:
        kernel.close()


def test_the_kernel_imports_no_engine_and_no_debugger_before_it_needs_them():
    """Start-up stays as short as ipykernel's: the engines load with the first plan or agent
    magic, and kernel_info never asks debugpy about a debugger this kernel does not offer."""
    probe = ("import sys\n"
             "from lackpy_kernel.kernel import LackpyKernel\n"
             "info = LackpyKernel.kernel_info.fget(LackpyKernel)\n"
             "print(info['protocol_version'], sorted(m for m in sys.modules\n"
             "      if m.startswith(('lackpy_kernel.engines', 'debugpy', 'ipykernel.debugger'))))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split(" ", 1) == ["5.3", "[]\n"]
