"""%delegate's live progress: one display, updated in place as the tiers work."""

from __future__ import annotations

from tests.support import loopback as lb
from tests.support.kernel import Kernel, make_workspace

PROGRAM = "lines = read_file('notes.txt').splitlines()\nlen(lines)"


def progress_of(outcome, title):
    """The live display's first content and its updates, in order (all by its display_id)."""
    (shown,) = [m for m in outcome.messages if m["msg_type"] == "display_data"
                and m["content"]["data"]["text/plain"] == title]
    display_id = shown["content"]["transient"]["display_id"]
    updates = [m["content"]["data"]["text/plain"] for m in outcome.messages
               if m["msg_type"] == "update_display_data"
               and m["content"]["transient"]["display_id"] == display_id]
    return updates


def test_the_progress_display_follows_the_tiers_in_order_and_ends_as_it_began(kernel):
    title = "delegating: read the file notes.txt ..."
    updates = progress_of(kernel.execute("%delegate read the file notes.txt"), title)
    assert updates[-1] == title  # a notebook replayed later shows what the cell showed first
    title_line, templates, rules = updates[-2].splitlines()
    assert title_line == title
    assert templates.startswith("templates: not available (no templates yet")
    assert rules == "trying rules"


def test_the_progress_display_shows_the_program_as_a_model_streams_it(tmp_path):
    pieces = ["lines = read_file(", "'notes.txt').splitlines()\n", "len(lines)"]
    with lb.LoopbackServer(default=lb.ollama_stream(pieces)) as server:
        config = (f'[inference]\norder = ["local"]\n[inference.providers.local]\nplugin = "ollama"\n'
                  f'host = "{server.url}"\nmodel = "m"\nmax_retries = 0\n')
        kernel = Kernel(make_workspace(tmp_path, config))
        try:
            outcome = kernel.execute("%delegate count the lines of notes.txt")
        finally:
            kernel.close()
    assert outcome.status == "ok", outcome.reply
    updates = progress_of(outcome, "delegating: count the lines of notes.txt ...")
    streamed = [text.split("local is writing (generate):\n", 1)[1] for text in updates
                if "local is writing" in text]
    assert streamed[-1] == PROGRAM
    assert all(later.startswith(earlier) for earlier, later in zip(streamed, streamed[1:], strict=False))
    assert "written by local" in outcome.stream("stdout")
    assert outcome.reply["content"]["payload"][0]["text"] == PROGRAM


def test_the_extension_shows_the_same_live_progress_in_a_python_notebook(tmp_path):
    pieces = ["lines = read_file(", "'notes.txt').splitlines()\n", "len(lines)"]
    with lb.LoopbackServer(default=lb.ollama_stream(pieces)) as server:
        config = (f'[inference]\norder = ["local"]\n[inference.providers.local]\nplugin = "ollama"\n'
                  f'host = "{server.url}"\nmodel = "m"\nmax_retries = 0\n')
        kernel = Kernel(make_workspace(tmp_path, config), kernel_name="python3")
        try:
            assert kernel.execute("%load_ext lackpy_kernel").status == "ok"
            outcome = kernel.execute("%delegate count the lines of notes.txt")
        finally:
            kernel.close()
    assert outcome.status == "ok", outcome.reply
    updates = progress_of(outcome, "delegating: count the lines of notes.txt ...")
    assert "trying local" in updates[-2].splitlines()
    streamed = [text.split("local is writing (generate):\n", 1)[1] for text in updates
                if "local is writing" in text]
    assert streamed[-1] == PROGRAM
    assert updates[-1] == "delegating: count the lines of notes.txt ..."
    assert "written by local" in outcome.stream("stdout")
