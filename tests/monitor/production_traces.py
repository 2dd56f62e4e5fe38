"""Production traces for the monitor tests: a support agent instrumented with the OpenTelemetry SDK (its
spans as pydantic-ai and OpenLLMetry emit them), and traces of it stored at a chosen time."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from cobalt_lib.monitor import Ingest
from cobalt_lib.monitor._otlp import from_protobuf

QUESTION = "Where is parcel 1234?"
ANSWER = "Parcel 1234 is in Lyon, due tomorrow."


def _messages(role: str, part: dict[str, object]) -> str:
    return json.dumps([{"role": role, "parts": [part]}])


def run_agent(provider: TracerProvider, question: str = QUESTION, answer: str = ANSWER, *,
              at_ns: int | None = None) -> str:
    """An agent span, a model call asking for a tool, the tool, the model's answer; `at_ns` its start
    (now when None). Returns the trace id."""
    tracer = provider.get_tracer("support-bot")
    clock = [at_ns] if at_ns is not None else None

    def tick() -> int | None:
        if clock is None:
            return None
        clock[0] = (clock[0] or 0) + 1_000_000
        return clock[0]

    asked = _messages("user", {"type": "text", "content": question})
    root = tracer.start_span("invoke_agent support", attributes={"gen_ai.operation.name": "invoke_agent"},
                             start_time=tick())
    context = trace.set_span_in_context(root)
    children: list[tuple[str, dict[str, Any]]] = [
        ("chat gpt-4o-mini", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
                              "gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 15,
                              "gen_ai.input.messages": asked, "gen_ai.output.messages": _messages(
                                  "assistant", {"type": "tool_call", "name": "track", "id": "c1",
                                                "arguments": {"parcel": "1234"}})}),
        ("execute_tool track", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "track",
                                "gen_ai.tool.call.arguments": '{"parcel": "1234"}',
                                "gen_ai.tool.call.result": '{"city": "Lyon"}'}),
        ("chat gpt-4o-mini", {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
                              "gen_ai.usage.input_tokens": 160, "gen_ai.usage.output_tokens": 12,
                              "gen_ai.input.messages": asked,
                              "gen_ai.output.messages": _messages("assistant", {"type": "text", "content": answer})}),
    ]
    for name, attributes in children:
        tracer.start_span(name, context=context, attributes=attributes, start_time=tick()).end(end_time=tick())
    root.end(end_time=tick())
    return format(root.get_span_context().trace_id, "032x")


def memory_provider(service: str = "support-bot") -> tuple[TracerProvider, InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return provider, memory


def one_export(question: str = QUESTION) -> tuple[bytes, str]:
    """One OTLP protobuf export body holding one trace, and the trace's id."""
    provider, memory = memory_provider()
    trace_id = run_agent(provider, question)
    return encode_spans(memory.get_finished_spans()).SerializeToString(), trace_id


def store_traces(ingest: Ingest, conversations: list[tuple[str, str]], *, at_ns: int) -> list[str]:
    """Store one trace per (question, answer), each started at `at_ns` (plus a second per trace), through the
    protobuf decoding the receiver uses. Returns their ids."""
    provider, memory = memory_provider()
    ids = [run_agent(provider, q, a, at_ns=at_ns + i * 10**9) for i, (q, a) in enumerate(conversations)]
    ingest.accept(from_protobuf(encode_spans(memory.get_finished_spans()).SerializeToString()))
    return ids
