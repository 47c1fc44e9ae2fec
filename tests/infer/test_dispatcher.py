"""The dispatcher and its correction chain, with providers written to the protocol."""

import asyncio

import pytest

from lackpy_kernel.infer import InferenceDispatcher, RulesProvider
from lackpy_kernel.infer.prompt import Example
from lackpy_kernel.lang import max_calls

NAMESPACE = "read_file(path: str) -> str: read"
ALLOWED = {"read_file"}


class Scripted:
    """A provider that answers from a script: one entry per call."""

    def __init__(self, name, answers, available=True, fix_answers=None):
        self._name = name
        self.answers = list(answers)
        self.fix_answers = fix_answers
        self._available = available
        self.calls = []

    @property
    def name(self):
        return self._name

    def available(self):
        return self._available

    async def generate(self, intent, namespace_desc, config=None, error_feedback=None):
        self.calls.append({"intent": intent, "config": config, "feedback": error_feedback})
        answer = self.answers.pop(0) if self.answers else None
        if isinstance(answer, Exception):
            raise answer
        return answer


class WithFix(Scripted):
    async def fix(self, intent, program, errors, namespace_desc, config=None):
        self.calls.append({"fix": program, "errors": errors})
        return self.fix_answers.pop(0)


async def dispatch(*providers, intent="read a", rules=None):
    return await InferenceDispatcher(list(providers)).generate(
        intent, NAMESPACE, ALLOWED, extra_rules=rules
    )


async def test_first_valid_program_wins():
    first = Scripted("first", ["x = read_file('a')\nx"])
    second = Scripted("second", ["1"])
    result = await dispatch(first, second)
    assert result.program == "x = read_file('a')\nx"
    assert result.provider_name == "first"
    assert result.correction_strategy is None and result.attempts_log is None
    assert result.generation_time_ms >= 0
    assert second.calls == []


async def test_unavailable_and_passing_providers_are_skipped():
    off = Scripted("off", ["1"], available=False)
    passes = Scripted("passes", [None])
    works = Scripted("works", ["2"])
    result = await dispatch(off, passes, works)
    assert result.provider_name == "works"
    assert off.calls == []


async def test_output_is_sanitized():
    result = await dispatch(Scripted("m", ["Here's the program:\n```python\nread_file('a')\n```"]))
    assert result.program == "read_file('a')"


async def test_cleanup_fixes_imports_and_open_without_a_model_call():
    model = Scripted("m", ["import os\ntext = open('a').read()\ntext"])
    result = await dispatch(model)
    assert result.program == "text = read_file('a')\ntext"
    assert result.correction_strategy == "cleanup"
    assert result.correction_attempts == 1
    assert len(model.calls) == 1


async def test_retry_feeds_the_errors_back():
    model = Scripted("m", ["while True:\n    x = 1", "x = read_file('a')\nx"])
    result = await dispatch(model)
    assert result.correction_strategy == "retry"
    assert result.correction_attempts == 2
    retry = model.calls[1]
    assert any("While is not allowed" in error for error in retry["feedback"])
    assert retry["config"]["previous_program"] == "while True:\n    x = 1"
    steps = [entry["step"] for entry in result.attempts_log]
    assert steps == ["generate", "cleanup", "retry"]
    assert all(entry["did"] for entry in result.attempts_log)


async def test_fresh_fixer_uses_fix_when_the_provider_has_it_with_the_best_attempt_not_the_last():
    best = "while True:\n    x = 1"
    worse = "while 1:\n    y = open('a')"
    model = WithFix("m", [best, worse], fix_answers=["read_file('a')"])
    result = await dispatch(model)
    assert result.correction_strategy == "fixer"
    assert result.correction_attempts == 3
    assert model.calls[-1]["fix"] == best
    fixer = result.attempts_log[-1]
    assert fixer["step"] == "fixer" and "repair attempt 1, the best so far" in fixer["did"]


async def test_fresh_fixer_falls_back_to_generate():
    model = Scripted("m", ["while True:\n    x = 1", "while 1:\n    y = 2", "read_file('b')"])
    result = await dispatch(model)
    assert result.correction_strategy == "fixer"
    assert model.calls[-1]["config"]["fixer"] is True


async def test_extra_rules_are_enforced():
    model = Scripted("m", ["read_file('a')\nread_file('b')", None, None])
    with pytest.raises(RuntimeError, match="too many|calls"):
        await dispatch(model, rules=[max_calls(1)])


async def test_a_raising_provider_is_recorded_and_skipped():
    broken = Scripted("broken", [ConnectionError("refused")])
    works = Scripted("works", ["1"])
    result = await dispatch(broken, works)
    assert result.provider_name == "works"


async def test_all_failing_lists_each_provider_and_why():
    with pytest.raises(RuntimeError) as caught:
        await dispatch(
            Scripted("off", [], available=False),
            Scripted("broken", [ConnectionError("refused")]),
            Scripted("bad", ["import os", "import sys", "import re"]),
            RulesProvider(),
            intent="do something odd",
        )
    message = str(caught.value)
    assert "off: not available" in message
    assert "broken: ConnectionError: refused" in message
    assert "bad: invalid program after correction" in message
    assert "rules: no program for this intent" in message


async def test_system_prompt_and_context_reach_the_provider():
    model = Scripted("m", ["1"])
    await InferenceDispatcher([model]).generate(
        "read the readme", NAMESPACE, ALLOWED, params_desc="n: int",
        example_pool=[{"intent": "read the file x", "code": "read_file('x')", "tags": []}],
    )
    config = model.calls[0]["config"]
    assert "read_file(path: str)" in config["system_prompt"]
    assert "n: int" in config["system_prompt"]
    assert "Intent:" not in config["system_prompt"]  # the examples go separately: turns in chat
    assert config["examples"] == [Example("read the file x", "read_file('x')", [])]
    assert config["allowed_names"] == ["read_file"]


async def test_cancellation_propagates():
    class Slow(Scripted):
        async def generate(self, *args, **kwargs):
            await asyncio.sleep(10)

    task = asyncio.ensure_future(dispatch(Slow("slow", [])))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_result_says_what_kind_of_provider_wrote_it_and_from_where(tmp_path):
    from lackpy_kernel.infer import TemplatesProvider
    from lackpy_kernel.infer.tiers import format_template

    (tmp_path / "greet.tmpl").write_text(format_template("greet", "say hello", "'hello'"))
    templates = TemplatesProvider(tmp_path)
    model = Scripted("my-model", ["read_file('a.txt')"])
    dispatcher = InferenceDispatcher([templates, RulesProvider(), model])

    from_template = await dispatcher.generate("say hello", NAMESPACE, ALLOWED)
    assert (from_template.kind, from_template.source) == ("template", str(tmp_path / "greet.tmpl"))
    assert not from_template.from_model
    from_rules = await dispatcher.generate("read the file notes.txt", NAMESPACE, ALLOWED)
    assert (from_rules.kind, from_rules.source, from_rules.from_model) == ("rules", None, False)
    from_model = await dispatcher.generate("summarise a.txt", NAMESPACE, ALLOWED)
    assert (from_model.provider_name, from_model.kind, from_model.from_model) == (
        "my-model", "model", True)
