"""Spans as a tree, and an OTLP/HTTP receiver on loopback, for the telemetry tests."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler

from tests.support import loopback as lb


def tree(finished) -> dict[str, list[str]]:
    """Each span's name -> its children's names, in start order."""
    by_id = {span.context.span_id: span for span in finished}
    children: dict[str, list[str]] = {span.name: [] for span in finished}
    for span in sorted(finished, key=lambda s: s.start_time):
        if span.parent is not None and span.parent.span_id in by_id:
            children[by_id[span.parent.span_id].name].append(span.name)
    return children


def otlp_receiver() -> lb.LoopbackServer:
    """An OTLP/HTTP trace receiver on loopback that answers every export with success."""

    def step(handler: BaseHTTPRequestHandler, request: lb.Request) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/x-protobuf")
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    return lb.LoopbackServer(default=step)


def exported_spans(server: lb.LoopbackServer) -> list:
    """The spans the receiver was sent, as OTLP protobuf messages."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    found = []
    for request in list(server.requests):
        export = ExportTraceServiceRequest()
        export.ParseFromString(request.body)
        found += [span for resource in export.resource_spans for scope in resource.scope_spans
                  for span in scope.spans]
    return found
