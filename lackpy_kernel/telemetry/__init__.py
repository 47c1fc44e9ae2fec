"""Telemetry: what each model call used and cost (the usage record, ``.lackpy/usage.sqlite``),
what the ratchet saved, and OpenTelemetry spans when ``[telemetry]`` turns them on.

Nothing here imports OpenTelemetry until spans are turned on; the usage record is stdlib
``sqlite3``, written behind the caller by one thread per process (``write_behind``, which
the ratchet's intent log uses too; ``flush_writes`` writes what is pending now).
"""

from ._behind import flush_writes, unwritten, write_behind
from ._report import UsageLine, UsageReport, parse_since, usage_report, workspace_usage
from ._spans import (
    EXPORTERS,
    RunSpan,
    SpanHandle,
    configure,
    span,
    temporal_interceptors,
    traced,
    traced_run,
    traced_step,
    tracing,
    use_tracer_provider,
)
from ._store import USAGE_FILE, ModelCall, record_answer
from ._usage import (
    PRICE_KEYS,
    Prices,
    Tally,
    count_tokens,
    count_usage,
    model_call,
    tallying,
)

__all__ = [
    "EXPORTERS", "PRICE_KEYS", "USAGE_FILE", "ModelCall", "Prices", "RunSpan", "SpanHandle", "Tally",
    "UsageLine", "UsageReport", "configure", "count_tokens", "count_usage", "flush_writes",
    "model_call", "parse_since", "record_answer", "span", "tallying", "temporal_interceptors",
    "traced", "traced_run", "traced_step", "tracing", "unwritten", "usage_report",
    "use_tracer_provider", "workspace_usage", "write_behind",
]
