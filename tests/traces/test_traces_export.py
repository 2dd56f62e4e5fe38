"""Every evaluation goes out as an OpenTelemetry `gen_ai.evaluation.result` event, received here by an OTLP/HTTP
receiver on 127.0.0.1 that decodes the protobuf itself (opentelemetry-proto) and is checked field by field."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from conftest import TEST_KEY, http_server
from fakellm import answer
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from traced_agent import async_agent, per_city_replies

from cobalt_lib import ConfigError, Dataset, Evaluator, Store, experiment


class Receiver:
    """What the OTLP/HTTP receiver was sent: each request's path, headers and decoded body."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.lock = threading.Lock()

    def handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                with receiver.lock:
                    receiver.requests.append((self.path, dict(self.headers), body))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.end_headers()
                self.wfile.write(b"")

            def log_message(self, *args: Any) -> None:
                pass

        return Handler

    def records(self) -> list[tuple[Any, Any]]:
        """(resource, log record) of every record received."""
        found = []
        for _, _, body in self.requests:
            request = ExportLogsServiceRequest()
            request.ParseFromString(body)
            for resource_logs in request.resource_logs:
                for scope_logs in resource_logs.scope_logs:
                    found += [(resource_logs.resource, record) for record in scope_logs.log_records]
        return found


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Receiver, str]]:
    got = Receiver()
    with http_server(got.handler()) as url:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", url)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20otlp-SECRET-token")
        monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
        monkeypatch.delenv("OTEL_RESOURCE_ATTRIBUTES", raising=False)
        yield got, url


def attributes(record: Any) -> dict[str, Any]:
    def value(v: Any) -> Any:
        return getattr(v, v.WhichOneof("value"))
    return {kv.key: value(kv.value) for kv in record.attributes}


def test_each_evaluation_is_sent_as_a_gen_ai_evaluation_result_event(judged_project: Path, llm: Any,
                                                                     receiver: tuple[Receiver, str],
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    got, _ = receiver
    monkeypatch.setenv("COBALT_EXPORT_EVALUATIONS", "1")

    def replies(kind: str, body: dict[str, Any]) -> Any:
        if "Score" in str(body["messages"]) or "score" in str(body["messages"][0]["content"]):
            return answer(0.25, "the answer ignores the weather")
        return per_city_replies(kind, body)

    llm.respond = replies
    items = [{"id": "paris", "input": "weather in Paris", "expected_output": "final Paris"},
             {"id": "oslo", "input": "weather in Oslo", "expected_output": "sunny"}]
    report = experiment("exported", Dataset(items=items), async_agent(llm.openai_url), concurrency=2,
                        evaluators=[Evaluator(name="exact", type="exact-match"),
                                    Evaluator(name="judge", prompt="Score {{output}} against {{input}}")],
                        max_error_rate=1.0).run()
    records = got.records()
    assert {path for path, _, _ in got.requests} == {"/v1/logs"}
    assert all(headers.get("authorization") == "Bearer otlp-SECRET-token" for _, headers, _ in got.requests)
    assert len(records) == 4
    spans = Store(judged_project / ".cobalt" / "cobalt.duckdb").spans_of(report.id)
    by_key = {(attributes(r)["cobalt.item.id"], attributes(r)["gen_ai.evaluation.name"]): (res, r)
              for res, r in records}
    for item in report.items:
        root = next(s for s in spans[(item.index, 0)] if s.parent_id is None)
        for name in ("exact", "judge"):
            resource, record = by_key[(item.item_id, name)]
            ev = item.evaluations[name]
            assert record.event_name == "gen_ai.evaluation.result"
            assert record.trace_id.hex() == root.trace_id and record.span_id.hex() == root.span_id
            assert {kv.key: kv.value.string_value for kv in resource.attributes}["service.name"] == "cobalt"
            expected = {"gen_ai.evaluation.name": name, "gen_ai.evaluation.score.value": ev.score,
                        "gen_ai.evaluation.score.label": "pass" if ev.passed else "fail",
                        "gen_ai.evaluation.explanation": ev.reason, "gen_ai.response.id": "chatcmpl-fake",
                        "cobalt.run.id": report.id, "cobalt.experiment": "exported", "cobalt.item.index": item.index,
                        "cobalt.item.run_index": 0, "cobalt.item.id": item.item_id,
                        "cobalt.evaluation.cached": False}
            if name == "judge":
                expected["cobalt.judge.model"] = "openai/gpt-4o-mini"
            assert attributes(record) == expected
    assert attributes(by_key[("paris", "exact")][1])["gen_ai.evaluation.score.value"] == 1.0
    assert attributes(by_key[("oslo", "exact")][1])["gen_ai.evaluation.score.label"] == "fail"
    assert attributes(by_key[("oslo", "judge")][1])["gen_ai.evaluation.explanation"] == "the answer ignores the weather"
    sent = b"".join(body for _, _, body in got.requests)
    assert TEST_KEY.encode() not in sent and llm.openai_url.encode() not in sent and b"otlp-SECRET" not in sent


def test_nothing_is_sent_unless_asked_and_a_bad_switch_is_one_sentence(project: Path, receiver: tuple[Receiver, str],
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    got, _ = receiver
    experiment("quiet", Dataset(items=[{"input": "q", "expected_output": "a"}]), lambda ctx: "a",
               evaluators=[Evaluator(name="exact", type="exact-match")]).run()
    assert got.requests == []
    monkeypatch.setenv("COBALT_EXPORT_EVALUATIONS", "maybe")
    calls = []
    with pytest.raises(ConfigError) as raised:
        experiment("quiet", Dataset(items=[{"input": "q"}]), lambda ctx: calls.append(1) or "a").run()
    assert str(raised.value) == "COBALT_EXPORT_EVALUATIONS='maybe' is not a yes or no; set it to 1 or 0."
    assert calls == []


def test_credentials_in_the_endpoint_url_are_refused_before_any_agent_call(project: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COBALT_EXPORT_EVALUATIONS", "1")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "https://user:hunter2@collector.example.com")
    calls: list[int] = []
    with pytest.raises(ConfigError) as raised:
        experiment("secret", Dataset(items=[{"input": "q"}]), lambda ctx: calls.append(1) or "a").run()
    assert str(raised.value) == (
        "OTEL_EXPORTER_OTLP_ENDPOINT holds credentials in its URL, which the OpenTelemetry SDK prints in its export "
        "errors; put them in OTEL_EXPORTER_OTLP_HEADERS instead (e.g. authorization=Basic%20<base64>).")
    assert "hunter2" not in str(raised.value) and calls == []
