"""A model server's token counts are its own word: counts that are not whole numbers, are
huge or negative, or a ``usage`` that is not an object, count as 0 and never fail the call
or the usage record."""

from __future__ import annotations

import json

import pytest

from lackpy_kernel.service import LackpyService
from lackpy_kernel.telemetry import USAGE_FILE, usage_report
from tests.support import loopback as lb

PROGRAM = "len(read_file('notes.txt'))"
HOSTILE_USAGE = [
    {"prompt_tokens": "lots", "completion_tokens": 10**30, "total_tokens": -1},
    {"prompt_tokens": -5, "completion_tokens": True},
    "not an object",
    [1, 2, 3],
]


def openai_answer_with(usage: object) -> lb.Step:
    def step(handler, request: lb.Request) -> None:
        lb.json_reply({"id": "x", "object": "chat.completion", "created": 1, "model": "tiny",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": PROGRAM}}],
                       "usage": usage})(handler, request)
    return step


def anthropic_answer_with(usage: object) -> lb.Step:
    def step(handler, request: lb.Request) -> None:
        lb.json_reply({"id": "m", "type": "message", "role": "assistant", "model": "tiny",
                       "content": [{"type": "text", "text": PROGRAM}], "stop_reason": "end_turn",
                       "stop_sequence": None, "usage": usage})(handler, request)
    return step


@pytest.mark.parametrize("usage", HOSTILE_USAGE, ids=["strings-and-huge", "negative-and-bool",
                                                      "a-string", "a-list"])
@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
async def test_hostile_token_counts_count_as_zero_and_the_delegate_goes_on(
        tmp_path, model_server, model_env, protocol, usage):
    step = openai_answer_with(usage) if protocol == "openai" else anthropic_answer_with(usage)
    where = f'base_url = "{model_server.url}/v1"' if protocol == "openai" else (
        f'base_url = "{model_server.url}"')
    (tmp_path / "notes.txt").write_text("abc")
    (tmp_path / ".lackpy").mkdir()
    (tmp_path / ".lackpy" / "config.toml").write_text(
        f'[inference]\norder = ["loop"]\n\n[inference.providers.loop]\nplugin = "{protocol}"\n'
        f'{where}\nmodel = "tiny"\nstream = false\nmax_retries = 0\nprice_in = 1.0\n\n'
        "[sandbox]\nenabled = false\n")
    model_server.script(step)
    with LackpyService(tmp_path) as service:
        result = await service.delegate("how long are my notes", ["read_file"])
    assert result["success"], result["error"]
    assert result["output"] == 3
    total = usage_report(tmp_path / ".lackpy" / USAGE_FILE).total
    assert (total.calls, total.failed, total.input_tokens, total.output_tokens, total.cost) == (
        1, 0, 0, 0, 0.0), json.dumps(usage)
