"""``POST /lackpy/validate`` on a real Jupyter server: a cell's problems, as the kernel words
them, at their line and column; names the session knows are not problems."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from lackpy_kernel.lab import VALIDATE_PATH
from lackpy_kernel.lab.check import MAX_SOURCE_CHARS
from tests.support.lab import validation_server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with validation_server(tmp_path_factory) as running:
        yield running


def _post(server, body, *, token=True):
    url = server.url(VALIDATE_PATH) if token else server.url(VALIDATE_PATH).split("?")[0]
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def _problems(server, source, **fields):
    status, answer = _post(server, {"source": source, **fields})
    assert status == 200, answer
    return answer["problems"]


def test_a_forbidden_name_is_a_problem_at_its_word_with_the_validators_message(server):
    (problem,) = _problems(server, "text = 'a'\nopen('x')", names=[])
    assert (problem["line"], problem["col"], problem["end_line"], problem["end_col"]) == (2, 1, 2, 5)
    assert problem["message"] == ("the name 'open' is forbidden: use read_file(path) or "
                                  "write_file(path, content)")


def test_a_fixed_cell_has_no_problems(server):
    assert _problems(server, "read_file('x')", names=["read_file"], tools=["read_file"]) == []


def test_names_the_session_knows_are_not_problems_and_others_are(server):
    assert _problems(server, "earlier + 1", names=["earlier"]) == []
    (problem,) = _problems(server, "later + 1", names=["earlier"])
    assert problem["message"].startswith("unknown name 'later'")


def test_before_the_kernel_said_its_names_no_name_is_unknown(server):
    assert _problems(server, "whatever + 1", names=None) == []
    (problem,) = _problems(server, "import os", names=None)
    assert problem["message"].startswith("Import is not allowed")


def test_a_kit_tool_may_not_be_rebound(server):
    (problem,) = _problems(server, "read_file = 1", names=["read_file"], tools=["read_file"])
    assert "read_file" in problem["message"]


def test_magic_lines_are_read_by_the_magic_syntax(server):
    problems = _problems(server, "%kit --bogus\n%nosuch 1\n%params n=1\n%kit --again\nn",
                         names=["n"])
    assert [(p["line"], p["message"]) for p in problems] == [
        (1, "unknown option --bogus; usage: %kit [NAME | tool,tool,...]"),
        (2, "unknown magic %nosuch; %lsmagic lists them"),
        (4, "unknown option --again; usage: %kit [NAME | tool,tool,...]")]


def test_plan_and_step_lines_are_read_past_their_options_as_the_magic_reads_them(server):
    problems = _problems(server, "%plan bogus\n%plan run\n%plan run notes.txt --key k", names=[])
    assert [(p["line"], p["message"].split(";")[0]) for p in problems] == [
        (1, "unknown %plan action 'bogus'"), (2, "%plan run needs TASK")]
    (problem,) = _problems(server, "%%step two words\n1", names=[])
    assert problem["message"].startswith("name the step with one name such as fetch_notes")


def test_a_python_notebooks_lackpy_cell_is_checked_below_its_magic_line(server):
    source = "%%lackpy --kit debug\nrows = read_file('x')\nimport os"
    (problem,) = _problems(server, source, language="python", names=None)
    assert problem["line"] == 3 and problem["message"].startswith("Import is not allowed")
    (bad_option,) = _problems(server, "%%lackpy --nope\n1", language="python", names=None)
    assert bad_option["message"].startswith("unknown option --nope; usage: %%lackpy")
    assert _problems(server, "import os", language="python", names=None) == []  # Python's own


def test_a_validate_cells_body_is_checked_as_a_cell_with_the_sessions_names(server):
    source = "%%validate\nlen(earlier) + nowhere\nimport os"
    problems = _problems(server, source, names=["earlier"])
    assert [(p["line"], p["col"], p["message"].split(":")[0]) for p in problems] == [
        (2, 16, "unknown name 'nowhere'"), (3, 1, "Import is not allowed")]
    (bad_option,) = _problems(server, "%%validate --nope\n1", names=[])
    assert bad_option["message"] == "unknown option --nope; usage: %%validate"


def test_a_step_cells_body_sees_its_kit_task_and_context_not_the_sessions_variables(server):
    source = "%%step fetch --writes text\nread_file(task) + context\nlen(earlier)"
    (problem,) = _problems(server, source, names=["earlier", "read_file"], tools=["read_file"])
    assert (problem["line"], problem["col"]) == (3, 5)
    assert problem["message"].startswith("unknown name 'earlier'")
    # another kit's tools are not known here: no name is unknown, the rest is still checked
    (problem,) = _problems(server, "%%step s --kit other\nanything(task)\nimport os",
                           names=["read_file"], tools=["read_file"])
    assert problem["line"] == 3 and problem["message"].startswith("Import is not allowed")
    (bad_option,) = _problems(server, "%%step s --nope\n1", names=[])
    assert bad_option["message"].startswith("unknown option --nope; usage: %%step")


def test_a_python_notebooks_step_and_validate_cells_are_checked_and_other_cell_magics_not(server):
    for magic in ("%%step fetch", "%%validate"):
        (problem,) = _problems(server, f"{magic}\nimport os", language="python", names=None)
        assert problem["line"] == 2 and problem["message"].startswith("Import is not allowed")
    assert _problems(server, "%%timeit\nimport os", language="python", names=None) == []
    assert _problems(server, "%%lackpyish\nimport os", language="python", names=None) == []


def test_a_bad_request_says_what_to_send(server):
    assert _post(server, b"{not json")[0] == 400
    status, answer = _post(server, {"code": "x"})
    assert status == 400 and '"source"' in answer["message"]
    status, answer = _post(server, {"source": "x", "language": "ruby"})
    assert status == 400 and "ruby" in answer["message"]
    status, answer = _post(server, {"source": "x", "names": "x"})
    assert status == 400 and "names" in answer["message"]


def test_a_cell_too_large_to_check_as_you_type_is_refused_saying_so(server):
    status, answer = _post(server, {"source": "x" * (MAX_SOURCE_CHARS + 1), "names": None})
    assert status == 413 and "the kernel still checks it" in answer["message"]


def test_the_endpoint_needs_the_servers_token(server):
    assert _post(server, {"source": "x"}, token=False)[0] == 403
