"""Attacks on the live-validation endpoint (``POST /lackpy/validate``), which runs in the
Jupyter server, outside any sandbox: it never runs what it checks, answers hostile cells
with problems (never a server error), refuses what is too large, and needs the token."""

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


def _post(url: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=body, method="POST", headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=120) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def _check(server, source: str, **fields) -> tuple[int, dict]:
    body = json.dumps({"source": source, "names": None, **fields}).encode()
    return _post(server.url(VALIDATE_PATH), body)


def test_a_cell_that_would_write_is_checked_never_run(server):
    source = ("write_file('pwned.txt', 'x')\n%%lackpy\nwrite_file('also.txt', 'x')\n"
              "%delegate --run --yes write pwned.txt")
    for language in ("lackpy", "python"):
        assert _check(server, source, language=language)[0] == 200
        assert _check(server, "%%lackpy\n" + source, language=language)[0] == 200
    assert sorted(path.name for path in server.root.iterdir()) == []


@pytest.mark.parametrize("source", [
    "x = " + "[" * 5000 + "]" * 5000,           # deeper than the parser's stack
    "x = " + "-" * 50000 + "1",                 # deeper than the validator's guard
    "(" * 100000,                               # unbalanced
    "%" * 100000,                               # a magic line of nothing but %
    "%%lackpy " + "--param " * 20000,           # options without values
    "\x00\ud800" + "x" * 1000,                  # a NUL and a lone surrogate
])
def test_hostile_cells_are_problems_not_server_errors(server, source):
    for language in ("lackpy", "python"):
        status, answer = _check(server, source, language=language)
        assert status == 200, answer
        assert all(problem["message"] for problem in answer["problems"])


def test_a_cell_over_the_limit_is_refused_before_it_is_read(server):
    status, answer = _check(server, "[" * (MAX_SOURCE_CHARS + 1))
    assert status == 413 and str(MAX_SOURCE_CHARS) in answer["message"]


def test_without_the_token_nothing_is_checked(server):
    url = server.url(VALIDATE_PATH).split("?")[0]
    body = json.dumps({"source": "x", "names": None}).encode()
    assert _post(url, body)[0] == 403
    assert _post(url, body, {"Authorization": "token wrong"})[0] == 403
