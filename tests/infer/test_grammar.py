"""The lackpy grammar as a decoding constraint: what it admits (read by Lark's Earley parser,
from the very GBNF text a server gets) and how a model tier sends it (`constrain`), with a
loopback server speaking the OpenAI protocol as llama.cpp's servers do."""

from __future__ import annotations

import ast

import pytest

from lackpy_kernel.infer import InferenceDispatcher
from lackpy_kernel.infer._examples import general_examples
from lackpy_kernel.infer.grammar import lackpy_gbnf, whole_statements
from lackpy_kernel.infer.models import GenerationSettings, OllamaProvider, OpenAIProvider, RetryPolicy
from lackpy_kernel.infer.prompt import Example
from lackpy_kernel.lang import validate
from tests.support import loopback as lb
from tests.support.gbnf import admits, parser

TOOLS = ("read_file", "find_files", "find_definitions")
GRAMMAR = parser(lackpy_gbnf(TOOLS))

ADMITTED = [
    "read_file('notes.txt')",
    "lines = read_file('notes.txt').splitlines()\nlen(lines)",
    "x = [l.upper() for l in read_file(\"a\").splitlines() if l]\nx[::-1]",
    "total = 0\nfor f in find_files('*.py'):\n    total += len(read_file(f).splitlines())\ntotal",
    "rows = sorted(find_definitions('f'), key=lambda r: r['line'])",
    "d = {'a': 1, 'b': 2}\nd['a'] if 'a' in d else None",
    "n = 0  # count\n# a note\nn",
    "if len(find_files('*.md')) > 2:\n    a = 1\nelif True:\n    a = 2\nelse:\n    a = 3\na",
    "words = {w: len(w) for w in read_file('a').split()}\nwords",
    "x = 'it\\'s'\nx is not None and not x == ''",
    "first, rest = find_files('*')[0], -1 * 2 // 3 % 4",
]
REFUSED = [
    "import os",
    "open('x').read()",
    "exec('1')",
    "while True:\n    x = 1",
    "def f():\n    return 1",
    "__import__('os')",
    "x = read_file('a').__class__",
    "sum(x for x in [1, 2])",  # a generator expression: not in lackpy
    "f'{x}'",
    "for a in b:\n    for c in a:\n        c",  # one level of blocks only
    "x = 1 +",
]


@pytest.mark.parametrize("program", ADMITTED)
def test_the_grammar_admits_lackpy_programs_and_each_one_parses(program):
    assert admits(GRAMMAR, program)
    ast.parse(program)


@pytest.mark.parametrize("program", REFUSED)
def test_the_grammar_refuses_what_lackpy_refuses_or_what_it_cannot_vouch_for(program):
    assert not admits(GRAMMAR, program)


def test_the_grammar_admits_every_general_example_of_the_kit():
    for example in general_examples(set(TOOLS)):
        code = Example.coerce(example).code
        assert admits(GRAMMAR, code), code
        assert validate(code, set(TOOLS)).valid


def test_names_that_are_not_identifiers_never_reach_the_grammar():
    text = lackpy_gbnf(["read_file", 'x" | "open', "_private", "__import__"])
    callee = next(line for line in text.splitlines() if line.startswith("callee ::= "))
    assert '"read_file"' in callee and "open" not in callee and "_private" not in callee


def test_a_stop_sequence_may_end_the_program_and_nothing_may_follow_it():
    stops = ("\nIntent:", 'say "end"\\')
    grammar = parser(lackpy_gbnf(TOOLS, stops=stops))
    assert admits(grammar, "read_file('a')\n\nIntent:") and admits(grammar, "read_file('a')")
    assert admits(grammar, 'x = 1\nsay "end"\\')
    assert not admits(grammar, "read_file('a')\nIntent: count") and not admits(GRAMMAR, "x\nIntent:")


def policy() -> RetryPolicy:
    return RetryPolicy(retry_delay=0.001, request_timeout=5.0, stream_idle_timeout=5.0, max_retries=0)


