"""Generation that checks its work: a model's valid program is dry-run before it is returned;
a run-time failure or a wrong shape goes back to the model with what would fix it; ``samples``
picks among programs by what they do. Real service, real OpenAI client, loopback server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lackpy_kernel.errors import GenerationError
from lackpy_kernel.infer import InferenceDispatcher, Tryout, runtime_feedback
from lackpy_kernel.infer._tryout import (
    ToolCallSeen,
    absent_folders,
    meant_path,
    nearest_paths,
    path_repair,
    shape_repair,
    unasked_needles,
)
from lackpy_kernel.service import LackpyService
from tests.support import loopback as lb

NOTES = "alpha\nbeta\ngamma\n"


@pytest.fixture(autouse=True)
def _env(model_env):
    """No proxy or base-URL variable reaches the clients."""


def workspace_with(tmp_path: Path, url: str, *, sandbox: bool = False, raw: bool = True,
                   **settings: object) -> Path:
    (tmp_path / "notes.txt").write_text(NOTES)
    (tmp_path / "todo.txt").write_text("buy milk\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "util.py").write_text("def helper():\n    return 1\n")
    (tmp_path / ".lackpy").mkdir()
    extra = "".join(f"{key} = {json.dumps(value)}\n" for key, value in settings.items())
    (tmp_path / ".lackpy" / "config.toml").write_text(
        '[inference]\norder = ["local"]\n\n[inference.providers.local]\nplugin = "openai"\n'
        f'base_url = "{url}/v1"\nmodel = "tiny"\nraw = {str(raw).lower()}\nretry_delay = 0.01\n'
        f"request_timeout = 5\nmax_retries = 0\n{extra}"
        f"\n[sandbox]\nenabled = {str(sandbox).lower()}\n")
    return tmp_path


async def delegate(workspace: Path, intent: str, kit: object = "debug") -> dict:
    with LackpyService(workspace) as service:
        return await service.delegate(intent, kit=kit)


def prompts(server) -> list[str]:
    return [lb.prompt_of(request) for request in server.requests]


@pytest.mark.parametrize("raw", [True, False], ids=["completion", "chat"])
async def test_a_missing_file_goes_back_with_the_nearest_workspace_paths(tmp_path, model_server, raw):
    model_server.script(lb.openai_answer("read_file('txt.txt').splitlines()"),
                        lb.openai_answer("read_file('notes.txt').splitlines()"))
    workspace = workspace_with(tmp_path, model_server.url, raw=raw)
    result = await delegate(workspace, "return the lines of the text file")
    assert result["success"] and result["output"] == ["alpha", "beta", "gamma"]
    assert result["correction_strategy"] == "feedback"
    assert len(model_server.requests) == 2
    path = "/v1/completions" if raw else "/v1/chat/completions"
    assert [request.path for request in model_server.requests] == [path, path]
    second = prompts(model_server)[1]
    assert "no file 'txt.txt' in the workspace" in second
    assert "nearest 'txt.txt': todo.txt, notes.txt, src/util.py" in second
    assert "read_file('txt.txt')" in second  # the program that failed is shown


@pytest.mark.parametrize("rounds", [0, 2])
async def test_a_file_name_in_the_wrong_case_is_repaired_without_a_model_call(
        tmp_path, model_server, rounds):
    model_server.script(lb.openai_answer("lines = read_file('NOTES.txt').splitlines()\nlen(lines)"))
    workspace = workspace_with(tmp_path, model_server.url, correction_rounds=rounds)
    with LackpyService(workspace) as service:
        generated = await service.generate("how many lines are in NOTES.txt", kit="debug")
    assert len(model_server.requests) == 1
    assert generated.program == "lines = read_file('notes.txt').splitlines()\nlen(lines)"
    assert generated.correction_strategy == "repair" and generated.dry_run.output == 3
    assert [entry["did"] for entry in generated.attempts_log if entry["step"] == "repair"] == [
        "read 'notes.txt' for the missing 'NOTES.txt', the only workspace file it can mean"]


async def test_a_text_where_the_intent_asks_how_many_lines_is_fed_back_once(tmp_path, model_server):
    text = "read_file('notes.txt')"  # its length would be characters, not lines: not repaired
    model_server.script(lb.openai_answer(text), lb.openai_answer(text + "\n"),
                        lb.openai_answer("len(read_file('notes.txt').splitlines())"))
    workspace = workspace_with(tmp_path, model_server.url, correction_rounds=3)
    result = await delegate(workspace, "how many lines are in notes.txt")
    assert "the intent asks for a number, but the program returned str 'alpha" in prompts(model_server)[1]
    # told once: the second text is not sent back again, and the round left over is not spent
    assert len(model_server.requests) == 2
    assert result["output"] == NOTES


@pytest.mark.parametrize(("intent", "program", "repaired", "output"), [
    ("how many lines are in notes.txt", "lines = read_file('notes.txt').splitlines()\nlines",
     "lines = read_file('notes.txt').splitlines()\nlen(lines)", 3),
    ("how many characters are in notes.txt", "read_file('notes.txt')",
     "len(read_file('notes.txt'))", len(NOTES)),
    ("return the last line of notes.txt", "read_file('notes.txt').splitlines()  # all",
     "read_file('notes.txt').splitlines()[-1]  # all", "gamma"),
    ("return the first line of notes.txt", "lines = read_file('notes.txt').splitlines()\nlines[:2]",
     "lines = read_file('notes.txt').splitlines()\nlines[0]", "alpha"),  # not lines[:2][0]
    ("return the longest line of notes.txt", "read_file('notes.txt').splitlines()",
     "max(read_file('notes.txt').splitlines(), key=len)", "alpha"),
    ("return the first 2 lines of notes.txt", "lines = read_file('notes.txt').splitlines()\nlines",
     "lines = read_file('notes.txt').splitlines()\nlines[:2]", ["alpha", "beta"]),
    ("return the last two lines of notes.txt", "read_file('notes.txt').split() + []",
     "(read_file('notes.txt').split() + [])[-2:]", ["beta", "gamma"]),
])
async def test_an_answer_whose_value_says_how_to_make_it_the_shape_asked_is_repaired_without_a_model_call(
        tmp_path, model_server, intent, program, repaired, output):
    model_server.script(lb.openai_answer(program))
    workspace = workspace_with(tmp_path, model_server.url, correction_rounds=2)
    with LackpyService(workspace) as service:
        generated = await service.generate(intent, kit="debug")
    assert len(model_server.requests) == 1
    assert generated.program == repaired and generated.dry_run.output == output
    assert generated.correction_strategy == "repair"
    [did] = [entry["did"] for entry in generated.attempts_log if entry["step"] == "repair"]
    assert did.startswith("made the answer ") and "without a model call" in did


@pytest.mark.parametrize(("intent", "program", "tryout"), [
    ("how many lines are in notes.txt", "read_file('notes.txt')", Tryout(True, output=NOTES)),
    ("return the third line of notes.txt", "lines", Tryout(True, output=["alpha"])),
    ("return the longest line of notes.txt", "sizes", Tryout(True, output=[1, 2])),
    ("does notes.txt contain beta", "len(text)", Tryout(True, output=3)),
    ("which lines mention beta", "len(lines)", Tryout(True, output=3)),
    ("how many files are there", "files = find_files('*')", Tryout(True, output=["a"])),
    ("how many files are there", "find_files('*')", Tryout(False, error="boom")),
    ("how many files are there", "len(find_files('*'))", Tryout(True, output=1)),
])
def test_no_shape_repair_where_the_value_does_not_say_how(intent, program, tryout):
    assert shape_repair(intent, program, tryout) is None


async def test_a_file_the_intent_names_and_the_program_never_reads_is_fed_back_then_the_shape(
        tmp_path, model_server):
    model_server.script(lb.openai_answer("len(find_files('**/*.txt'))"),  # 2: notes.txt unread
                        lb.openai_answer("read_file('notes.txt')"),  # text, not a number of lines
                        lb.openai_answer("len(read_file('notes.txt').splitlines())"))
    workspace = workspace_with(tmp_path, model_server.url, correction_rounds=2)
    result = await delegate(workspace, "how many lines are in notes.txt")
    assert result["output"] == 3 and len(model_server.requests) == 3
    second, third = prompts(model_server)[1:]
    assert ("the intent names 'notes.txt', but the program never reads it; "
            "read_file('notes.txt') gives its text") in second
    assert "the intent asks for a number, but the program returned str 'alpha" in third


def test_the_named_file_check_knows_workspace_files_by_path_or_bare_name():
    paths = ("notes.txt", "data/people.csv")
    ran = Tryout(True, output=1, calls=(ToolCallSeen("find_files('data/*')", ["data/people.csv"]),),
                 paths=paths)
    assert runtime_feedback("rows of people.csv", ran, program="len(find_files('x'))") == [
        "the intent names 'people.csv', but the program never reads it; "
        "read_file('data/people.csv') gives its text"]
    assert runtime_feedback("rows of people.csv", ran, program="read_file('people.csv')") == []
    assert runtime_feedback("lines of report.txt", ran, program="1") == []  # no such file
    assert runtime_feedback("lines of notes.txt", ran, program="1") == [
        "the intent names 'notes.txt', but the program never reads it; "
        "read_file('notes.txt') gives its text"]
    assert runtime_feedback("lines of notes.txt", ran, program="1", checks={"number"}) == []


async def test_a_failure_in_a_later_statement_carries_what_the_tools_returned(tmp_path, model_server):
    model_server.script(
        lb.openai_answer("found = find_definitions('helper')\nfound[0]['path']"),
        lb.openai_answer("found = find_definitions('helper')\nfound[0]['file']"))
    workspace = workspace_with(tmp_path, model_server.url)
    result = await delegate(workspace, "which file defines helper")
    assert result["output"] == "src/util.py"
    assert len(model_server.requests) == 2
    second = prompts(model_server)[1]
    assert "KeyError: 'path'" in second
    assert "there is no key 'path'; the keys are: 'file', 'kind', 'line', 'name'" in second


async def test_an_index_error_after_a_tool_call_goes_back_with_what_the_tool_returned(
        tmp_path, model_server):
    model_server.script(
        lb.openai_answer("lines = read_file('notes.txt').splitlines()\nlines[3]"),
        lb.openai_answer("lines = read_file('notes.txt').splitlines()\nlines[-1]"))
    workspace = workspace_with(tmp_path, model_server.url)
    result = await delegate(workspace, "return the last line of notes.txt")
    assert result["output"] == "gamma" and result["correction_strategy"] == "feedback"
    assert len(model_server.requests) == 2
    second = prompts(model_server)[1]
    assert "IndexError: list index out of range" in second
    assert "the tools returned: read_file('notes.txt') -> 'alpha\\nbeta\\ngamma\\n'" in second


@pytest.mark.parametrize("rounds", [0, 2])
async def test_the_rounds_bound_the_calls_even_when_every_program_fails(tmp_path, rounds):
    with lb.LoopbackServer(default=lb.openai_answer("read_file('nope.txt')")) as server:
        workspace = workspace_with(tmp_path, server.url, correction_rounds=rounds)
        result = await delegate(workspace, "read the missing file")
        assert len(server.requests) == 1 + rounds  # the first call and the rounds, no more
    assert result["program"] == "read_file('nope.txt')"  # valid, and the log says it failed
    assert not result["success"]


async def test_at_temperature_0_the_same_failing_program_is_not_asked_about_twice(tmp_path):
    with lb.LoopbackServer(default=lb.openai_answer("read_file('nope.txt')")) as server:
        workspace = workspace_with(tmp_path, server.url, correction_rounds=3, temperature=0)
        with LackpyService(workspace) as service:
            generated = await service.generate("read the missing file", kit="debug")
        assert len(server.requests) == 2  # the first call and one round: the second prompt repeats it
        assert lb.prompt_of(server.requests[1]).count("no file 'nope.txt'") == 1
    assert generated.attempts_log[-1]["did"] == (
        "not asked again: it wrote the program that failed, and at temperature 0 the same "
        "question gets the same answer")


async def test_at_temperature_0_a_different_failing_program_is_still_fed_back(tmp_path, model_server):
    model_server.script(*(lb.openai_answer(f"read_file('nope{n}.txt')") for n in range(4)))
    workspace = workspace_with(tmp_path, model_server.url, correction_rounds=3, temperature=0)
    await delegate(workspace, "read the missing file")
    assert len(model_server.requests) == 4
    assert "no file 'nope2.txt'" in prompts(model_server)[3]


async def test_samples_and_rounds_bound_the_calls_together(tmp_path):
    with lb.LoopbackServer(default=lb.openai_answer("read_file('nope.txt')")) as server:
        workspace = workspace_with(tmp_path, server.url, samples=3, correction_rounds=1)
        with LackpyService(workspace) as service:
            generated = await service.generate("read the missing file", kit="debug")
        assert len(server.requests) == 4  # samples + correction_rounds
    did = [entry["did"] for entry in generated.attempts_log if entry["step"] == "samples"]
    assert did == ["asked for 3: 3 valid, 0 passed their dry run; groups by output: none"]


async def test_samples_return_the_shortest_program_of_the_largest_group(tmp_path, model_server):
    model_server.script(
        lb.openai_answer("read_file('nope.txt')"),  # fails: dropped
        lb.openai_answer("len(read_file('notes.txt'))"),  # counts characters: the operation check
        lb.openai_answer("lines = read_file('notes.txt').splitlines()\nlen(lines)"),  # 3
        lb.openai_answer("len(read_file('notes.txt').splitlines())"),  # 3, the shortest of the two
        lb.openai_answer("while True:\n    1"))  # not valid
    workspace = workspace_with(tmp_path, model_server.url, samples=5, temperature=0.8)
    events = []
    with LackpyService(workspace) as service:
        generated = await service.generate("how many lines are in notes.txt", kit="debug",
                                           on_event=events.append)
    assert generated.program == "len(read_file('notes.txt').splitlines())"
    assert generated.correction_strategy == "samples"
    assert len(model_server.requests) == 5
    assert all(request.json["temperature"] == 0.8 for request in model_server.requests)
    shown = [event.did for event in events if getattr(event, "step", "") == "samples"]
    assert shown == ["asked for 5: 4 valid, 2 passed their dry run; groups by output: 2"]
    assert generated.dry_run is not None and generated.dry_run.output == 3


async def test_dry_run_false_returns_the_first_valid_program_unrun(tmp_path, model_server):
    model_server.script(lb.openai_answer("read_file('txt.txt')"))
    workspace = workspace_with(tmp_path, model_server.url, dry_run=False)
    with LackpyService(workspace) as service:
        generated = await service.generate("read the text file", kit="debug")
    assert generated.program == "read_file('txt.txt')" and generated.dry_run is None
    assert len(model_server.requests) == 1


@pytest.mark.parametrize(("key", "value", "message"), [
    ("samples", 0, "samples must be >= 1"), ("dry_run", "yes", "dry_run must be true or false")])
async def test_bad_settings_name_the_key(tmp_path, key, value, message):
    workspace = workspace_with(tmp_path, "http://127.0.0.1:9", **{key: value})
    with LackpyService(workspace) as service:
        listing = {p["name"]: p["reason"] for p in service.providers_list()}
    assert message in listing["local"]


async def test_a_program_reading_a_session_variable_is_not_dry_run(tmp_path, model_server):
    model_server.script(lb.openai_answer("len(rows)"))
    workspace = workspace_with(tmp_path, model_server.url)
    from lackpy_kernel.service import NotebookContext

    context = NotebookContext(names=frozenset({"rows"}), description="rows: list (3 items)")
    with LackpyService(workspace) as service:
        generated = await service.generate("how many rows", kit="debug", context=context)
    assert generated.dry_run is not None
    assert generated.dry_run.skipped == "it reads the notebook variable rows, held by the session"


def test_feedback_for_a_missing_file_lists_the_nearest_paths_and_the_tools_results():
    tryout = Tryout(False, error="FileNotFoundError: no file 'names.txt' in the workspace",
                    calls=(ToolCallSeen("find_files('*.txt')", ["notes.txt", "todo.txt"]),),
                    paths=("notes.txt", "todo.txt", "src/util.py", "data/names.csv"))
    errors = runtime_feedback("read the names", tryout)
    assert errors[0].startswith("the program ran and failed: FileNotFoundError")
    assert errors[1] == ("files in the workspace nearest 'names.txt': data/names.csv, notes.txt, "
                         "todo.txt, src/util.py")
    assert errors[2] == "the tools returned: find_files('*.txt') -> ['notes.txt', 'todo.txt']"


def test_nearest_paths_prefers_the_same_file_name_in_another_folder():
    assert nearest_paths("people.csv", ["notes.txt", "data/people.csv", "peep.py"])[0] == \
        "data/people.csv"


def test_a_missing_file_is_repaired_only_where_one_workspace_file_is_meant():
    paths = ("ABOUT.md", "data/people.csv", "docs/guide.md", "old/guide.md")
    assert meant_path("about.md", paths) == "ABOUT.md"
    assert meant_path("People.csv", paths) == "data/people.csv"  # a bare name, in a folder
    assert meant_path("guide.md", paths) is None  # two files of that name
    assert meant_path("other/people.csv", paths) is None  # a folder given is not moved
    failed = Tryout(False, error="FileNotFoundError: no file 'about.md' in the workspace", paths=paths)
    program = "# the intro\ntext = read_file('about.md')  # keep\nlen(text)"
    assert path_repair(program, failed) == (
        "# the intro\ntext = read_file('ABOUT.md')  # keep\nlen(text)",
        "read 'ABOUT.md' for the missing 'about.md', the only workspace file it can mean")
    assert path_repair("name = 'about'\nread_file(name + '.md')", failed) is None  # no literal
    other = Tryout(False, error="IndexError: list index out of range", paths=paths)
    assert path_repair(program, other) is None


def test_a_number_passes_the_shape_check_and_a_bool_does_not():
    assert runtime_feedback("how many files", Tryout(True, output=3)) == []
    assert runtime_feedback("count the files", Tryout(True, output=True))
    assert runtime_feedback("list the files", Tryout(True, output=["a"])) == []


async def test_without_a_tryout_the_dispatcher_runs_nothing():
    class Model:
        name, kind = "m", "model"
        calls = 0

        def available(self):
            return True

        async def generate(self, intent, namespace_desc, config=None, error_feedback=None):
            Model.calls += 1
            return "read_file('x')"

    result = await InferenceDispatcher([Model()]).generate("read x", "", {"read_file"})
    assert result.dry_run is None and Model.calls == 1


def test_only_effects_that_can_be_staged_are_dry_run(tmp_path):
    from lackpy_kernel.infer import not_dry_runnable
    from lackpy_kernel.kit import ToolSpec, builtin_toolbox, resolve_kit

    toolbox = builtin_toolbox(tmp_path)
    toolbox.register_tool(ToolSpec(name="post_issue", provider="inline", grade_w=3), fn=len)
    toolbox.register_tool(ToolSpec(name="lookup", provider="inline", grade_w=1), fn=len)
    kit = resolve_kit(["read_file", "write_file", "post_issue", "lookup"], toolbox)
    assert not_dry_runnable(["read_file", "write_file", "lookup"], kit, sandboxed=True) is None
    assert not_dry_runnable(["post_issue"], kit, sandboxed=True) == (
        "it calls post_issue, which acts outside the sandbox and cannot be staged")
    assert not_dry_runnable(["write_file"], kit, sandboxed=False) == (
        "it calls write_file, which may change things, and programs run without the sandbox")
    assert not_dry_runnable(["read_file", "lookup"], kit, sandboxed=False) is None


@pytest.mark.parametrize("raw", [True, False], ids=["completion", "chat"])
async def test_an_empty_reply_is_asked_again_saying_so(tmp_path, model_server, raw):
    model_server.script(lb.openai_answer(""), lb.openai_answer("len(read_file('notes.txt'))"))
    workspace = workspace_with(tmp_path, model_server.url, raw=raw, correction_rounds=1)
    result = await delegate(workspace, "how many characters are in notes.txt")
    assert result["output"] == len(NOTES) and result["correction_strategy"] == "retry"
    assert len(model_server.requests) == 2
    assert "The previous reply was not a program." in prompts(model_server)[1]


async def test_empty_replies_cost_no_more_calls_than_the_rounds(tmp_path):
    with lb.LoopbackServer(default=lb.openai_answer("")) as server:
        workspace = workspace_with(tmp_path, server.url, correction_rounds=2)
        with LackpyService(workspace) as service:
            with pytest.raises(GenerationError, match="invalid program after correction"):
                await service.generate("read the notes", kit="debug")
        assert len(server.requests) == 3


@pytest.mark.parametrize(("intent", "output", "wanted"), [
    ("does notes.txt mention beta", 1, "yes or no"),
    ("is the word TODO in plan.md", "TODO", "yes or no"),
    ("which lines of notes.txt hold an a", True, "the items that match"),
    ("list the files under docs", 2, "the items that match"),
    ("return the last line of notes.txt", ["alpha", "beta"], "one item"),
    ("the header row of table.csv", ("name", "age"), "one item"),
    ("return the length of the longest word", "epsilon", "a number"),
    ("return the first 3 lines of notes.txt", ["a", "b", "c", "d"], "at most 3 items"),
    ("the top five files by size", "a.txt", "at most five items"),
])
def test_an_answer_of_the_wrong_shape_is_named(intent, output, wanted):
    errors = runtime_feedback(intent, Tryout(True, output=output))
    assert errors and errors[0].startswith(f"the intent asks for {wanted}, but the program returned "
                                           f"{type(output).__name__}")


@pytest.mark.parametrize(("intent", "output"), [
    ("does notes.txt mention beta", False),
    ("which file defines User", "src/models.py"),
    ("which lines hold an a", []),
    ("return the first 3 lines of notes.txt", ["a", "b", "c"]),  # plural: a list is right
    ("the last ten lines of a short file", ["a", "b"]),  # fewer: the file may have fewer
    ("return the last line of notes.txt", "gamma"),
    ("return the words of the first line of todo.txt", ["buy", "milk"]),  # parts of the one line
    ("show the lines of notes.txt", 3),  # asks for no particular shape
])
def test_an_answer_of_the_right_shape_passes(intent, output):
    assert runtime_feedback(intent, Tryout(True, output=output)) == []


async def test_a_yes_no_question_answered_with_a_number_is_fed_back_once(tmp_path, model_server):
    counting = "len(read_file('notes.txt').splitlines())"
    model_server.script(lb.openai_answer(counting), lb.openai_answer(counting + "\n"),
                        lb.openai_answer("'beta' in read_file('notes.txt')"))
    workspace = workspace_with(tmp_path, model_server.url, correction_rounds=3)
    result = await delegate(workspace, "does notes.txt contain the word beta")
    assert ("the intent asks for yes or no, but the program returned int 3; return True or False"
            in prompts(model_server)[1])
    assert len(model_server.requests) == 2  # told once; the same shape again is kept, not re-asked
    assert result["output"] == 3


async def test_a_text_where_the_intent_asks_for_the_first_lines_goes_back_once_with_the_slice_to_take(
        tmp_path, model_server):
    every = "read_file('notes.txt')"
    model_server.script(lb.openai_answer(every), lb.openai_answer(every + "\n"))
    workspace = workspace_with(tmp_path, model_server.url, correction_rounds=2)
    result = await delegate(workspace, "return the first 2 lines of notes.txt")
    assert ("the intent asks for at most 2 items, but the program returned str 'alpha\\nbeta\\ngamma\\n'; "
            "return a list of them, a slice such as items[:2]" in prompts(model_server)[1])
    assert len(model_server.requests) == 2 and result["output"] == NOTES


async def test_when_no_round_passes_the_last_program_that_ran_is_kept_over_one_that_failed(
        tmp_path, model_server):
    model_server.script(lb.openai_answer("len(read_file('notes.txt'))"),  # ran: a number, not a bool
                        # fails: no line 100 (a missing file the intent names another of is repaired)
                        lb.openai_answer("'beta' in read_file('notes.txt').splitlines()[99]"))
    workspace = workspace_with(tmp_path, model_server.url, correction_rounds=1)
    with LackpyService(workspace) as service:
        generated = await service.generate("does notes.txt contain the word beta", kit="debug")
    assert len(model_server.requests) == 2
    assert generated.program == "len(read_file('notes.txt'))"
    assert generated.attempts_log[-1]["did"] == "kept the last program that ran to its end"


@pytest.mark.parametrize(("intent", "program", "unasked"), [
    ("return the lines of ABOUT.md that start with #",
     "[line for line in read_file('ABOUT.md').splitlines() if 'about' in line]", ["about"]),
    ("join the lines of notes.txt with commas", "[x for x in lines if 'note' not in x]", ["note"]),
    ("count the a's in notes.txt", "read_file('notes.txt').count('TODO')", ["TODO"]),
    ("which lines begin with an error", "[x for x in lines if x.startswith('ERROR: ')]", []),
    ("which lines of todo.txt contain the word bug", "[x for x in lines if 'bug' in x]", []),
    ("which files are tests", "[p for p in paths if 'test' in p]", []),  # part of a word
    ("which lines start with #", "[x for x in lines if x.startswith('#')]", []),  # no letters
    ("count the a's in notes.txt", "read_file('notes.txt').count('a')", []),  # one letter
    ("split notes.txt at commas", "read_file('notes.txt').split('note')", []),  # not a search
    ("which file defines the class User", "find_callers('Config')", ["Config"]),  # a tool's name
    ("write hello to a.txt", "write_file(name, 'hello')\nwrite_file('a.txt', 'bye')", []),  # not a name
    ("which functions call read_settings", "find_callers('read_settings')", []),
    ("how many files are in the tests folder", "len(find_files('tests/**/*.py'))", []),  # a type
])
def test_the_words_a_program_looks_for_come_from_the_intent(intent, program, unasked):
    assert unasked_needles(intent, program) == unasked


async def test_the_words_check_is_fed_back_once_and_a_second_such_program_is_kept(tmp_path, model_server):
    model_server.script(lb.openai_answer("read_file('notes.txt').count('TODO')"),
                        lb.openai_answer("read_file('notes.txt').count('FIXME')"))
    workspace = workspace_with(tmp_path, model_server.url, correction_rounds=3)
    result = await delegate(workspace, "count the letter a in notes.txt")
    assert len(model_server.requests) == 2 and result["output"] == 0
    assert "looks for 'TODO'" in prompts(model_server)[1]


def test_a_pattern_looking_in_a_folder_the_workspace_lacks_is_named():
    paths = ["src/app.py", "src/lib/util.py", "notes.txt"]
    assert absent_folders("find_files('config/**/*.py')", paths) == ["config"]
    assert absent_folders("find_files('src/lib/*.py') + find_files('src/*.py')", paths) == []
    assert absent_folders("find_files('**/*.py') + find_files('*.txt')", paths) == []
    assert absent_folders("find_files('src/old/**/*.py')", paths) == ["src/old"]
    assert absent_folders("'x/*' in read_file('notes.txt')", paths) == []  # a tool's patterns only


@pytest.mark.parametrize(("intent", "first", "second", "output", "told"), [
    ("return the last line of notes.txt",  # an empty list: no item to take without the model
     "[line for line in read_file('notes.txt').splitlines() if 'x' in line]",
     "lines = read_file('notes.txt').splitlines()\nlines[-1]", "gamma",
     "the intent asks for one item, but the program returned list []"),
    ("join the lines of notes.txt with commas",
     "lines = read_file('notes.txt').splitlines()\n[line for line in lines if 'note' not in line]",
     "','.join(read_file('notes.txt').splitlines())", "alpha,beta,gamma",
     "the program looks for 'note', which the intent does not mention; look for what the intent asks about"),
    ("list the python files in src", "find_files('config/**/*.py')", "find_files('src/**/*.py')",
     ["src/util.py"],
     "the program looks in the folder 'config', which the workspace does not have; its folders: src"),
])
async def test_an_answer_check_goes_back_to_the_model_with_what_would_fix_it(
        tmp_path, model_server, intent, first, second, output, told):
    model_server.script(lb.openai_answer(first), lb.openai_answer(second))
    workspace = workspace_with(tmp_path, model_server.url)
    result = await delegate(workspace, intent)
    assert result["output"] == output and result["correction_strategy"] == "feedback"
    assert len(model_server.requests) == 2 and told in prompts(model_server)[1]
