"""The IPython extension: %%lackpy and %delegate, in-process and through a real ipykernel."""

import os
import signal
import sys
import threading
import time

import pytest
from IPython.core.interactiveshell import InteractiveShell
from traitlets.config import Config

import lackpy_kernel
from lackpy_kernel.extension import (
    LackpyDelegateError,
    LackpyRuntimeError,
    LackpyUsageError,
    LackpyValidationError,
    parse_magic_options,
)
from tests.support.shell import EXTENSION as EXT
from tests.support.shell import extension_shell, magics_of

LONG = "sum(range(1000000000000))"  # runs until stopped: ** is not lackpy
SANDBOX_TIMEOUT_S = 2
KERNEL_TIMEOUT_S = 120  # so long that a program the stop button did not stop cannot pass for one it did


def make_workspace(path, timeout=SANDBOX_TIMEOUT_S):
    (path / "notes.txt").write_text("alpha\nbeta\n")
    (path / ".lackpy").mkdir()
    # these tests write files with no one to ask: the changes land unseen
    (path / ".lackpy" / "config.toml").write_text(
        f'[sandbox]\ntimeout = {timeout}\napprove = "never"\n')
    return path


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    return make_workspace(tmp_path_factory.mktemp("workspace"))


@pytest.fixture(scope="module")
def shell(workspace, tmp_path_factory):
    """One plain InteractiveShell, started in the workspace, with the extension loaded."""
    with extension_shell(workspace, tmp_path_factory.mktemp("ipython")) as ip:
        yield ip


# -- option parsing ----------------------------------------------------------------


def test_options_first_then_the_intent_verbatim():
    opts = parse_magic_options("--kit read_file --run read the file {notes}.txt  --kit x", "delegate")
    assert opts.kit == "read_file" and opts.run
    assert opts.rest == "read the file {notes}.txt  --kit x"
    assert parse_magic_options("-- --run is an intent").rest == "--run is an intent"


def test_param_values_are_literals_where_they_parse():
    opts = parse_magic_options(
        "--param n=3 --param s=abc --param q='3' --param \"xs=[1, 2]\" --param f=x.py --param e=",
        "lackpy")
    assert opts.params == {"n": 3, "s": "abc", "q": "3", "xs": [1, 2], "f": "x.py", "e": ""}


@pytest.mark.parametrize("line, magic", [
    ("--bogus x", "lackpy"),
    ("--run", "lackpy"),
    ("--out", "lackpy"),
    ("--out 1x", "lackpy"),
    ("--param nonsense", "lackpy"),
    ("--kit --run intent", "delegate"),
])
def test_bad_options_are_real_errors(line, magic):
    with pytest.raises(LackpyUsageError):
        parse_magic_options(line, magic)


# -- %%lackpy in-process ------------------------------------------------------------


def test_cell_returns_the_output(shell):
    assert shell.run_cell_magic("lackpy", "--kit read_file", "read_file('notes.txt')") == "alpha\nbeta\n"
    # the configured sandbox ran it
    assert magics_of(shell).service.sandbox_worker_pid is not None


def test_out_stores_in_the_user_namespace(shell):
    shell.user_ns.pop("lines", None)
    out = shell.run_cell_magic("lackpy", "--kit read_file --out lines",
                               "read_file('notes.txt').splitlines()")
    assert out == ["alpha", "beta"]
    assert shell.user_ns["lines"] == ["alpha", "beta"]


def test_params_and_stdout(shell, capsys):
    out = shell.run_cell_magic("lackpy", "--kit read_file --param n=3 --param name=abc",
                               "print('n is', n)\n[n, name]")
    assert out == [3, "abc"]
    assert capsys.readouterr().out == "n is 3\n"


def test_no_sandbox(shell):
    assert shell.run_cell_magic("lackpy", "--kit read_file --no-sandbox", "len(read_file('notes.txt'))") == 11


def test_validation_failure_raises_with_the_line(shell):
    with pytest.raises(LackpyValidationError) as info:
        shell.run_cell_magic("lackpy", "--kit read_file", "x = 1\nimport os")
    assert "line 2" in str(info.value) and "Import" in str(info.value)
    assert [issue.line for issue in info.value.issues] == [2]


