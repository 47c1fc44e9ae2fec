"""Grounding: a program's literals and operations come from the intent (issue 41).

End to end through the service, its dry runs and a real OpenAI client talking to a loopback
server; the checks themselves on programs a small model wrote.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lackpy_kernel.infer import Tryout, runtime_feedback
from lackpy_kernel.infer._grounding import operation_mismatches, ungrounded_literals
from lackpy_kernel.infer._tryout import literal_repair
from lackpy_kernel.service import LackpyService
from tests.support import loopback as lb

TODO = "buy milk\nwrite report\ncall Ada\n"
PATHS = ("todo.txt", "notes.txt", "src/util.py", "src/app.py", "docs/guide.md")


@pytest.fixture(autouse=True)
def _env(model_env):
    """No proxy or base-URL variable reaches the clients."""


def workspace_with(tmp_path: Path, url: str, **settings: object) -> Path:
    (tmp_path / "todo.txt").write_text(TODO)
    (tmp_path / "notes.txt").write_text("alpha\nbeta\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "util.py").write_text("def format_row(row):\n    return row\n")
    (tmp_path / "src" / "app.py").write_text("from util import format_row\n\n\ndef show(rows):\n"
                                             "    return [format_row(r) for r in rows]\n")
    (tmp_path / ".lackpy").mkdir()
    extra = "".join(f"{key} = {json.dumps(value)}\n" for key, value in settings.items())
    (tmp_path / ".lackpy" / "config.toml").write_text(
        '[inference]\norder = ["local"]\n\n[inference.providers.local]\nplugin = "openai"\n'
        f'base_url = "{url}/v1"\nmodel = "tiny"\nraw = true\nretry_delay = 0.01\n'
        f"request_timeout = 5\nmax_retries = 0\n{extra}\n[sandbox]\nenabled = false\n")
    return tmp_path


async def delegate(workspace: Path, intent: str) -> dict:
    with LackpyService(workspace) as service:
        return await service.delegate(intent, kit="debug")


def prompts(server) -> list[str]:
    return [lb.prompt_of(request) for request in server.requests]


async def test_a_name_copied_from_an_example_is_sent_back_once_with_the_intents_own(
        tmp_path, model_server):
    model_server.script(lb.openai_answer("[c['caller'] for c in find_callers('resolve_kit')]"),
                        lb.openai_answer("[c['caller'] for c in find_callers('format_row')]"))
    workspace = workspace_with(tmp_path, model_server.url, correction_rounds=2)
    result = await delegate(workspace, "which functions call format_row or helper")  # two candidates
    assert result["output"] == ["show"] and len(model_server.requests) == 2
    assert ("the program uses the name 'resolve_kit', which the intent does not name; "
            "the intent's own: 'format_row', 'helper'") in prompts(model_server)[1]


async def test_a_name_copied_from_an_example_with_one_candidate_is_repaired_without_a_model_call(
        tmp_path, model_server):
    model_server.script(lb.openai_answer("[c['caller'] for c in find_callers('resolve_kit')]"))
    workspace = workspace_with(tmp_path, model_server.url, correction_rounds=2)
    result = await delegate(workspace, "which functions call format_row")
    assert result["output"] == ["show"] and len(model_server.requests) == 1
    assert result["program"] == "[c['caller'] for c in find_callers('format_row')]"


async def test_a_right_program_is_left_alone(tmp_path, model_server):
    model_server.script(lb.openai_answer("len(read_file('todo.txt').split())"))
    workspace = workspace_with(tmp_path, model_server.url, correction_rounds=2)
    result = await delegate(workspace, "how many words are in todo.txt")
    assert result["output"] == 6 and len(model_server.requests) == 1


async def test_counting_lines_where_the_intent_counts_words_is_sent_back(tmp_path, model_server):
    model_server.script(lb.openai_answer("len(read_file('todo.txt').splitlines())"),  # 3: lines
                        lb.openai_answer("len(read_file('todo.txt').split())"))
    workspace = workspace_with(tmp_path, model_server.url, correction_rounds=2)
    result = await delegate(workspace, "how many words are in todo.txt")
    assert result["output"] == 6 and len(model_server.requests) == 2
    assert ("the intent asks to count words, but the program counts lines (.splitlines()); "
            "len(text.split()) is the number of words") in prompts(model_server)[1]


async def test_an_ungrounded_literal_is_sent_back_only_once(tmp_path, model_server):
    copied = "[line for line in read_file('todo.txt').splitlines() if 'TODO' in line]"
    model_server.script(lb.openai_answer(copied), lb.openai_answer(copied + "  # again"))
    workspace = workspace_with(tmp_path, model_server.url, correction_rounds=3)
    await delegate(workspace, "which lines of todo.txt mention milk or report")  # two candidates
    assert len(model_server.requests) == 2  # the round left over is not spent on it again


@pytest.mark.parametrize(("intent", "program", "literal", "candidates"), [
    ("in which file is slugify defined", "[d['file'] for d in find_definitions('Config')]", "Config",
     ("slugify",)),
    ("how many lines does src/app.py have", "len(read_file('team.txt').splitlines())", "team.txt",
     ("src/app.py",)),
    ("which files mention the word parser", "[p for p in find_files('**/*') if 'TODO' in read_file(p)]",
     "TODO", ("parser",)),
    ("count the lines of todo.txt with 'milk'",
     "len([x for x in read_file('todo.txt').splitlines() if x.startswith('error')])", "error", ("milk",)),
    ("list every python file", "find_files('src/**/*.py')", "src", ("**/*.py",)),
    ("list the markdown files", "find_files('**/*.txt')", "txt", ("**/*.md",)),
])
def test_a_literal_the_intent_does_not_name_comes_with_the_intents_candidates(
        intent, program, literal, candidates):
    found = ungrounded_literals(intent, program, PATHS)
    assert [(item.literal, item.candidates) for item in found] == [(literal, candidates)]


@pytest.mark.parametrize(("intent", "program"), [
    ("which functions call format_row", "[c['caller'] for c in find_callers('format_row')]"),
    ("show me src/util.py", "read_file('src/util.py')"),
    ("what's in the todo file", "read_file('todo.txt')"),  # its name, without the extension
    ("the python files under src", "find_files('src/**/*.py')"),
    ("which files mention main?", "[p for p in find_files('**/*.py') if 'main' in read_file(p)]"),
    ("count the functions in src/util.py",
     "len([x for x in read_file('src/util.py').splitlines() if x.startswith('def ')])"),
    ("join the lines of todo.txt with semicolons", "';'.join(read_file('todo.txt').splitlines())"),
])
def test_literals_from_the_intent_or_the_workspace_pass(intent, program):
    assert ungrounded_literals(intent, program, PATHS) == []
    assert operation_mismatches(intent, program) == []


@pytest.mark.parametrize(("intent", "program", "said"), [
    ("how many lines does README.md have", "len(read_file('README.md'))", "count lines"),
    ("number of characters in notes.txt", "len(read_file('notes.txt').splitlines())",
     "count characters"),
    ("the lines of notes.txt in upper case", "[x.lower() for x in read_file('notes.txt').splitlines()]",
     "make the text upper case"),
    ("the first line of notes.txt", "read_file('notes.txt').splitlines()[-1]", "take the first"),
    ("the last 2 lines of notes.txt", "read_file('notes.txt').splitlines()[:2]", "take the last"),
    ("the shortest line of notes.txt", "max(read_file('notes.txt').splitlines(), key=len)",
     "find the shortest"),
])
def test_an_operation_other_than_the_intent_names_is_named(intent, program, said):
    messages = operation_mismatches(intent, program)
    assert len(messages) == 1 and messages[0].startswith(f"the intent asks to {said}")


def test_each_grounding_check_is_its_own_and_can_be_left_out():
    ran = Tryout(True, output=3, paths=PATHS)
    program = "len(read_file('todo.txt').splitlines())"
    assert runtime_feedback("how many words are in todo.txt", ran, program=program)[0].startswith(
        "the intent asks to count words")
    assert runtime_feedback("how many words are in todo.txt", ran, program=program,
                            checks={"words", "number"}) == []


RAN = Tryout(True, output=[], paths=PATHS)


@pytest.mark.parametrize(("intent", "program", "repaired"), [
    ("which functions call format_row", "[c['caller'] for c in find_callers('resolve_kit')]",
     "[c['caller'] for c in find_callers('format_row')]"),
    ("how many lines does src/app.py have", "len(read_file('team.txt').splitlines())",
     "len(read_file('src/app.py').splitlines())"),
    ("which files mention the word parser", "[p for p in find_files('**/*') if 'TODO' in read_file(p)]",
     "[p for p in find_files('**/*') if 'parser' in read_file(p)]"),
    ("list every python file", "find_files('src/**/*.py')", "find_files('**/*.py')"),
    ("list the markdown files", "find_files('**/*.txt')", "find_files('**/*.md')"),
])
def test_a_copied_literal_with_one_candidate_is_repaired_without_a_model_call(intent, program, repaired):
    repair = literal_repair(intent, program, RAN)
    assert repair is not None and repair[0] == repaired
    assert literal_repair(intent, repair[0], RAN) is None  # and then left alone


@pytest.mark.parametrize(("intent", "program"), [
    ("which functions call format_row", "[c['caller'] for c in find_callers('format_row')]"),
    ("how many lines does src/app.py have", "len(read_file('src/app.py').splitlines())"),
    ("the python files under src", "find_files('src/**/*.py')"),
    ("join the lines of todo.txt with semicolons", "';'.join(read_file('todo.txt').splitlines())"),
])
def test_a_right_program_is_not_repaired(intent, program):
    assert literal_repair(intent, program, RAN) is None


@pytest.mark.parametrize(("intent", "program"), [
    # two candidates: sent back with them, as before
    ("which functions call format_row or helper", "[c['caller'] for c in find_callers('resolve_kit')]"),
    ("how many lines do src/app.py and src/util.py have", "len(read_file('team.txt').splitlines())"),
    # one candidate, but not sure: a file the workspace lacks; the model's spelling of a typo
    ("how many lines does src/aap.py have", "len(read_file('team.txt').splitlines())"),
    ("who calls fromat_row", "[c['caller'] for c in find_callers('format_row')]"),
    # a folder the intent does not name, where it names another: '**/*.py' would look everywhere
    ("list the python files in src", "find_files('docs/**/*.py')"),
])
def test_a_literal_without_one_sure_candidate_is_sent_back_not_repaired(intent, program):
    assert ungrounded_literals(intent, program, PATHS)
    assert literal_repair(intent, program, RAN) is None


def test_a_program_not_run_is_not_repaired():
    skipped = Tryout(True, paths=PATHS, skipped="it calls a tool that cannot be staged")
    assert literal_repair("which functions call format_row",
                          "[c['caller'] for c in find_callers('resolve_kit')]", skipped) is None
