"""The telemetry tests' spans: this process's, kept in memory by the OpenTelemetry SDK."""

from __future__ import annotations

import pytest

from lackpy_kernel import telemetry


@pytest.fixture
def tracing():
    """A tracer provider whose spans this process keeps in memory (the SDK's own exporter),
    and that exporter."""
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.use_tracer_provider(provider)
    yield provider, exporter
    telemetry.use_tracer_provider(None)


@pytest.fixture
def spans(tracing):
    """The in-memory exporter of this process's spans."""
    return tracing[1]
