"""Tier 1 rules, replay, the prompt, sanitize and deterministic cleanup."""

import json

import pytest

from lackpy_kernel.infer import (
    Example,
    ReplayProvider,
    RulesProvider,
    build_system_prompt,
    deterministic_cleanup,
    format_params_description,
    record_generation,
    sanitize_output,
    select_examples,
)
from lackpy_kernel.infer.prompt import (
    FIXER_INSTRUCTION,
    FRAMING,
    fixer_prompt,
    system_prompt_for,
    user_message_for,
)
from lackpy_kernel.lang import ALLOWED_BUILTINS, validate

ALL = """read_file(path: str) -> str: read
find_files(pattern: str) -> list[str]: glob
find_definitions(name: str) -> list[dict]: defs
find_callers(name: str) -> list[dict]: calls"""
TOOLS = {"read_file", "find_files", "find_definitions", "find_callers"}


def kit(*tools: str) -> dict:
    """The per-call config the dispatcher passes: the kit's tool names as data."""
    return {"tool_names": sorted(tools)}


@pytest.mark.parametrize(
    ("intent", "program"),
    [
        ("read the file pyproject.toml", "content = read_file('pyproject.toml')\ncontent"),
        ("Read file 'notes.txt'.", "content = read_file('notes.txt')\ncontent"),
        ("find the definition of main", "results = find_definitions('main')\nresults"),
        ("find definitions for Parser", "results = find_definitions('Parser')\nresults"),
        ("find all callers of validate", "results = find_callers('validate')\nresults"),
        ("find usages of run", "results = find_callers('run')\nresults"),
        ("find references for x?", "results = find_callers('x')\nresults"),
        ("find all py files", "files = find_files('**/*.py')\nfiles"),
        ("list all .MD files", "files = find_files('**/*.md')\nfiles"),
        ("glob src/**/*.rs", "files = find_files('src/**/*.rs')\nfiles"),
    ],
)
async def test_rules(intent, program):
    written = await RulesProvider().generate(intent, ALL, kit(*TOOLS))
    assert written == program
    assert validate(written, TOOLS).valid


async def test_rules_need_their_tool_in_the_kit():
    only_read = kit("read_file")
    provider = RulesProvider()
    assert await provider.generate("find all py files", ALL, only_read) is None
    assert await provider.generate("read the file a", ALL, only_read) is not None


async def test_rules_take_the_tools_from_the_config_not_the_prompt_text_when_it_gives_them():
    provider = RulesProvider()
    prompt_text = "find_files(pattern) -> list"
    assert await provider.generate("find all py files", prompt_text, kit("read_file")) is None
    assert await provider.generate("find all py files", "", kit("find_files")) is not None


async def test_a_rule_applies_when_its_tool_appears_in_the_namespace_description():
    """Seed 000, tier 1: called as the provider protocol documents it, with no config."""
    provider = RulesProvider()
    assert await provider.generate("find all py files", ALL) == "files = find_files('**/*.py')\nfiles"
    assert await provider.generate("read the file a.txt", ALL) == "content = read_file('a.txt')\ncontent"
    only_read = "read_file(path: str) -> str: read find_files"  # named, but not shown as a tool
    assert await provider.generate("find all py files", only_read) is None
    assert await provider.generate("find all py files", "") is None  # no tools, no rule


async def test_rule_values_are_literals_not_code():
    program = await RulesProvider().generate("read the file x'); import os; ('", ALL, kit(*TOOLS))
    assert validate(program, TOOLS).valid
    assert "import" in program and program.count("read_file(") == 1


async def test_no_rule_for_other_intents():
    assert await RulesProvider().generate("summarise the project", ALL, kit(*TOOLS)) is None


async def test_replay_answers_recorded_intents_for_the_same_tools(tmp_path):
    path = tmp_path / "replay.jsonl"
    record_generation(path, "Count the files", ["find_files"], "len(find_files('*'))", "ollama")
    record_generation(path, "count the files", ["find_files"], "len(find_files('**'))", "ollama")
    provider = ReplayProvider(path)
    assert provider.available()
    assert await provider.generate("count  the FILES", "", kit("find_files")) == "len(find_files('**'))"
    assert await provider.generate("count the files", "", kit(*TOOLS)) is None  # other tools
    assert await provider.generate("something else", "", kit("find_files")) is None


async def test_replay_skips_bad_lines(tmp_path):
    path = tmp_path / "replay.jsonl"
    path.write_text("not json\n" + json.dumps({"intent": "x", "tools": [], "program": "1"}) + "\n")
    provider = ReplayProvider(path)
    assert await provider.generate("x", "") == "1"
    assert provider.problems == [f"{path}, line 1: not a recording, skipped"]


def test_replay_unavailable_without_a_file(tmp_path):
    provider = ReplayProvider(tmp_path / "none.jsonl")
    assert not provider.available()
    assert "no recordings" in provider.unavailable_reason()


