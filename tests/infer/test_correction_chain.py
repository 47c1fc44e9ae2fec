"""The correction chain against real clients and loopback model servers: what weak models really send."""

from __future__ import annotations

import json

import pytest

from lackpy_kernel.errors import GenerationError
from lackpy_kernel.infer import InferenceDispatcher, clean_reply
from lackpy_kernel.infer.models import GenerationSettings, OllamaProvider, OpenAIProvider, RetryPolicy
from lackpy_kernel.infer.prompt import EXCERPT_LINES
from lackpy_kernel.lang import validate
from tests.support import loopback as lb

TOOLS = "read_file(path: str) -> str: read a text file"
ALLOWED = {"read_file"}
INTENT = "count the lines of notes.txt"
GOOD = "lines = read_file('notes.txt').splitlines()\nlen(lines)"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for var in ("OLLAMA_HOST", "OPENAI_API_KEY", "OPENAI_BASE_URL", "HTTP_PROXY", "HTTPS_PROXY",
                "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def server():
    with lb.LoopbackServer() as running:
        yield running


def policy() -> RetryPolicy:
    return RetryPolicy(retry_delay=0.001, request_timeout=5.0, stream_idle_timeout=5.0, max_retries=0)


def raw_openai(server, **generation) -> OpenAIProvider:
    return OpenAIProvider("local", base_url=f"{server.url}/v1", policy=policy(),
                          generation=GenerationSettings(raw=True, **generation))


def chat_ollama(server, **generation) -> OllamaProvider:
    return OllamaProvider("ollama", host=server.url, policy=policy(),
                          generation=GenerationSettings(**generation))


async def generate(provider, intent=INTENT):
    return await InferenceDispatcher([provider]).generate(intent, TOOLS, ALLOWED)


def asked(request) -> str:
    return lb.prompt_of(request)


def steps(result) -> list[str]:
    return [entry["step"] for entry in result.attempts_log]


# --- cleanup: free, no second model call -------------------------------------------------------------

async def test_a_reply_that_runs_on_past_the_program_keeps_only_the_program(server):
    server.script(lb.openai_answer(GOOD + "\n\nIntent: find the tests\nProgram:\nfiles = find_files('t*')"))
    result = await generate(raw_openai(server))
    assert result.program == GOOD and result.correction_strategy == "cleanup"
    assert len(server.requests) == 1
    assert "dropped the text after the program (from line 4" in result.attempts_log[-1]["did"]
    assert server.requests[0].json["stop"] == ["\nIntent:", "\n```"]  # a server that honours it never runs on


async def test_a_chat_reply_stopped_at_its_code_blocks_end_is_the_program_in_one_call(server):
    server.script(lb.ollama_answer("```python\n" + GOOD))  # the server stopped at "\n```"
    result = await generate(chat_ollama(server))
    assert result.program == GOOD and len(server.requests) == 1 and result.attempts_log is None
    body = server.requests[0].json
    assert body["options"]["stop"] == ["\nIntent:", "\n```"]
    system, *examples, user = body["messages"]
    assert "Intent:" not in system["content"] and user["content"] == f"Intent: {INTENT}\nProgram:\n"
    assert examples and [turn["role"] for turn in examples] == ["user", "assistant"] * (len(examples) // 2)
    for turn in examples[1::2]:  # each example's program is one code block, as the reply should be
        code = turn["content"].removeprefix("```python\n").removesuffix("\n```")
        assert turn["content"] == f"```python\n{code}\n```" and validate(code, ALLOWED | {"len"}).valid


async def test_a_label_before_the_program_is_stripped(server):
    server.script(lb.ollama_answer("Program:\n" + GOOD))
    result = await generate(chat_ollama(server))
    assert result.program == GOOD and result.correction_strategy == "cleanup"
    assert "stripped the label 'Program'" in result.attempts_log[-1]["did"]
    assert len(server.requests) == 1


async def test_a_cut_off_string_keeps_the_longest_start_that_validates(server):
    server.script(lb.openai_answer("text = read_file('notes.txt')\nlen(text.splitlines())\nlabel = 'the cou"))
    result = await generate(raw_openai(server))
    assert result.program == "text = read_file('notes.txt')\nlen(text.splitlines())"
    assert "kept lines 1-2 of 3" in result.attempts_log[-1]["did"]
    assert len(server.requests) == 1


def test_text_that_does_not_parse_is_called_prose_or_cut_off_not_a_syntax_error_deep_inside():
    def check(program):
        return validate(program, ALLOWED).errors

    prose = ("To count the lines you first read the file.\nThen you split it, and it's done.\n" * 30)
    assert clean_reply(prose, check, ALLOWED).errors == [
        "the reply is not a program: it begins with prose ('To count the lines you first read the file.')"]
    cut = clean_reply("total = len(read_file('notes.txt').splitlines(", check, ALLOWED)
    assert len(cut.errors) == 1 and cut.errors[0].startswith("the reply was cut off at line 1")
    assert "raise max_tokens" in cut.errors[0]
    broken = clean_reply("data/notes.txt = read_file('notes.txt')", check, ALLOWED)
    assert broken.is_program and broken.errors[0].startswith("line 1, col 1: syntax error: cannot assign")


async def test_a_reply_of_comments_only_is_not_a_program(server):
    server.script(lb.openai_answer("# read the file and count its lines"), lb.openai_answer(GOOD))
    result = await generate(raw_openai(server))
    assert result.program == GOOD
    assert result.attempts_log[0]["errors"] == ["the reply holds no code, only comments"]


# --- the retry and the fixer ---------------------------------------------------------------------------

async def test_a_reply_that_copies_the_prompt_skips_the_retry_and_goes_to_the_fixer(server):
    server.script(lb.openai_answer(lambda request: "\n".join(asked(request).splitlines()[:6])),
                  lb.openai_answer(GOOD))
    result = await generate(raw_openai(server))
    assert result.program == GOOD and result.correction_strategy == "fixer"
    assert steps(result) == ["generate", "cleanup", "retry", "fixer"]
    assert result.attempts_log[2]["did"] == "skipped: the reply copies the prompt"
    assert len(server.requests) == 2  # the skipped retry cost no call
    fixer_prompt = asked(server.requests[1])
    assert "The previous reply was not a program." in fixer_prompt


async def test_an_invented_error_list_on_retry_does_not_replace_the_first_program(server):
    first = "lines = read_file('notes.txt').splitlines()\nwhile lines:\n    lines = lines[1:]\nlen(lines)"
    invented = "- line 2: while is not allowed\n- line 3: use a for loop\n- line 4: the result is wrong"
    server.script(lb.ollama_answer(first), lb.ollama_answer(invented), lb.ollama_answer(GOOD))
    result = await generate(chat_ollama(server))
    assert result.program == GOOD and result.correction_strategy == "fixer"
    fixer_request = server.requests[2].json["messages"][-1]["content"]
    assert "while lines:" in fixer_request and "- line 3: use a for loop" not in fixer_request
    assert "repair attempt 1, the best so far" in result.attempts_log[-1]["did"]


async def test_the_fixer_is_shown_a_bounded_excerpt_and_the_first_errors_the_retry_only_errors(server):
    long_program = "\n".join(f"x{n} = open('f{n}')" for n in range(60))
    server.script(lb.ollama_answer(long_program), lb.ollama_answer("I cannot do that."),
                  lb.ollama_answer(GOOD))
    result = await generate(chat_ollama(server))
    assert result.correction_strategy == "fixer"
    retry, fixer = (request.json["messages"][-1]["content"] for request in server.requests[1:])
    assert "x0 = open" not in retry and "Errors: line 1, col 6:" in retry and "(and 58 more)" in retry
    assert "x0 = open('f0')" in fixer and f"x{EXCERPT_LINES} = open" not in fixer and "(cut)" in fixer
    assert fixer.count("open") <= EXCERPT_LINES + 2 and "(and 58 more)" in fixer
    assert len(fixer) < 1200 and fixer.endswith("Program:\n")


@pytest.mark.parametrize("rounds", [0, 1, 2, 3])
async def test_no_intent_costs_more_model_calls_than_the_configured_rounds(server, rounds):
    server.default = lb.openai_answer("x = open('notes.txt')\nx")
    provider = raw_openai(server, correction_rounds=rounds)
    with pytest.raises(GenerationError, match="invalid program after correction"):
        await generate(provider)
    assert len(server.requests) == 1 + rounds


async def test_correction_rounds_is_read_from_the_config_table(tmp_path, server):
    from lackpy_kernel.infer import build_provider

    provider = build_provider("local", {"plugin": "openai", "base_url": f"{server.url}/v1", "raw": True,
                                        "correction_rounds": 1, "max_retries": 0}, tmp_path)
    server.default = lb.openai_answer("x = open('notes.txt')\nx")
    with pytest.raises(GenerationError):
        await generate(provider)
    assert len(server.requests) == 2


async def test_attempts_log_says_what_each_step_did(server):
    server.script(lb.openai_answer("x = open('notes.txt')\nx"), lb.openai_answer("Program: " + GOOD))
    result = await generate(raw_openai(server))
    log = result.attempts_log
    assert [(entry["step"], entry["did"].split(";")[0]) for entry in log] == [
        ("generate", "wrote a program that is not valid"),
        ("cleanup", "found nothing to clean"),
        ("retry", "asked again with its first 1 error(s)"),
    ]
    assert "stripped the label 'Program'" in log[-1]["did"]
    assert log[0]["errors"] and log[-1]["errors"] == [] and log[-1]["program"] == GOOD
    json.dumps(log)  # it travels in the delegate dict