def test_runtime_failure_raises_with_type_and_line(shell, capsys):
    with pytest.raises(LackpyRuntimeError) as info:
        shell.run_cell_magic("lackpy", "--kit read_file", "print('before')\nread_file('missing.txt')")
    assert info.value.error_type == "FileNotFoundError" and info.value.error_line == 2
    assert "FileNotFoundError" in str(info.value) and "line 2" in str(info.value)
    shown = capsys.readouterr().out
    assert shown.startswith("before\ntrace: 1 tool call")  # what it printed, then its trace
    assert "read_file  path='missing.txt'" in shown and "failed" in shown


def test_sandbox_limit_as_configured(shell):
    started = time.monotonic()
    with pytest.raises(LackpyRuntimeError):
        shell.run_cell_magic("lackpy", "--kit read_file", LONG)
    assert time.monotonic() - started < SANDBOX_TIMEOUT_S + 10


def test_keyboard_interrupt_stops_the_program(shell):
    # Ctrl-C as IPython gets it: Python's own SIGINT handler (in the whole suite, a handler
    # an earlier test's event loop left behind made this SIGINT do nothing)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:  # a program that timed out would raise ProgramTimeoutError, not KeyboardInterrupt
        with pytest.raises(KeyboardInterrupt):
            shell.run_cell_magic("lackpy", "--kit read_file", LONG)
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert shell.run_cell_magic("lackpy", "--kit read_file", "1 + 1") == 2


def test_notes_go_to_stderr(shell, capsys):
    out = shell.run_cell_magic("lackpy", "--kit read_file", "range(3)")
    assert out == "range(0, 3)"
    assert "lackpy: the output, of type range, is shown as text" in capsys.readouterr().err


def test_cell_line_takes_only_options(shell):
    with pytest.raises(LackpyUsageError):
        shell.run_cell_magic("lackpy", "--kit read_file stray words", "1")


def test_run_cell_shows_the_result(shell):
    result = shell.run_cell("%%lackpy --kit read_file\nread_file('notes.txt')")
    assert result.success and result.result == "alpha\nbeta\n"
    failed = shell.run_cell("%%lackpy --kit read_file\nimport os")
    assert isinstance(failed.error_in_exec, LackpyValidationError)


# -- %delegate in-process -----------------------------------------------------------


def test_delegate_inserts_a_lackpy_cell(shell, capsys):
    shell.rl_next_input = None
    assert shell.run_line_magic("delegate", "--kit read_file read the file notes.txt") is None
    cell = shell.rl_next_input
    assert cell.startswith("%%lackpy --kit read_file\n")
    assert "read_file('notes.txt')" in cell
    status = capsys.readouterr().out
    assert status.startswith("delegating: read the file notes.txt ... written by rules in ")
    assert status.endswith("; it is in the next cell\n")
    # the inserted cell runs as it is
    assert shell.run_cell(cell).result == "alpha\nbeta\n"


def test_delegate_in_a_terminal_ends_its_line_failed_and_the_error_says_what_to_do(shell, capsys):
    with pytest.raises(LackpyDelegateError) as failed:
        shell.run_line_magic("delegate", "--kit read_file write me a sonnet")
    assert capsys.readouterr().out == "delegating: write me a sonnet ... failed\n"
    assert "no model tier is configured" in str(failed.value)
    assert "`%%create NAME --pattern 'write me a sonnet'`" in str(failed.value)


def test_delegate_run_returns_the_output(shell):
    shell.rl_next_input = None
    out = shell.run_line_magic("delegate", "--kit read_file --run read the file notes.txt")
    assert out == "alpha\nbeta\n"
    assert "read_file('notes.txt')" in shell.rl_next_input


def test_delegate_intent_is_literal(shell):
    shell.user_ns["notes"] = "EXPANDED"
    shell.run_cell("%delegate --kit read_file read the file {notes}.txt")
    assert "read_file('{notes}.txt')" in shell.rl_next_input
    shell.run_cell("%delegate --kit read_file read the file $notes.txt")
    assert "read_file('$notes.txt')" in shell.rl_next_input


