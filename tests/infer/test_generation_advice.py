"""When no tier writes a program, the error says what to do (issue 42, items 2 and 7).

Real tiers: templates on disk, the rules, recordings, and model tiers that are down (a closed port)
or answer with what is not a program (a loopback server).
"""

from __future__ import annotations

import pickle

import pytest

from lackpy_kernel.errors import GenerationError
from lackpy_kernel.infer import (
    CorrectionStep,
    InferenceDispatcher,
    ProviderFailed,
    ReplayProvider,
    RulesProvider,
    TemplatesProvider,
    build_provider,
    failure_text,
    next_step,
    record_generation,
)
from lackpy_kernel.infer.models import GenerationSettings, OpenAIProvider, RetryPolicy
from lackpy_kernel.infer.tiers import format_template
from tests.support import loopback as lb

TOOLS = "read_file(path: str) -> str: read a text file\nfind_files(pattern: str) -> list: files"
KIT = {"read_file", "find_files"}
DEFS = "content = read_file('notes.txt')\nfind_definitions('main')"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
                "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)


def templates(tmp_path, **programs: tuple[str, str]) -> TemplatesProvider:
    folder = tmp_path / "templates"
    folder.mkdir(exist_ok=True)
    for name, (pattern, program) in programs.items():
        (folder / f"{name}.tmpl").write_text(format_template(name, pattern, program))
    return TemplatesProvider(folder)


def openai_at(url: str) -> OpenAIProvider:
    policy = RetryPolicy(retry_delay=0.001, request_timeout=5.0, stream_idle_timeout=5.0, max_retries=0)
    return OpenAIProvider("local", base_url=f"{url}/v1", policy=policy,
                          generation=GenerationSettings(raw=True))


async def failure(providers, intent: str, events: list | None = None) -> GenerationError:
    with pytest.raises(GenerationError) as caught:
        await InferenceDispatcher(providers).generate(
            intent, TOOLS, KIT, on_event=None if events is None else events.append)
    return caught.value


# -- item 2: no model, no next step ------------------------------------------------------------------


async def test_without_a_model_tier_the_error_says_to_configure_one_or_keep_a_program(tmp_path):
    error = await failure([templates(tmp_path), RulesProvider()], "summarise the notes")
    assert error.models == "none" and error.intent == "summarise the notes"
    assert error.failures == ("templates: no program for this intent", "rules: no program for this intent")
    message = str(error)
    assert message.startswith("no provider could write a valid program for 'summarise the notes':\n"
                              "  - templates: no program for this intent\n")
    assert "no model tier is configured" in message
    assert "[inference] in .lackpy/config.toml" in message and "`lackpy doctor`" in message
    assert "`%%create NAME --pattern 'summarise the notes'` in a notebook" in message
    assert "`lackpy create FILE --name NAME --pattern 'summarise the notes'` in a shell" in message


@pytest.mark.parametrize("tier", ["no key", "server down"])
async def test_a_model_tier_that_cannot_be_reached_says_to_start_it_or_set_its_key(tmp_path, monkeypatch,
                                                                                   tier):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    model = build_provider("claude", {"plugin": "anthropic", "model": "claude-haiku-4-5"}, tmp_path) \
        if tier == "no key" else openai_at(lb.closed_port_url())
    error = await failure([RulesProvider(), model], "summarise the notes")
    assert error.models == "unreachable"
    assert "Next: no model tier could be reached (above: why). Start its server or set its key" in str(error)


async def test_a_model_tier_that_answered_badly_is_told_to_say_it_another_way():
    with lb.LoopbackServer(default=lb.openai_answer("I would rather not.")) as server:
        error = await failure([RulesProvider(), openai_at(server.url)], "summarise the notes")
    assert error.models == "failed"
    assert "Next: say it another way" in str(error)


@pytest.mark.parametrize(("surface", "words"), [
    ("cli", "`lackpy create FILE --name NAME --pattern 'summarise the notes'`"),
    ("notebook", "`%%create NAME --pattern 'summarise the notes'`"),
    ("chat", "over it in a notebook"),
    ("mcp", "the create tool (pattern 'summarise the notes')"),
])
async def test_each_surface_words_the_next_step_in_its_own_commands(tmp_path, surface, words):
    error = await failure([templates(tmp_path), RulesProvider()], "summarise the notes")
    said = failure_text(error, surface)
    assert said.splitlines()[:3] == str(error).splitlines()[:3]  # the tiers, as they answered
    assert words in next_step(error, surface) and said.endswith(next_step(error, surface))


async def test_a_long_or_braced_intent_is_not_pasted_whole_into_a_pattern(tmp_path):
    error = await failure([RulesProvider()], "x" * 200)
    assert "--pattern PATTERN" in str(error)
    braced = await failure([RulesProvider()], "count {things}")
    assert "--pattern 'count {{things}}'" in str(braced)  # a pattern's literal braces


async def test_the_error_survives_a_pickle_with_its_message():
    error = await failure([RulesProvider()], "summarise the notes")
    assert str(pickle.loads(pickle.dumps(error))) == str(error)


# -- item 7: a deterministic tier's program that needs another kit -------------------------------------


async def test_a_template_needing_a_tool_outside_the_kit_names_the_kit_and_asks_no_one_again(tmp_path):
    events: list = []
    provider = templates(tmp_path, defs=("find the main definition", DEFS))
    error = await failure([provider, RulesProvider()], "find the main definition", events)
    assert not [event for event in events if isinstance(event, CorrectionStep)]  # no retry, no fixer
    [failed] = [event for event in events if isinstance(event, ProviderFailed)
                and event.provider == "templates"]
    assert failed.reason == ("the template defs has a program for this, but it calls find_definitions, "
                             "which the kit (find_files, read_file) does not have")
    assert (error.kit, error.missing, error.source) == (
        ("find_files", "read_file", "find_definitions"), ("find_definitions",), "the template defs")
    assert "did you mean" not in str(error)
    assert next_step(error, "cli") == ("Next: run it with `--kit find_files,read_file,find_definitions` "
                                       "(the template defs calls find_definitions).")
    assert "`%kit find_files,read_file,find_definitions`, then delegate again" in next_step(error, "notebook")
    assert "`/kit find_files,read_file,find_definitions`, then ask again" in next_step(error, "chat")
    assert 'kit ["find_files", "read_file", "find_definitions"]' in next_step(error, "mcp")


async def test_a_recording_that_is_not_valid_here_is_not_sent_through_the_correction_chain(tmp_path):
    path = tmp_path / "replay.jsonl"
    record_generation(path, "count the notes", sorted(KIT), "len(notes)", "ollama")
    events: list = []
    error = await failure([ReplayProvider(path)], "count the notes", events)
    assert not [event for event in events if isinstance(event, CorrectionStep)]
    assert error.kit == ()  # no tool is missing: another kit would not help
    assert "replay: a recording has a program for this, not valid here: line 1, col 5: " \
           "unknown name 'notes'" in str(error)


async def test_the_right_kit_runs_the_template_the_error_named(tmp_path):
    provider = templates(tmp_path, defs=("find the main definition", DEFS))
    error = await failure([provider], "find the main definition")
    result = await InferenceDispatcher([provider]).generate(
        "find the main definition", TOOLS, set(error.kit))
    assert (result.program, result.kind, result.correction_attempts) == (DEFS, "template", 0)
