"""What a model call cost: its tokens (the vendor's own counts), its price, and who hears of it.

A vendor's request code calls :func:`count_tokens` with the counts its server sent (Ollama's
``prompt_eval_count``/``eval_count``, OpenAI's and Anthropic's ``usage``); :func:`model_call`
wraps one model call (every attempt of it), adds those counts up, prices them, writes the call
to the workspace's usage record and tells every :func:`tallying` block around it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lackpy_kernel.timing import ms_since

from ._spans import span
from ._store import ModelCall, record_call

PRICE_KEYS = ("price_in", "price_out")  # [inference.providers.X]: per million tokens
PER = 1_000_000
MAX_TOKENS = 10**12  # the most one count may say; more is a server's mistake or malice


@dataclass(frozen=True)
class Prices:
    """A provider's prices per million input and output tokens; None where not configured."""

    input: float | None = None
    output: float | None = None

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> Prices:
        """``price_in`` and ``price_out`` of a provider table; ``ValueError`` naming a bad one."""
        return cls(*(_price(key, settings.get(key)) for key in PRICE_KEYS))

    def cost(self, input_tokens: int, output_tokens: int) -> float | None:
        """What the tokens cost, in the prices' currency; None when neither price is set."""
        if self.input is None and self.output is None:
            return None
        return (input_tokens * (self.input or 0.0) + output_tokens * (self.output or 0.0)) / PER


def _price(key: str, value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError(f"{key} must be a number of at least 0 (the price per million tokens), "
                         f"got {value!r}")
    return float(value)


@dataclass
class Tally:
    """The model calls made inside a :func:`tallying` block, added up."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None

    def add(self, call: ModelCall) -> None:
        self.calls += 1
        self.input_tokens += call.input_tokens
        self.output_tokens += call.output_tokens
        if call.cost is not None:
            self.cost = (self.cost or 0.0) + call.cost

    def summary(self) -> str:
        """``"2 model calls, 120 tokens in, 30 out, $0.0012"``; "" when no model was called."""
        if not self.calls:
            return ""
        calls = "1 model call" if self.calls == 1 else f"{self.calls} model calls"
        text = f"{calls}, {self.input_tokens} tokens in, {self.output_tokens} out"
        return text if self.cost is None else f"{text}, {format_cost(self.cost)}"


def format_cost(cost: float) -> str:
    """A cost as ``$0.0012`` (four decimals; small costs are the common case)."""
    return f"${cost:.4f}"


@dataclass
class _Counts:
    input_tokens: int = 0
    output_tokens: int = 0


_counts: ContextVar[_Counts | None] = ContextVar("lackpy_model_call", default=None)
_tallies: ContextVar[tuple[Tally, ...]] = ContextVar("lackpy_tallies", default=())


def count_tokens(input_tokens: object, output_tokens: object) -> None:
    """Add a server's token counts to the model call in progress (none: nothing to add to).
    A count that is not a whole number from 0 to :data:`MAX_TOKENS` (a server's own word,
    not to be trusted) counts as 0."""
    counts = _counts.get()
    if counts is not None:
        counts.input_tokens += _tokens(input_tokens)
        counts.output_tokens += _tokens(output_tokens)


def count_usage(answer: object, input_path: str | None, output_path: str | None) -> None:
    """:func:`count_tokens` with the counts found at the dotted attribute paths of a server's
    ``answer`` (``"usage.prompt_tokens"``); a path that is not there counts as 0."""
    count_tokens(_at(answer, input_path), _at(answer, output_path))


def _at(value: object, path: str | None) -> object:
    for name in path.split(".") if path else ():
        value = getattr(value, name, None)
    return value if path else None


def _tokens(count: object) -> int:
    if isinstance(count, int) and not isinstance(count, bool) and 0 <= count <= MAX_TOKENS:
        return count
    return 0


@contextmanager
def tallying() -> Iterator[Tally]:
    """A Tally of every model call made inside the block (in this task and those it starts)."""
    tally = Tally()
    token = _tallies.set((*_tallies.get(), tally))
    try:
        yield tally
    finally:
        _tallies.reset(token)


@contextmanager
def model_call(*, provider: str, tier: str, model: str, prices: Prices,
               usage_file: Path | None) -> Iterator[None]:
    """One model call (all its attempts): counts what :func:`count_tokens` hears inside, then
    records it in ``usage_file`` (None: nowhere), in the tallies around it and in its span
    (``gen_ai.*``). Re-raises what the block raises, the call recorded as failed."""
    counts = _Counts()
    token = _counts.set(counts)
    started = time.perf_counter()
    ok = False
    with span(f"chat {model}", {"gen_ai.operation.name": "chat", "gen_ai.provider.name": provider,
                                "gen_ai.request.model": model, "lackpy.tier": tier}) as current:
        try:
            yield
            ok = True
        finally:
            _counts.reset(token)
            call = ModelCall(provider, tier, model, counts.input_tokens, counts.output_tokens,
                             prices.cost(counts.input_tokens, counts.output_tokens), ms_since(started),
                             ok)
            current.set({"gen_ai.usage.input_tokens": call.input_tokens,
                         "gen_ai.usage.output_tokens": call.output_tokens, "lackpy.cost": call.cost})
            for tally in _tallies.get():
                tally.add(call)
            if usage_file is not None:
                record_call(usage_file, call)
