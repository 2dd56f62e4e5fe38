"""`cobalt collect`'s receiver fed by the OpenTelemetry SDK's own OTLP/HTTP exporter, the Collector's file
format imported, and the guards: a foreign Host, no token off loopback, an oversize or malformed body."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from production_traces import ANSWER, QUESTION, memory_provider, one_export, run_agent
from stores import MakeStore

from cobalt_lib.monitor import BadPayload, Collector, Ingest, ProductionTrace, read_trace
from cobalt_lib.store import Store


@pytest.fixture
def store(make_store: MakeStore) -> Store:
    """A fresh store of each backend (tests/stores.py)."""
    return make_store()


@pytest.fixture
def collector(store: Store) -> Iterator[Collector]:
    server = Collector(Ingest(store), "127.0.0.1", 0, max_body_bytes=64 * 1024)
    server.start()
    yield server
    server.shutdown()
    server.server_close()


def exporting_provider(url: str, *, headers: dict[str, str] | None = None,
                       compression: Compression | None = None) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"service.name": "support-bot"}))
    exporter = OTLPSpanExporter(endpoint=f"{url}/v1/traces", headers=headers, compression=compression)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


def stored_trace(store: Store, trace_id: str) -> ProductionTrace:
    return read_trace(trace_id, store.trace_spans_of([trace_id])[trace_id], prices={"gpt-4o-mini": (0.15, 0.6)})


def test_the_sdks_exporter_stores_the_agents_trace_with_its_input_output_and_tools(collector: Collector,
                                                                                  store: Store) -> None:
    provider = exporting_provider(collector.url, compression=Compression.Gzip)
    trace_id = run_agent(provider)
    provider.shutdown()

    trace = stored_trace(store, trace_id)
    assert trace.input == QUESTION and trace.output == ANSWER
    assert [(c.name, c.arguments, c.result) for c in trace.tool_calls] == [
        ("track", {"parcel": "1234"}, {"city": "Lyon"})]
    usage = trace.usage
    assert (usage["llm_calls"], usage["input_tokens"], usage["output_tokens"], usage["model"]) == (2, 280, 27,
                                                                                                  "gpt-4o-mini")
    assert usage["cost_usd"] == pytest.approx((280 * 0.15 + 27 * 0.6) / 1e6)
    assert trace.conversation[-1] == {"role": "assistant", "content": ANSWER}
    assert store.trace_list(service="support-bot", span="invoke_agent support") == [
        {"trace_id": trace_id, "service": "support-bot", "start_ns": trace.start_ns, "spans": 4}]
    assert collector.accepted == 4


def collector_file_line(provider_spans: Sequence[ReadableSpan], *, base64_ids: bool = False) -> str:
    """One line as the Collector's file exporter writes it: the OTLP JSON encoding (ids as hex)."""
    from google.protobuf.json_format import MessageToDict

    document = MessageToDict(encode_spans(provider_spans))
    if not base64_ids:  # protobuf's own JSON keeps bytes as base64; OTLP JSON (the Collector's) as hex
        import base64

        for resource in document["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    for key in ("traceId", "spanId", "parentSpanId"):
                        if key in span:
                            span[key] = base64.b64decode(span[key]).hex()
    return json.dumps(document)


def test_a_collector_file_imports_to_the_same_trace_both_id_encodings(store: Store, tmp_path: Path) -> None:
    provider, memory = memory_provider()
    first, second = run_agent(provider), run_agent(provider, "Cancel order 77")
    spans = list(memory.get_finished_spans())
    path = tmp_path / "traces.jsonl.gz"
    with gzip.open(path, "wt") as out:
        out.write(collector_file_line(spans[:4]) + "\n\n" + collector_file_line(spans[4:], base64_ids=True) + "\n")

    assert Ingest(store).import_file(path) == 8
    assert stored_trace(store, first).input == QUESTION
    assert stored_trace(store, second).input == "Cancel order 77"
    assert stored_trace(store, second).output == ANSWER
    # each trace's summary row, read back on this backend as a window reads it (its JSON columns decoded)
    summaries = store.trace_summaries_of([second, first, "0" * 32, first])
    assert sorted(summaries) == sorted([first, second]) and all(len(rows) == 1 for rows in summaries.values())
    row = summaries[second][0]
    assert (row["service"], row["spans"], row["failed"], row["input"], row["output"], row["llm_calls"]) == (
        "support-bot", 4, False, "Cancel order 77", ANSWER, 2)
    assert row["conversation"] == [{"role": "user", "content": "Cancel order 77"},
                                   {"role": "assistant", "content": ANSWER}]
    assert row["model_tokens"] == {"gpt-4o-mini": [280, 27]}
    assert row["tool_calls"] == [{"name": "track", "arguments": {"parcel": "1234"}, "result": {"city": "Lyon"},
                                  "call_id": None}]
    assert row["start_ns"] == stored_trace(store, second).start_ns
    scored = store.trace_summaries_of([first], columns=("input", "output"))[first][0]
    assert set(scored) == {"trace_id", "spans", "cut_values", "input", "output"} and scored["input"] == QUESTION


def test_a_bad_line_names_itself_and_keeps_the_spans_before_it(store: Store, tmp_path: Path) -> None:
    provider, memory = memory_provider()
    trace_id = run_agent(provider)
    path = tmp_path / "traces.jsonl"
    path.write_text(collector_file_line(list(memory.get_finished_spans())) + "\n{not json\n")

    with pytest.raises(BadPayload, match=rf"^{path}:2 is not JSON .*the 4 spans before it are stored\.$"):
        Ingest(store).import_file(path)
    assert len(store.trace_spans_of([trace_id])[trace_id]) == 4


def post(url: str, body: bytes, **headers: str) -> httpx.Response:
    return httpx.post(f"{url}/v1/traces", content=body, headers={"Content-Type": "application/x-protobuf", **headers})


def test_refused_bodies_store_nothing_and_lose_nothing_accepted(collector: Collector, store: Store) -> None:
    body, kept = one_export()
    assert post(collector.url, body).status_code == 200

    malformed = post(collector.url, b"\x0a\xff\xff\xff garbage")
    assert malformed.status_code == 400
    assert "not an OTLP protobuf ExportTraceServiceRequest" in malformed.content.decode(errors="replace")
    bad_json = httpx.post(f"{collector.url}/v1/traces", content=b'{"resourceSpans": 3}',
                          headers={"Content-Type": "application/json"})
    assert (bad_json.status_code, bad_json.json()["message"]) == (
        400, 'The body is not an OTLP JSON trace export: expected an object with a "resourceSpans" list.')
    oversize = post(collector.url, b"\0" * (65 * 1024))
    assert oversize.status_code == 413 and "over the 65,536 taken" in oversize.text
    bomb = post(collector.url, gzip.compress(b"\0" * (1024 * 1024)), **{"Content-Encoding": "gzip"})
    assert bomb.status_code == 413 and "inflates past 65,536 bytes" in bomb.content.decode(errors="replace")
    foreign = post(collector.url, one_export("evil")[0], Host="evil.example:4318")
    assert foreign.status_code == 421

    assert [t["trace_id"] for t in store.trace_list()] == [kept]
    assert len(store.trace_spans_of([kept])[kept]) == 4


def test_off_loopback_a_token_is_required(store: Store) -> None:
    server = Collector(Ingest(store), "0.0.0.0", 0, token="t" * 32)
    server.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        body, _ = one_export()
        assert post(url, body).status_code == 401
        assert post(url, body, Authorization="Bearer wrong").status_code == 401
        assert store.trace_list() == []
        provider = exporting_provider(url, headers={"Authorization": "Bearer " + "t" * 32})
        sent = run_agent(provider)
        provider.shutdown()
    finally:
        server.shutdown()
        server.server_close()
    assert [t["trace_id"] for t in store.trace_list()] == [sent]


def test_the_redaction_hook_runs_before_anything_is_stored(store: Store) -> None:
    def redact(span: dict[str, object]) -> dict[str, object] | None:
        if span["name"] == "execute_tool track":
            return None
        attributes = dict(span["attributes"])  # type: ignore[call-overload]
        attributes["gen_ai.input.messages"] = "[redacted]"
        return {**span, "attributes": attributes}

    server = Collector(Ingest(store, redact=redact), "127.0.0.1", 0)
    server.start()
    try:
        provider = exporting_provider(server.url)
        trace_id = run_agent(provider)
        provider.shutdown()
    finally:
        server.shutdown()
        server.server_close()
    spans = store.trace_spans_of([trace_id])[trace_id]
    assert [s.name for s in spans] == ["invoke_agent support", "chat gpt-4o-mini", "chat gpt-4o-mini"]
    assert {s.attributes.get("gen_ai.input.messages") for s in spans} == {"[redacted]"}


def test_traces_past_keep_days_are_pruned_as_new_ones_arrive(store: Store) -> None:
    import time

    from production_traces import store_traces

    old = store_traces(Ingest(store), [("old question", "old answer")], at_ns=time.time_ns() - 3 * 86_400 * 10**9)
    assert [t["trace_id"] for t in store.trace_list()] == old
    new = store_traces(Ingest(store, keep_days=2), [("new question", "new answer")], at_ns=time.time_ns())
    assert [t["trace_id"] for t in store.trace_list()] == new
    assert store.trace_spans_of(old) == {} and store.trace_summaries_of(old) == {}
    assert list(store.trace_summaries_of(new)) == new


def test_serves_receiver_steps_aside_when_its_port_is_taken(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from cobalt_lib import load_config
    from cobalt_lib.cli._collect import start_collector

    config = load_config()
    first = start_collector(config, port=0)
    assert first is not None
    try:
        assert start_collector(config, port=first.server_address[1]) is None
        assert f"not receiving OTLP traces: 127.0.0.1:{first.server_address[1]} is taken" in capsys.readouterr().err
        body, trace_id = one_export()
        assert post(first.url, body).status_code == 200
    finally:
        first.shutdown()
        first.server_close()
    assert [t["trace_id"] for t in Store.for_config(config).trace_list()] == [trace_id]


def test_a_busy_store_answers_503_to_retry_and_the_retry_is_stored(tmp_path: Path) -> None:
    # DuckDB only: one writer holds the file; a team store takes writers at once and is never busy so
    import threading

    store = Store(tmp_path / ".cobalt" / "cobalt.duckdb", lock_timeout=0.2)
    store.ensure_schema()
    server = Collector(Ingest(store), "127.0.0.1", 0)
    server.start()
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:  # another writer of the store (a run finishing), for as long as the test says
        with store.connect():
            holding.set()
            release.wait()

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        holding.wait()
        body, trace_id = one_export()
        busy = post(server.url, body)
        assert (busy.status_code, busy.headers["Retry-After"]) == (503, "1")
        release.set()
        holder.join()
        assert post(server.url, body).status_code == 200  # what an OTLP exporter does on 503
    finally:
        release.set()
        server.shutdown()
        server.server_close()
    assert [t["trace_id"] for t in store.trace_list()] == [trace_id]


class CountingStore(Store):
    """The real store, noting the spans of each transaction `Ingest` asks of it (the rows go in as ever)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.transactions: list[list[str]] = []

    def add_trace_spans(self, rows: list[dict[str, Any]], summaries: Sequence[dict[str, Any]] = ()) -> int:
        self.transactions.append(sorted(str(row["trace_id"]) for row in rows))
        return super().add_trace_spans(rows, summaries)


def test_requests_arriving_together_are_stored_in_one_transaction_each_span_once(tmp_path: Path) -> None:
    import threading

    from slowdown import scaled

    store = CountingStore(tmp_path / ".cobalt" / "cobalt.duckdb", lock_timeout=scaled(60))
    store.ensure_schema()
    ingest = Ingest(store)
    server = Collector(ingest, "127.0.0.1", 0)
    server.start()
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:  # another writer of the store, so the first commit waits while the others arrive
        with store.connect():
            holding.set()
            release.wait()

    exports = [one_export(f"question {n}") for n in range(4)]
    answered: dict[str, tuple[int, int]] = {}

    def send(body: bytes, trace_id: str) -> None:  # an exporter; once told 200, its spans must be in
        status = post(server.url, body).status_code
        answered[trace_id] = (status, len(store.trace_spans_of([trace_id]).get(trace_id, [])))

    holder = threading.Thread(target=hold)
    holder.start()
    first = threading.Thread(target=send, args=exports[0])
    try:
        holding.wait()
        first.start()
        assert ingest.wait_for_queued(0, scaled(30))  # the first request's commit is under way, waiting for the store
        others = [threading.Thread(target=send, args=export) for export in exports[1:]]
        for thread in others:
            thread.start()
        assert ingest.wait_for_queued(3, scaled(30))  # the three arrived while the first commit waits
        release.set()
        for thread in [first, *others]:
            thread.join()
    finally:
        release.set()
        holder.join()
        server.shutdown()
        server.server_close()
    ids = [trace_id for _, trace_id in exports]
    assert store.transactions == [[ids[0]] * 4, sorted(ids[1:] * 4)]
    assert answered == dict.fromkeys(ids, (200, 4))
    with store.connect(read_only=True) as con:
        stored = con.execute("SELECT trace_id, count(*) FROM trace_spans GROUP BY trace_id").fetchall()
    assert dict(stored) == dict.fromkeys(ids, 4)
