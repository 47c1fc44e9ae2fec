"""%delegate sees the notebook: the session's variables reach the model's prompt, bounded,
as [delegate] context says, and the program may use them."""

from __future__ import annotations

import pytest

from tests.support import loopback as lb
from tests.support.kernel import Kernel, make_workspace

PROGRAM = "len(text.splitlines())"


def _config(server: lb.LoopbackServer, context: str | None) -> str:
    config = (f'[inference]\norder = ["local"]\n[inference.providers.local]\nplugin = "ollama"\n'
              f'host = "{server.url}"\nmodel = "m"\nmax_retries = 0\nstream = false\n')
    return config + (f'[delegate]\ncontext = "{context}"\n' if context else "")


def _system_prompt(server: lb.LoopbackServer) -> str:
    return server.requests[-1].json["messages"][0]["content"]


@pytest.mark.parametrize("sandboxed", [True, False], ids=["sandbox", "in-process"])
def test_the_variables_reach_the_prompt_with_previews_and_the_program_may_use_them(
        tmp_path, sandboxed):
    with lb.LoopbackServer(default=lb.ollama_answer(PROGRAM)) as server:
        config = _config(server, None) + ("" if sandboxed else "[sandbox]\nenabled = false\n")
        kernel = Kernel(make_workspace(tmp_path, config))
        try:
            assert kernel.execute("text = read_file('notes.txt')\nbig = 'x' * 100000").status == "ok"
            outcome = kernel.execute("%delegate --run count the lines of text")
            prompt = _system_prompt(server)
        finally:
            kernel.close()
    assert outcome.status == "ok", outcome.reply["content"]
    assert "text: str, 17 chars, 4 lines = 'alpha\\nbeta\\ngamma\\n'" in prompt
    assert "big: str, 100000 chars, 1 lines" in prompt
    assert len(prompt.split("The notebook's variables", 1)[1]) < 4_000  # bounded, not 100 KB
    inserted = outcome.reply["content"]["payload"][0]["text"]
    assert inserted == "# uses the notebook's text\n" + PROGRAM
    assert outcome.result() == "3"  # it ran in the session, where text is


@pytest.mark.parametrize(("context", "shown", "hidden"), [
    ("names", "text: str, 17 chars, 4 lines", "'alpha"),
    ("none", None, "text: str"),
])
def test_the_config_says_how_much_the_prompt_tells(tmp_path, context, shown, hidden):
    with lb.LoopbackServer(default=lb.ollama_answer(PROGRAM)) as server:
        kernel = Kernel(make_workspace(tmp_path, _config(server, context)))
        try:
            kernel.execute("text = read_file('notes.txt')")
            outcome = kernel.execute("%delegate count the lines of text")
            prompt = _system_prompt(server)
        finally:
            kernel.close()
    assert outcome.status == "ok", outcome.reply["content"]
    if shown:
        assert shown in prompt
    assert hidden not in prompt
    # the names are allowed either way: the program that uses text validates
    assert outcome.reply["content"]["payload"][0]["text"].endswith(PROGRAM)


def test_a_bad_context_setting_is_named_at_start(tmp_path):
    kernel = Kernel(make_workspace(tmp_path, '[delegate]\ncontext = "everything"\n'))
    try:
        outcome = kernel.execute("1 + 1")
    finally:
        kernel.close()
    warning = outcome.stream("stderr")
    assert "context" in warning and "'everything'" in warning and outcome.result() == "2"
