"""lackpy as a jupyter-ai persona, in JupyterLab in a real (headless) browser.

jupyter-ai 3's ACP client (``jupyter-ai-acp-client``) loads the persona lackpy registers
under the ``jupyter_ai.personas`` entry point; ``@lackpy`` in a chat starts ``lackpy acp``
and shows its answer: the program as a tool call, its result as the message, and a write
as a diff with Apply and Discard in the chat. Screenshots go under ``$LACKPY_SCREENSHOTS``
when it is set (``docs/screenshots/jupyter-ai-chat.png`` is one).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from tests.support.acp_client import template
from tests.support.lab import (
    CELL_TIMEOUT_S,
    START_TIMEOUT_S,
    chromium_missing,
    lab_in_chromium,
    screenshot_dir,
)

NO_JUPYTER_AI = (
    "jupyter-ai's ACP client is not installed: pip install 'lackpy-kernel[jupyter-ai]' "
    "(jupyter-ai-acp-client 0.3; the jupyter-ai 3.2 metapackage itself cannot be installed "
    "beside the test extra: its jupyter-server-mcp needs fastmcp 3.4, which needs mcp<2, "
    "and the mcp extra needs mcp>=2.3)")
pytestmark = [
    pytest.mark.skipif(chromium_missing() is not None, reason=chromium_missing() or ""),
    pytest.mark.skipif(importlib.util.find_spec("jupyter_ai_acp_client") is None,
                       reason=NO_JUPYTER_AI),
]
WAIT_MS = CELL_TIMEOUT_S * 1000
# A chat no page shows is freed within seconds (not a minute), its personas with it; opened
# again, the persona loads its ACP session (session/load), as after a reload a minute later.
FREED_AT_ONCE = ("--ChatManager.freeable_chat_grace_period=1",
                 "--ChatManager.freeable_chat_scan_interval=1")
FREED_S = 5
TODO = "- tidy packaging/__init__.py\n**not bold**\nlast\n"  # what Markdown would mangle
INPUT = ".jp-chat-input-container textarea[placeholder]"  # (MUI keeps a hidden twin)


@pytest.fixture(scope="module")
def chat(tmp_path_factory):
    """A chat open in JupyterLab, in a workspace whose templates answer the prompts."""
    pytest.importorskip("playwright.sync_api", reason="Playwright is in the test extra")
    root = tmp_path_factory.mktemp("chat-root")
    (root / "notes.txt").write_text("remember the milk\n")
    (root / ".lackpy").mkdir()
    (root / ".lackpy" / "config.toml").write_text('[kit]\ndefault = ["read_file", "write_file"]\n')
    template(root, "milk", "what should I remember", "read_file('notes.txt')")
    template(root, "copy", "copy the notes", "write_file('copy.txt', read_file('notes.txt'))\n"
                                             "'copied'")
    (root / "todo.md").write_text(TODO)
    template(root, "todo", "show the todo", "read_file('todo.md')")
    (root / "lackpy.chat").write_text("")
    # only lackpy: jupyter-ai's own personas (Claude, Codex, ...) stay out of the chat
    env = {**os.environ, "JUPYTER_AI_ACP_CLIENT_E2E_TESTING_ONLY": "1"}
    with lab_in_chromium(root, tmp_path_factory.mktemp("chat-state"), env, *FREED_AT_ONCE) as (
            server, browser):
        page = browser.new_page(viewport={"width": 1200, "height": 800})
        chat = _Chat(page, root, server.url("lab/tree/lackpy.chat"))
        chat.open()
        yield chat


class _Chat:
    def __init__(self, page, root: Path, url: str) -> None:
        self.page, self.root, self.url = page, root, url

    def open(self) -> None:
        """Open the chat, and wait until the persona's ACP session is open (its mode shows):
        messages reach it then."""
        self.page.goto(self.url)
        self.page.locator(".jp-jai-personaControls-control-value", has_text="run").last.wait_for(
            timeout=START_TIMEOUT_S * 1000)

    def count(self, text: str) -> int:
        """How many rendered messages show ``text``."""
        return self.page.locator(".jp-chat-rendered-message", has_text=text).count()

    def send(self, text: str) -> None:
        box = self.page.locator(INPUT)
        box.fill(text)
        box.press("Enter")

    def said(self, text: str):
        """The chat's rendered message that shows ``text``, once it does."""
        message = self.page.locator(".jp-chat-rendered-message", has_text=text).last
        message.wait_for(timeout=WAIT_MS)
        return message

    def reply_to(self, prompt: str, text: str):
        """Send ``prompt``; the new rendered message that shows ``text``, once one more shows
        it than before (the chat may show earlier tests' messages with it)."""
        before = self.count(text)
        self.send(prompt)
        self.page.wait_for_function(
            """([text, before]) => [...document.querySelectorAll('.jp-chat-rendered-message')]
                   .filter(m => m.textContent.includes(text)).length > before""",
            arg=[text, before], timeout=WAIT_MS)
        return self.said(text)

    def tool_call(self, title: str):
        call = self.page.locator(".jp-jupyter-ai-acp-client-tool-call", has_text=title).last
        call.wait_for(timeout=WAIT_MS)
        return call