def constrained(server) -> OpenAIProvider:
    return OpenAIProvider("local", base_url=f"{server.url}/v1", policy=policy(),
                          generation=GenerationSettings(raw=True, constrain="grammar"))


async def test_constrain_grammar_sends_the_kits_grammar_with_each_request(model_env, model_server):
    model_server.script(lb.openai_answer("read_file('a')"))
    provider = constrained(model_server)
    result = await InferenceDispatcher([provider]).generate("read a", "read_file(path)", {"read_file"})
    assert result.program == "read_file('a')"
    sent = model_server.requests[0].json["grammar"]
    assert sent == lackpy_gbnf(["read_file"], stops=["\nIntent:", "\n```"])
    assert provider.grammar_status == "taken"


async def test_a_reply_the_token_limit_cut_under_the_grammar_keeps_its_whole_statements(
        model_env, model_server):
    cut = "lines = read_file('a').splitlines()\nn = len(lines)\nsorted(read_file('b'"
    model_server.script(lb.openai_answer(cut), lb.openai_answer(cut))
    assert await constrained(model_server).generate("read a", "read_file(path)") == (
        "lines = read_file('a').splitlines()\nn = len(lines)")
    unconstrained = OpenAIProvider("local", base_url=f"{model_server.url}/v1", policy=policy(),
                                   generation=GenerationSettings(raw=True))
    assert await unconstrained.generate("read a", "read_file(path)") == cut  # the chain sees it all


def test_whole_statements_of_a_cut_reply():
    assert whole_statements("x = 1\nfor a in b:\n    y = a\nz = (") == "x = 1\nfor a in b:\n    y = a"
    assert whole_statements("len(read_file('a'))") == "len(read_file('a'))"
    assert whole_statements("read_file('a") == ""


async def test_a_server_that_refuses_the_grammar_is_asked_again_without_it(model_env, model_server):
    model_server.script(lb.openai_error(400, "Unrecognized request argument supplied: grammar"),
                        lb.openai_answer("read_file('a')"), lb.openai_answer("read_file('b')"))
    provider = constrained(model_server)
    dispatcher = InferenceDispatcher([provider])
    with pytest.warns(RuntimeWarning, match="refused the lackpy grammar .*HTTP 400"):
        first = await dispatcher.generate("read a", "read_file(path)", {"read_file"})
    second = await dispatcher.generate("read b", "read_file(path)", {"read_file"})
    assert (first.program, second.program) == ("read_file('a')", "read_file('b')")
    assert ["grammar" in request.json for request in model_server.requests] == [True, False, False]
    assert provider.grammar_status.startswith("refused: HTTP 400")


def test_constrain_is_refused_where_the_api_takes_none_and_for_unknown_kinds():
    with pytest.raises(ValueError, match="takes no decoding constraint; remove `constrain`"):
        OllamaProvider.from_settings("o", {"constrain": "grammar"})
    with pytest.raises(ValueError, match="'regex' is not offered: this provider takes: 'grammar'"):
        OpenAIProvider.from_settings("o", {"constrain": "regex", "base_url": "http://x/v1"})



async def test_a_probe_says_whether_the_server_takes_the_grammar(model_env, model_server):
    model_server.script(lb.openai_answer("r"), lb.openai_error(500, "failed to parse grammar"),
                        lb.openai_answer("r"))
    taken, refused = constrained(model_server), constrained(model_server)
    assert await taken.probe_grammar() == "taken"
    with pytest.warns(RuntimeWarning, match="refused the lackpy grammar"):
        assert (await refused.probe_grammar()).startswith("refused: HTTP 500")
    assert model_server.requests[0].json["max_tokens"] == 1
    unconstrained = OpenAIProvider("plain", base_url=f"{model_server.url}/v1", policy=policy())
    assert await unconstrained.probe_grammar() == ""
    assert len(model_server.requests) == 3  # the refused probe asked once more without it


def test_samples_at_temperature_zero_is_refused_with_what_to_do():
    with pytest.raises(ValueError, match="samples = 3 at temperature = 0 .* raise temperature"):
        OpenAIProvider.from_settings("o", {"samples": 3, "temperature": 0, "base_url": "http://x/v1"})
