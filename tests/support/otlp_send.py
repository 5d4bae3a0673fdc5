"""Sends one small trace to an OpenTelemetry receiver with the OpenTelemetry SDK's own OTLP
exporters, so the receiver harness (tests/support/phoenix.rs) is checked against a sender that is
known to be right, before and apart from graphwright's exporter.

Usage: python otlp_send.py PROTOCOL ENDPOINT PROJECT

PROTOCOL is `http` (protobuf over HTTP, to ENDPOINT/v1/traces) or `grpc`. ENDPOINT is
`http://HOST:PORT`. PROJECT goes in the resource attribute `openinference.project.name`, which is
how Phoenix picks a span's project; `-` leaves that attribute out (Phoenix then files the spans
under its `default` project; `service.name` is always set and does not choose the project).

The trace is a parent span `invoke_agent support` and a child `chat gpt-4o-mini` that failed
(status ERROR, message `rate limited by the provider`) and carries a `gen_ai.choice` event and an
`exception` event; both carry `gen_ai.*` attributes. Prints one JSON line with the ids the
receiver should report: {"trace_id": HEX32, "parent_span_id": HEX16, "child_span_id": HEX16}.
Exits non-zero when the exporter reports a failed export.
"""

import json
import sys

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode


def main() -> int:
    protocol, endpoint, project = sys.argv[1:4]
    attributes = {"service.name": "graphwright-otlp-send"}
    if project != "-":
        attributes["openinference.project.name"] = project
    provider = TracerProvider(resource=Resource.create(attributes))
    # The spans are collected first and exported in one call below, so that a failed export
    # is seen here as a result instead of a line the SDK logs and moves past.
    finished = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(finished))
    tracer = provider.get_tracer("graphwright.tests.otlp_send")

    with tracer.start_as_current_span("invoke_agent support") as parent:
        parent.set_attribute("gen_ai.operation.name", "invoke_agent")
        parent.set_attribute("gen_ai.agent.name", "support")
        parent.set_attribute("graphwright.protocol", protocol)
        with tracer.start_as_current_span("chat gpt-4o-mini") as child:
            child.set_attribute("gen_ai.operation.name", "chat")
            child.set_attribute("gen_ai.system", "openai")
            child.set_attribute("gen_ai.request.model", "gpt-4o-mini")
            child.set_attribute("gen_ai.request.temperature", 0.25)
            child.set_attribute("gen_ai.usage.input_tokens", 42)
            child.set_attribute("gen_ai.usage.output_tokens", 7)
            child.set_attribute("gen_ai.response.finish_reasons", ["length"])
            child.add_event("gen_ai.choice", {"index": 0, "finish_reason": "length"})
            child.add_event(
                "exception",
                {
                    "exception.type": "RateLimitError",
                    "exception.message": "rate limited by the provider",
                },
            )
            child.set_status(Status(StatusCode.ERROR, "rate limited by the provider"))

    if protocol == "http":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces", timeout=10)
    elif protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(endpoint=endpoint, insecure=True, timeout=10)
    else:
        print(f"unknown protocol {protocol!r}: use http or grpc", file=sys.stderr)
        return 2
    result = exporter.export(finished.get_finished_spans())
    exporter.shutdown()
    if result is not SpanExportResult.SUCCESS:
        print(f"the OTLP {protocol} export to {endpoint} failed: {result}", file=sys.stderr)
        return 1

    print(
        json.dumps(
            {
                "trace_id": format(parent.get_span_context().trace_id, "032x"),
                "parent_span_id": format(parent.get_span_context().span_id, "016x"),
                "child_span_id": format(child.get_span_context().span_id, "016x"),
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