def test_delegate_keeps_params_in_the_cell(shell):
    shell.run_line_magic("delegate", "--kit read_file --param n=3 read the file notes.txt")
    assert shell.rl_next_input.startswith("%%lackpy --kit read_file --param n=3\n")


COPY = "--kit read_file,write_file --run copy the notes"


@pytest.fixture
def copy_template(workspace):
    folder = workspace / ".lackpy" / "templates"
    folder.mkdir(exist_ok=True)
    (folder / "copy.tmpl").write_text("---\nname: copy\npattern: copy the notes\n---\n"
                                      "write_file('copy.txt', read_file('notes.txt'))\n'copied'\n")
    yield workspace / "copy.txt"
    (folder / "copy.tmpl").unlink()
    (workspace / "copy.txt").unlink(missing_ok=True)


def test_delegate_run_holds_a_program_that_would_write(shell, copy_template, capsys):
    assert shell.run_line_magic("delegate", COPY) is None
    assert not copy_template.exists()
    captured = capsys.readouterr()
    status, held = captured.out.splitlines()[-2:]
    assert status.endswith("; it is in the next cell, not run")
    assert "not run: it calls write_file" in held and "--yes" in held and not captured.err
    assert shell.rl_next_input.startswith("%%lackpy --kit read_file,write_file\n")


def test_delegate_run_yes_runs_it_for_that_call(shell, copy_template, capsys):
    assert shell.run_line_magic("delegate", COPY.replace("--run", "--run --yes")) == "copied"
    assert copy_template.exists()
    assert "and it ran here" in capsys.readouterr().out
    with pytest.raises(LackpyUsageError):
        shell.run_line_magic("delegate", "--yes read the file notes.txt")


def test_delegate_failure_is_a_runtime_error(shell):
    with pytest.raises(LackpyDelegateError) as info:
        shell.run_line_magic("delegate", "--kit read_file frobnicate the widgets")
    assert isinstance(info.value, RuntimeError)
    assert "rules" in str(info.value)
    with pytest.raises(LackpyUsageError):
        shell.run_line_magic("delegate", "--kit read_file")


# -- loading ------------------------------------------------------------------------


@pytest.mark.parametrize("name", [EXT, "lackpy_kernel"])
def test_load_and_unload(name, tmp_path, monkeypatch):
    if name == "lackpy_kernel" and not hasattr(lackpy_kernel, "load_ipython_extension"):
        pytest.skip("lackpy_kernel does not re-export load_ipython_extension yet")
    ws = tmp_path / "ws"
    ws.mkdir()
    make_workspace(ws)
    saved = InteractiveShell._instance
    InteractiveShell._instance = None
    try:
        config = Config()
        config.HistoryManager.hist_file = ":memory:"
        ip = InteractiveShell.instance(config=config, ipython_dir=str(tmp_path / "ipython"))
        monkeypatch.chdir(ws)
        ip.run_line_magic("load_ext", name)
        magics = magics_of(ip)
        assert magics.service.workspace == ws.resolve()
        assert ip.run_cell_magic("lackpy", "--kit read_file", "read_file('notes.txt')") == "alpha\nbeta\n"
        ip.run_line_magic("unload_ext", name)
        assert "lackpy" not in ip.magics_manager.magics["cell"]
        assert "delegate" not in ip.magics_manager.magics["line"]
        assert magics.service.sandbox_worker_pid is None and not magics._loop.alive
    finally:
        InteractiveShell._instance = saved


