"""Spans ingested per second by `cobalt collect`: the OpenTelemetry SDK's own OTLP/HTTP exporter (batches of
512 spans, as its BatchSpanProcessor sends them) POSTing protobuf to the receiver on 127.0.0.1, each batch
stored in the DuckDB store before the 200; and the same batches straight into `Ingest.accept` (no HTTP).

    .venv/bin/python benchmarks/collect.py --spans 20000 --batch 512

Goal (issue 39): 10,000 spans/s on 2 cores. Prints the machine's load beside each figure.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from cobalt_lib.monitor import Collector, Ingest
from cobalt_lib.monitor._otlp import from_protobuf
from cobalt_lib.store import Store


def agent_spans(count: int) -> list:
    """`count` spans of agent traces (an agent span, two model calls with messages, a tool call: 4 a trace)."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "support-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("bench")
    messages = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Where is parcel 1234? " * 8}]}])
    for i in range(count // 4):
        with tracer.start_as_current_span("invoke_agent support", attributes={"gen_ai.operation.name": "invoke_agent"}):
            for name in ("chat", "execute_tool", "chat"):
                attributes = {"gen_ai.operation.name": name, "gen_ai.request.model": "gpt-4o-mini",
                              "gen_ai.usage.input_tokens": 100 + i % 50, "gen_ai.input.messages": messages}
                with tracer.start_as_current_span(f"{name} {i}", attributes=attributes):
                    pass
    return list(memory.get_finished_spans())


def over_http(spans: list, batch: int, directory: Path) -> float:
    store = Store(directory / "http" / "cobalt.duckdb")
    collector = Collector(Ingest(store), "127.0.0.1", 0)
    collector.start()
    exporter = OTLPSpanExporter(endpoint=f"{collector.url}/v1/traces")
    started, cpu = time.perf_counter(), time.process_time()
    for at in range(0, len(spans), batch):
        exporter.export(spans[at:at + batch])
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(f"  (over HTTP: {len(spans) / cpu:,.0f} spans per CPU second, exporter and receiver in this process)")
    collector.shutdown()
    stored = len(store.trace_list())
    assert stored == len(spans) // 4, stored
    return len(spans) / elapsed


def direct(spans: list, batch: int, directory: Path) -> float:
    store = Store(directory / "direct" / "cobalt.duckdb")
    ingest = Ingest(store)
    bodies = [encode_spans(spans[at:at + batch]).SerializeToString() for at in range(0, len(spans), batch)]
    started, cpu = time.perf_counter(), time.process_time()
    for body in bodies:
        ingest.accept(from_protobuf(body))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(f"  (direct: {len(spans) / cpu:,.0f} spans per CPU second of this process, all its threads)")
    return len(spans) / wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spans", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=512)
    args = parser.parse_args()
    spans = agent_spans(args.spans)
    with tempfile.TemporaryDirectory() as tmp:
        for name, measure in (("OTLP/HTTP exporter -> cobalt collect", over_http), ("Ingest.accept, no HTTP", direct)):
            load = os.getloadavg()[0]
            rate = measure(spans, args.batch, Path(tmp))
            print(f"{name}: {rate:,.0f} spans/s ({len(spans):,} spans, batches of {args.batch}; load {load:.1f})")


if __name__ == "__main__":
    main()