def test_prompt_has_tools_builtins_params_rules_and_examples():
    pool = [
        {"intent": "read the file a.txt", "code": "read_file('a.txt')", "tags": ["read"]},
        {"intent": "find python files", "code": "find_files('**/*.py')", "tags": ["glob"]},
        Example("unrelated", "1", []),
    ]
    prompt = build_system_prompt(ALL, "limit: int", intent="read the readme", example_pool=pool)
    assert "read_file(path: str) -> str" in prompt
    assert all(name in prompt for name in ALLOWED_BUILTINS)
    assert "limit: int" in prompt
    assert "no import" in prompt
    assert "Intent: read the file a.txt" in prompt
    assert "unrelated" not in prompt and "find python files" not in prompt


def test_prompt_interpreter_hint_replaces_the_framing():
    class Interpreter:
        def system_prompt_hint(self):
            return "You are a SQL-ish interpreter."

    prompt = build_system_prompt(ALL, interpreter=Interpreter())
    assert prompt.startswith("You are a SQL-ish interpreter.")
    assert "Jupyter cell" not in prompt


def test_select_examples_ranks_by_overlap_and_caps():
    pool = [Example(f"read file {i}", "x", []) for i in range(10)]
    pool.append(Example("read the whole file now", "y", ["file"]))
    chosen = select_examples("read the file now", pool, 3)
    assert len(chosen) == 3 and chosen[0].code == "y"
    assert select_examples("zzz", pool, 3) == []


def test_a_word_few_examples_share_outweighs_one_most_share():
    pool = [Example(f"show line {i} of log.txt", f"lines[{i}]") for i in range(5)]
    pool.append(Example("the final entry", "entries[-1]", ["last"]))
    assert select_examples("return the last line", pool, 1)[0].code == "entries[-1]"


def test_a_long_intent_chooses_examples_in_linear_time():
    pool = [Example("read the notes", "a")]
    for text in ("y" * 200_000, "a/" * 100_000, "a." * 100_000 + " notes"):
        assert len(select_examples(text, pool, 1)) == (1 if text.endswith("notes") else 0)


def test_file_names_and_stopwords_do_not_choose_examples():
    pool = [Example("sort the lines of names.txt", "a"), Example("what does it do", "b"),
            Example("the name column of table.csv", "c")]
    assert [e.code for e in select_examples("the names in people.csv: what does it have", pool, 3)] == [
        "c"]


def test_format_params_description():
    text = format_params_description({"n": 3, "path": {"value": "a", "description": "the file"}})
    assert text == "n: int\npath: str - the file"


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("```python\nx = 1\n```", "x = 1"),
        ("Here's the program:\n```\nx = 1\nx\n```\nThis reads x.", "x = 1\nx"),
        ("Here is the solution\nx = 1", "x = 1"),
        ("The following program works:\n\nx = 1", "x = 1"),
        ("x = 1", "x = 1"),
        ("   \n", ""),
        ("", ""),
        (None, ""),
        ("```py\nx = 1", "x = 1"),
    ],
)
def test_sanitize_output(raw, clean):
    assert sanitize_output(raw) == clean


@pytest.mark.parametrize(
    ("broken", "fixed"),
    [
        ("import os\nx = open('a.txt').read()\nx", "x = read_file('a.txt')\nx"),
        ("from pathlib import Path\nPath('a').read_text()", "read_file('a')"),
        ("x = read_file('a')\nprint(x)", "x = read_file('a')\nx"),
        ("if __name__ == '__main__':\n    x = read_file('a')\n    x", "x = read_file('a')\nx"),
    ],
)
def test_deterministic_cleanup(broken, fixed):
    assert deterministic_cleanup(broken, {"read_file"}) == fixed
    assert validate(fixed, {"read_file"}).valid


def test_cleanup_gives_up_when_it_cannot_help():
    assert deterministic_cleanup("x = 1", {"read_file"}) is None
    assert deterministic_cleanup("def (", {"read_file"}) is None
    assert deterministic_cleanup("open('a').read()", set()) is None


# --- prompts shared by the model providers -----------------------------------------------------------

def test_prompt_helpers():
    system = system_prompt_for("read a file", "read_file(path) -> str", {"params_desc": "path: str"})
    assert system.startswith(FRAMING) and "read_file(path) -> str" in system and "path: str" in system
    assert system_prompt_for("x", "tools", {"system_prompt": "GIVEN"}) == "GIVEN"
    assert user_message_for("read a file", None, None) == "Intent: read a file\nProgram:\n"
    retry = user_message_for("read a file", {"previous_program": "x = open('f')"}, ["open is not allowed"])
    assert retry.startswith("Intent: read a file\nThe previous program was rejected.")
    assert "Errors: open is not allowed" in retry and retry.endswith("Program:\n")
    pool = [{"intent": "read the file a.txt", "code": "read_file('a.txt')"}]
    fixer = fixer_prompt("read a file", "bad()", ["bad is unknown"], "read_file", {"example_pool": pool})
    assert fixer.user.startswith(FIXER_INSTRUCTION) and "read_file" in fixer.system
    # one text: the instruction comes after the examples, next to the program to repair
    text = fixer.completion
    assert 0 < text.index("Intent: read the file a.txt") < text.index(FIXER_INSTRUCTION)
    assert "bad()" in fixer.user and "Errors: bad is unknown" in fixer.user
