"""Spans ingested per second by `cobalt collect`: the OpenTelemetry SDK's own OTLP/HTTP exporter (batches of
512 spans, as its BatchSpanProcessor sends them) POSTing protobuf to the receiver on 127.0.0.1, each batch
stored in the DuckDB store before the 200; and the same batches straight into `Ingest.accept` (no HTTP).
`--exporters N` runs N exporter clients at once, each its own share of the batches (many agent processes
posting together: what the receiver's group commit is for); `--no-group` measures each request in a
transaction and connection of its own (no writer thread holding the store) alternated with the receiver as
it is. The receiver's own CPU is the process's less the exporter threads' own (`time.thread_time`).

    .venv/bin/python benchmarks/collect.py --spans 20000 --batch 512 --exporters 8

Goal (issue 39): 10,000 spans/s on 2 cores. Prints the machine's load beside each figure.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
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


class OneAtATime(Ingest):
    """The receiver without group commit (`--no-group`): each request its own transaction, on a connection of
    its own (no writer thread, no store held open)."""

    def _commit(self, request: Any) -> None:
        self.store.add_trace_spans(request.rows)


def over_http(spans: list, batch: int, directory: Path, exporters: int, ingest: type[Ingest] = Ingest) -> float:
    store = Store(directory / f"http-{exporters}-{ingest.__name__}" / "cobalt.duckdb")
    collector = Collector(ingest(store), "127.0.0.1", 0)
    collector.start()
    batches = [spans[at:at + batch] for at in range(0, len(spans), batch)]
    clients = [OTLPSpanExporter(endpoint=f"{collector.url}/v1/traces") for _ in range(exporters)]
    results: list[SpanExportResult] = []

    exporter_cpu: list[float] = []

    def send(client: OTLPSpanExporter, mine: list[list]) -> None:
        cpu = time.thread_time()  # the exporter's own CPU (encoding, its HTTP client): not the receiver's
        results.extend(client.export(b) for b in mine)
        exporter_cpu.append(time.thread_time() - cpu)

    threads = [threading.Thread(target=send, args=(c, batches[i::exporters])) for i, c in enumerate(clients)]
    started, cpu = time.perf_counter(), time.process_time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    assert results.count(SpanExportResult.SUCCESS) == len(batches), results
    receiver = cpu - sum(exporter_cpu)
    print(f"  (over HTTP: {len(spans) / cpu:,.0f} spans per CPU second, exporters and receiver in this process; "
          f"the receiver alone {len(spans) / receiver:,.0f} spans per CPU second, {receiver / len(spans) * 1e6:.0f} "
          f"us a span; the exporters {sum(exporter_cpu) / len(spans) * 1e6:.0f} us a span)")
    collector.shutdown()
    collector.server_close()
    stored = len(store.trace_list())
    assert stored == len(spans) // 4, stored
    return len(spans) / elapsed


def direct(spans: list, batch: int, directory: Path, exporters: int) -> float:
    store = Store(directory / "direct" / "cobalt.duckdb")
    ingest = Ingest(store)
    bodies = [encode_spans(spans[at:at + batch]).SerializeToString() for at in range(0, len(spans), batch)]
    started, cpu = time.perf_counter(), time.process_time()
    for body in bodies:
        ingest.accept(from_protobuf(body))
    ingest.close()  # the store let go (its checkpoint) inside the measure
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    print(f"  (direct: {len(spans) / cpu:,.0f} spans per CPU second of this process, all its threads)")
    return len(spans) / wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spans", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--exporters", type=int, default=1, help="exporter clients posting at once")
    parser.add_argument("--no-direct", action="store_true", help="measure over HTTP only")
    parser.add_argument("--no-group", action="store_true", help="also measure one transaction a request, alternated")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    spans = agent_spans(args.spans)
    exporters = f"{args.exporters} OTLP/HTTP exporter(s) -> cobalt collect"
    paths: list[tuple[str, Callable[..., float]]] = [(exporters, over_http)]
    if args.no_group:
        paths.append((exporters + ", one transaction a request", partial(over_http, ingest=OneAtATime)))
    if not args.no_direct:
        paths.append(("Ingest.accept, no HTTP", direct))
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            for name, measure in paths:
                load = os.getloadavg()[0]
                rate = measure(spans, args.batch, Path(tmp) / str(round_), args.exporters)
                print(f"{name}: {rate:,.0f} spans/s ({len(spans):,} spans, batches of {args.batch}; load {load:.1f})")


if __name__ == "__main__":
    main()
