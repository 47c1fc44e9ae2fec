"""``%usage`` on both hosts and ``lackpy usage``: three delegates (a template, a rule, a model on
a loopback Ollama server) show one model call, its tokens and cost, and two calls saved; the
``%delegate`` status line of the model's program says what it used."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from lackpy_kernel.telemetry import USAGE_FILE
from tests.support import agents
from tests.support import loopback as lb
from tests.support.hosts import Host, host_with
from tests.support.kernel import make_workspace

PROGRAM = "content = read_file('notes.txt')\ncontent"
# Ollama's loopback answer counts 5 tokens in and 3 out: (5 * 1000 + 3 * 2000) / 1e6 = $0.0110.
SPENT = "1 model call, 5 tokens in, 3 out, $0.0110"
INTENTS = ("the notes", "read the file notes.txt", "show me my notes please")


def usage_workspace(folder, server: lb.LoopbackServer):
    workspace = make_workspace(folder, (
        '[inference]\norder = ["templates", "rules", "loop"]\n\n'
        f'[inference.providers.loop]\nplugin = "ollama"\nhost = "{server.url}"\nmodel = "tiny"\n'
        "retry_delay = 0.001\nprice_in = 1000\nprice_out = 2000\n\n[sandbox]\ntimeout = 10\n"))
    (workspace / ".lackpy" / "templates").mkdir()
    (workspace / ".lackpy" / "templates" / "notes.tmpl").write_text(
        f"---\nname: notes\npattern: the notes\n---\n{PROGRAM}\n")
    return workspace


@pytest.fixture(scope="module")
def server():
    with lb.LoopbackServer(default=lb.ollama_answer(PROGRAM)) as running:
        yield running


host = host_with(usage_workspace, unset=agents.CLEARED_ENV)


def test_usage_after_a_template_a_rule_and_a_model(host: Host):
    assert "no model calls and no ratchet answers recorded" in host.run("%usage").text
    shown = [host.run(f"%delegate --kit read_file {intent}") for intent in INTENTS]
    assert all(cell.ok for cell in shown), shown
    assert [("written by" in cell.stdout, cell.stdout.endswith(f"({SPENT})\n")) for cell in shown] == [
        (True, False), (True, False), (True, True)]
    usage = host.run("%usage --since 1d")
    assert usage.ok, usage
    assert "model calls since " in usage.text and "1 call, 5 tokens in, 3 out, $0.0110" in usage.text
    assert "  ollama " in usage.text and "  loop " in usage.text
    assert "the ratchet saved 2 model calls (rules 1, template 1)" in usage.text
    bad = host.run("%usage --since yesterday")
    assert bad.ename == "UsageError" and "--since takes a day" in bad.evalue


def lackpy(*args, cwd):
    return subprocess.run([sys.executable, "-m", "lackpy_kernel", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_lackpy_usage_shows_the_totals_and_says_what_is_wrong(tmp_path, server, model_env):
    workspace = usage_workspace(tmp_path, server)
    for intent in INTENTS:
        done = lackpy("generate", "--kit", "read_file", intent, cwd=workspace)
        assert done.returncode == 0, done.stderr
    shown = lackpy("usage", "--json", cwd=workspace)
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    assert (report["total"]["calls"], report["total"]["cost"], report["saved_calls"]) == (1, 0.011, 2)
    assert [line["key"] for line in report["by_tier"]] == ["loop"]
    assert lackpy("usage", "--since", "soon", cwd=workspace).returncode == 2
    (workspace / ".lackpy" / USAGE_FILE).write_text("not a database " * 100)
    broken = lackpy("usage", cwd=workspace)
    assert broken.returncode == 1
    assert "cannot be used as the usage record" in broken.stderr and "move it aside" in broken.stderr
