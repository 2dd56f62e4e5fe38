"""The receiver's own CPU a span: `cobalt collect`'s receiver (Collector + Ingest on a DuckDB store) in a
process of its own, N OpenTelemetry SDK exporters (`OTLPSpanExporter`, protobuf) posting batches at once
from this one; the receiver's CPU read from /proc while they post (the first batch, its imports and the
schema, before the measure). Run it with another tree's code first on PYTHONPATH to compare.

    .venv/bin/python benchmarks/collect_receiver.py --spans 20000 --batch 512 --exporters 8

Goal (issue 39): 10,000 spans/s on 2 cores, i.e. at most 100 us of receiver CPU a span.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))


def serve(path: Path, said: Any, stop: Any) -> None:
    from cobalt_lib.monitor import Collector, Ingest
    from cobalt_lib.store import Store

    collector = Collector(Ingest(Store(path)), "127.0.0.1", 0)
    collector.start()
    said.put(collector.url)
    stop.wait()
    before = os.times()
    collector.shutdown()
    collector.server_close()
    after = os.times()
    said.put(after.user + after.system - before.user - before.system)


def cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(spans: list, batch: int, exporters: int) -> None:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    batches = [spans[at:at + batch] for at in range(0, len(spans), batch)]
    context = mp.get_context("fork")
    with tempfile.TemporaryDirectory() as tmp:
        said, stop = context.Queue(), context.Event()
        receiver = context.Process(target=serve, args=(Path(tmp) / "cobalt.duckdb", said, stop))
        receiver.start()
        url = said.get()
        OTLPSpanExporter(endpoint=f"{url}/v1/traces").export(batches[0])  # imports and schema: not measured
        clients = [OTLPSpanExporter(endpoint=f"{url}/v1/traces") for _ in range(exporters)]
        rest = batches[1:]
        threads = [threading.Thread(target=lambda c=c, mine=rest[i::exporters]: [c.export(b) for b in mine])
                   for i, c in enumerate(clients)]
        load = os.getloadavg()[0]
        cpu, wall = cpu_of(receiver.pid), time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        cpu, wall = cpu_of(receiver.pid) - cpu, time.perf_counter() - wall
        stop.set()
        closing = said.get()
        receiver.join()
    count = sum(len(b) for b in rest)
    print(f"receiver process: {cpu / count * 1e6:.0f} us CPU a span = {count / cpu:,.0f} spans per CPU second "
          f"(+{closing * 1e3:.0f} ms to let the store go at the end); wall {count / wall:,.0f} spans/s; "
          f"{exporters} exporters, batches of {batch}; load {load:.1f}")


def main() -> None:
    from collect import agent_spans

    parser = argparse.ArgumentParser()
    parser.add_argument("--spans", type=int, default=20000)
    parser.add_argument("--batch", type=int, default=512)
    parser.add_argument("--exporters", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    spans = agent_spans(args.spans)
    for _ in range(args.rounds):
        measure(spans, args.batch, args.exporters)


if __name__ == "__main__":
    main()
