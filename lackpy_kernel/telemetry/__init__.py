"""Telemetry: what each model call used and cost (the usage record, ``.lackpy/usage.sqlite``)
and what the ratchet saved.

Nothing here imports OpenTelemetry; the usage record is stdlib ``sqlite3``.
"""

from ._report import UsageLine, UsageReport, parse_since, usage_report, workspace_usage
from ._store import USAGE_FILE, record_answer
from ._usage import PRICE_KEYS, ModelCall, Prices, Tally, count_tokens, model_call, tallying

__all__ = [
    "PRICE_KEYS", "USAGE_FILE", "ModelCall", "Prices", "Tally", "UsageLine", "UsageReport",
    "count_tokens", "model_call", "parse_since", "record_answer", "tallying", "usage_report",
    "workspace_usage",
]