def test_at_lackpy_answers_a_template_prompt_with_the_program_and_its_result(chat, tmp_path):
    answer = chat.reply_to("@lackpy what should I remember", "remember the milk")
    assert "answered by the template milk: no model call" in answer.inner_text()
    call = chat.tool_call("lackpy program (written by templates")
    completed = "jp-jupyter-ai-acp-client-tool-call-completed"  # its update may come after the answer
    chat.page.wait_for_function("([call, done]) => call.classList.contains(done)",
                                arg=[call.element_handle(), completed], timeout=WAIT_MS)
    assert completed in call.get_attribute("class")
    detail = call.locator(".jp-jupyter-ai-acp-client-tool-call-detail")
    assert not detail.is_visible()  # folded until the person opens it
    call.locator("summary").click()
    assert detail.inner_text() == "read_file('notes.txt')\n\n→ remember the milk\n"
    chat.page.screenshot(path=str(screenshot_dir(tmp_path) / "jupyter-ai-chat.png"))


def test_a_write_asks_in_the_chat_with_its_diff_and_lands_only_when_applied(chat, tmp_path):
    chat.send("@lackpy copy the notes")
    buttons = chat.page.locator(".jp-jupyter-ai-acp-client-permission-buttons").last
    buttons.wait_for(timeout=WAIT_MS)
    diff = chat.page.locator(".jp-jupyter-ai-acp-client-diff-block").last
    assert diff.locator(".jp-jupyter-ai-acp-client-diff-header").inner_text() == "copy.txt"
    assert "+ remember the milk" in diff.inner_text()
    chat.page.screenshot(path=str(screenshot_dir(tmp_path) / "jupyter-ai-permission.png"))
    buttons.get_by_text("Discard them").click()
    assert "they were declined" in chat.said("they were declined").inner_text()
    assert not (chat.root / "copy.txt").exists()

    chat.send("@lackpy copy the notes")
    buttons = chat.page.locator(".jp-jupyter-ai-acp-client-permission-buttons").last
    buttons.get_by_text("Apply the changes").wait_for(timeout=WAIT_MS)
    buttons.get_by_text("Apply the changes").click()
    chat.said("copied")
    assert (chat.root / "copy.txt").read_text() == "remember the milk\n"


def test_a_result_shows_as_the_notebook_shows_it_not_as_markdown(chat):
    """Issue 42: ``packaging/__init__.py`` once showed as ``packaging/init.py`` in bold, and a
    file's lines ran together as bullets."""
    chat.send("@lackpy show the todo")
    answer = chat.said("packaging/__init__.py")
    assert answer.locator("pre code").first.inner_text() == TODO.removesuffix("\n")  # a block
    assert answer.locator("li, strong").count() == 0


def test_after_a_reload_the_next_reply_is_that_prompts_alone(chat):
    """Issue 42: jupyter-ai's ACP client attached the ``session/load`` replay (every earlier
    reply) to the first reply after a page reload; lackpy replays nothing to that client, which
    keeps the chat itself."""
    chat.send("@lackpy what should I remember")
    chat.said("answered by the template milk")
    chat.page.goto("about:blank")  # the page reloads once the chat was freed
    chat.page.wait_for_timeout(FREED_S * 1000)
    chat.open()
    # counted once the reloaded chat shows what it kept (earlier tests' messages render anew)
    milk_before = chat.count("remember the milk")
    reply = chat.reply_to("@lackpy show the todo", "answered by the template todo")
    assert "remember the milk" not in reply.inner_text()
    assert chat.count("remember the milk") == milk_before
