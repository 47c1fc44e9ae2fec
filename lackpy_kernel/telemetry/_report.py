"""Totals of the usage record: model calls by provider, tier and day, and what the ratchet saved."""

from __future__ import annotations

import datetime
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from lackpy_kernel.errors import UsageError

from ._store import KIND_MODEL, USAGE_FILE, query
from ._usage import format_cost

_DAYS = re.compile(r"(\d{1,5})d")
_GROUPS = ("provider", "tier", "day")


@dataclass(frozen=True)
class UsageLine:
    """Model calls of one provider, tier or day (``key``), added up; ``cost`` None: unpriced."""

    key: str
    calls: int
    failed: int
    input_tokens: int
    output_tokens: int
    cost: float | None

    def figures(self) -> str:
        """``"2 calls (1 failed), 120 tokens in, 30 out, $0.0012"``."""
        calls = "1 call" if self.calls == 1 else f"{self.calls} calls"
        failed = f" ({self.failed} failed)" if self.failed else ""
        cost = f", {format_cost(self.cost)}" if self.cost is not None else ""
        return f"{calls}{failed}, {self.input_tokens} tokens in, {self.output_tokens} out{cost}"


@dataclass(frozen=True)
class UsageReport:
    """The record's totals since ``since`` (None: all of it): every model call, by provider,
    tier and day, and the answers templates, rules and replay gave without a model (``saved``,
    by kind)."""

    since: str | None
    total: UsageLine
    by_provider: list[UsageLine]
    by_tier: list[UsageLine]
    by_day: list[UsageLine]
    saved: dict[str, int]

    @property
    def saved_calls(self) -> int:
        """The model calls the ratchet's answers did not make."""
        return sum(self.saved.values())

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "saved_calls": self.saved_calls}

    def text(self) -> str:
        """The report as lines of text."""
        since = f" since {self.since}" if self.since else ""
        if not self.total.calls and not self.saved:
            return f"no model calls and no ratchet answers recorded{since}"
        lines = [f"model calls{since}: {self.total.figures()}"]
        for title, group in (("by provider", self.by_provider), ("by tier", self.by_tier),
                             ("by day", self.by_day)):
            if group:
                lines += [f"{title}:", *(f"  {line.key:<16} {line.figures()}" for line in group)]
        lines.append(self._saved_text())
        return "\n".join(lines)

    def _saved_text(self) -> str:
        if not self.saved:
            return "the ratchet saved no model calls (no answers from templates, rules or replay)"
        kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(self.saved.items()))
        calls = "1 model call" if self.saved_calls == 1 else f"{self.saved_calls} model calls"
        text = f"the ratchet saved {calls} ({kinds})"
        ok = self.total.calls - self.total.failed
        if ok:
            tokens = (self.total.input_tokens + self.total.output_tokens) * self.saved_calls // ok
            text += f", about {tokens} tokens at this record's average per model call"
        return text


def usage_report(path: Path, since: datetime.date | None = None) -> UsageReport:
    """The totals of the usage record at ``path`` from ``since`` (a UTC day) on.

    Raises TelemetryError when the file cannot be read as a usage record."""
    day = since.isoformat() if since else ""
    groups = {group: _lines(path, group, day) for group in _GROUPS}
    total = _lines(path, "'all'", day)
    saved = query(path, "SELECT kind, COUNT(*) FROM calls WHERE kind != ? AND day >= ? GROUP BY kind",
                  (KIND_MODEL, day))
    return UsageReport(day or None, total[0] if total else UsageLine("all", 0, 0, 0, 0, None),
                       groups["provider"], groups["tier"], groups["day"],
                       {str(kind): _int(count) for kind, count in saved})


def workspace_usage(config_dir: Path, since: str | None = None) -> UsageReport:
    """The totals of the usage record in ``config_dir`` (a workspace's ``.lackpy``) from
    ``since`` (see :func:`parse_since`) on. Raises UsageError for a bad ``since``,
    TelemetryError for a record that cannot be read."""
    return usage_report(config_dir / USAGE_FILE, parse_since(since) if since else None)


def _lines(path: Path, column: str, day: str) -> list[UsageLine]:
    rows = query(path, f"SELECT {column}, COUNT(*), SUM(1 - ok), SUM(input_tokens), SUM(output_tokens), "
                       f"SUM(cost) FROM calls WHERE kind = ? AND day >= ? GROUP BY {column} "
                       f"ORDER BY {column}", (KIND_MODEL, day))
    return [UsageLine(str(key), _int(calls), _int(failed), _int(tokens_in), _int(tokens_out),
                      float(cost) if isinstance(cost, float | int) else None)
            for key, calls, failed, tokens_in, tokens_out, cost in rows]


def _int(value: object) -> int:
    return value if isinstance(value, int) else 0


def parse_since(text: str, today: datetime.date | None = None) -> datetime.date:
    """A day from ``YYYY-MM-DD`` or ``Nd`` (N days before ``today``, UTC); UsageError otherwise."""
    today = today or datetime.datetime.now(datetime.UTC).date()
    days = _DAYS.fullmatch(text.strip())
    if days:
        return today - datetime.timedelta(days=int(days.group(1)))
    try:
        return datetime.date.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(f"--since takes a day (2026-11-20) or a number of days back (7d), "
                         f"not {text!r}") from None
