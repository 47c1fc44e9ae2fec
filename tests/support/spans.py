"""Spans as a tree, for the telemetry tests."""

from __future__ import annotations


def tree(finished) -> dict[str, list[str]]:
    """Each span's name -> its children's names, in start order."""
    by_id = {span.context.span_id: span for span in finished}
    children: dict[str, list[str]] = {span.name: [] for span in finished}
    for span in sorted(finished, key=lambda s: s.start_time):
        if span.parent is not None and span.parent.span_id in by_id:
            children[by_id[span.parent.span_id].name].append(span.name)
    return children