# -- through a real ipykernel --------------------------------------------------------


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import start_new_kernel

    spec = KernelSpecManager().get_kernel_spec("python3")
    if spec.argv[0] not in ("python", sys.executable):
        pytest.skip(f"the python3 kernelspec runs {spec.argv[0]}, not this interpreter")
    ws = make_workspace(tmp_path_factory.mktemp("kernel-workspace"), KERNEL_TIMEOUT_S)
    env = {**os.environ, "IPYTHONDIR": str(tmp_path_factory.mktemp("kernel-ipython"))}
    km, kc = start_new_kernel(kernel_name="python3", cwd=str(ws), env=env, startup_timeout=60)
    try:
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def execute(kc, code, timeout=60):
    outputs = []
    # stop_on_error=False: a cell that fails on purpose must not abort the ones queued after it
    reply = kc.execute_interactive(code, output_hook=outputs.append, timeout=timeout,
                                   stop_on_error=False)
    return reply["content"], outputs


def of_type(outputs, msg_type):
    return [msg["content"] for msg in outputs if msg["msg_type"] == msg_type]


def test_through_ipykernel(kernel):
    km, kc = kernel
    reply, _ = execute(kc, f"%load_ext {EXT}")
    assert reply["status"] == "ok", reply

    reply, outputs = execute(kc, "%%lackpy --kit read_file --out text\nprint('hi')\nread_file('notes.txt')")
    assert reply["status"] == "ok", reply
    assert of_type(outputs, "execute_result")[0]["data"]["text/plain"] == repr("alpha\nbeta\n")
    assert "hi\n" in "".join(s["text"] for s in of_type(outputs, "stream") if s["name"] == "stdout")
    reply, _ = execute(kc, "assert text == 'alpha\\nbeta\\n'")
    assert reply["status"] == "ok", reply

    reply, outputs = execute(kc, "%delegate --kit read_file read the file notes.txt")
    assert reply["status"] == "ok", reply
    [payload] = [p for p in reply["payload"] if p["source"] == "set_next_input"]
    assert payload["text"].startswith("%%lackpy --kit read_file\n")
    assert "read_file('notes.txt')" in payload["text"] and payload["replace"] is False

    reply, outputs = execute(kc, "%%lackpy --kit read_file\nx = 1; import os")
    assert reply["status"] == "error" and reply["ename"] == "LackpyValidationError"
    [error] = of_type(outputs, "error")  # what nbval sees
    assert error["ename"] == "LackpyValidationError" and "line 1" in error["evalue"]
    assert error["traceback"] == [  # as the lackpy kernel shows it: the line and a caret
        "LackpyValidationError: the cell is not valid lackpy (1 error); nothing ran",
        error["traceback"][1], "    x = 1; import os", "           ^"]
    assert error["traceback"][1].startswith("line 1, col 8: ")

    reply, outputs = execute(kc, "%%lackpy --kit read_file\nlen(read_file('notes.txt'))")
    [trace] = of_type(outputs, "display_data")
    assert trace["data"]["text/html"].startswith("<details><summary>trace: 1 tool call")
    assert of_type(outputs, "execute_result")[0]["data"]["text/plain"] == "11"


def started(kc, code, timeout=60):
    """Send ``code``; return its msg_id once the kernel has begun executing it."""
    msg_id = kc.execute(code, stop_on_error=False)
    while True:
        message = kc.get_iopub_msg(timeout=timeout)
        if (message["parent_header"].get("msg_id") == msg_id
                and message["msg_type"] == "execute_input"):
            return msg_id


def test_interrupting_the_kernel_stops_the_program(kernel):
    km, kc = kernel
    reply, _ = execute(kc, f"%load_ext {EXT}")
    assert reply["status"] == "ok", reply
    msg_id = started(kc, f"%%lackpy --kit read_file\n{LONG}")
    time.sleep(0.5)  # into the program (an earlier interrupt stops the cell all the same)
    km.interrupt_kernel()
    while True:
        reply = kc.get_shell_msg(timeout=KERNEL_TIMEOUT_S / 2)  # a timeout would take twice this
        if reply["parent_header"].get("msg_id") == msg_id:
            break
    assert reply["content"]["status"] == "error", reply["content"]
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    assert km.is_alive()
    reply, outputs = execute(kc, "%%lackpy --kit read_file\n1 + 1")
    assert reply["status"] == "ok", reply
    assert of_type(outputs, "execute_result")[0]["data"]["text/plain"] == "2"
