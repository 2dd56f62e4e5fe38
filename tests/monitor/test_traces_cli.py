"""`cobalt traces import|list|show|add` as a user runs them (in process, through `main`), and a bad file's
one sentence with exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from production_traces import ANSWER, QUESTION, memory_provider, run_agent

from cobalt_lib.cli import main


def cobalt(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    return int(exited.value.code or 0), out, err


def collector_file(path: Path) -> str:
    """A Collector file-exporter file of one trace (protobuf's JSON, ids as hex as OTLP JSON has them)."""
    import base64

    from google.protobuf.json_format import MessageToDict

    provider, memory = memory_provider()
    trace_id = run_agent(provider)
    document = MessageToDict(encode_spans(memory.get_finished_spans()))
    for span in document["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        for key in ("traceId", "spanId", "parentSpanId"):
            if key in span:
                span[key] = base64.b64decode(span[key]).hex()
    path.write_text(json.dumps(document) + "\n", encoding="utf-8")
    return trace_id


def test_import_list_show_and_add_a_trace_to_a_dataset(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace_id = collector_file(project / "traces.jsonl")
    assert cobalt(capsys, "traces", "import", "traces.jsonl")[:2] == (0, "Stored 4 spans from traces.jsonl.\n")

    code, out, _ = cobalt(capsys, "traces", "list")
    assert code == 0 and out.startswith(f"{trace_id}  support-bot") and "4 spans" in out
    code, out, _ = cobalt(capsys, "traces", "show", trace_id, "--json")
    shown = json.loads(out)
    assert (shown["input"], shown["output"], shown["service"]) == (QUESTION, ANSWER, "support-bot")
    assert shown["tool_calls"] == [{"name": "track", "arguments": {"parcel": "1234"}, "result": {"city": "Lyon"}}]

    for _ in range(2):  # the second time adds nothing
        code, out, _ = cobalt(capsys, "traces", "add", trace_id, "--to", "regressions.jsonl", "--expected", "Lyon")
        assert (code, out) == (0, f"Added item trace-{trace_id[:16]} to regressions.jsonl.\n")
    (item,) = [json.loads(line) for line in (project / "regressions.jsonl").read_text().splitlines()]
    assert (item["input"], item["expected_output"], item["production"]["trace_id"]) == (QUESTION, "Lyon", trace_id)

    # A stored dataset's name: the item added as its next version, once; an unknown name is one sentence.
    (project / "seed.jsonl").write_text('{"id": "q1", "input": "Hello?"}\n', encoding="utf-8")
    assert cobalt(capsys, "dataset", "push", "regressions", "seed.jsonl")[0] == 0
    code, out, _ = cobalt(capsys, "traces", "add", trace_id, "--to", "regressions")
    assert (code, out) == (0, f"Added item trace-{trace_id[:16]} to regressions@2.\n")
    code, out, _ = cobalt(capsys, "traces", "add", trace_id, "--to", "regressions")
    assert (code, out) == (0, f"Item trace-{trace_id[:16]} is already in regressions@2; no new version.\n")
    code, _, err = cobalt(capsys, "traces", "add", trace_id, "--to", "nosuch")
    assert code == 2 and "No dataset named 'nosuch' in the store" in err and "stored datasets: regressions." in err


def test_a_bad_line_and_an_unknown_trace_are_one_sentence_and_exit_2(project: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    (project / "bad.jsonl").write_text('{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "x"}]}]}]}\n')
    code, _, err = cobalt(capsys, "traces", "import", "bad.jsonl")
    assert code == 2
    assert err.strip() == ('error: bad.jsonl:1: a span lacks its "spanId" or "traceId". The 0 spans before it are '
                           "stored.")
    code, _, err = cobalt(capsys, "traces", "show", "ab" * 16)
    assert code == 2 and "No production trace abab" in err and "`cobalt traces list`" in err


MONITOR = '''
from cobalt_lib import Evaluator
from cobalt_lib.monitor import monitor

monitor("support", traces={"service.name": "support-bot"}, evaluators=[Evaluator(name="lyon", type="contains",
        value="Lyon")])
'''


def test_monitor_score_scores_a_window_and_reports_its_checks(project: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from datetime import UTC, datetime

    collector_file(project / "traces.jsonl")
    assert cobalt(capsys, "traces", "import", "traces.jsonl")[0] == 0
    (project / "experiments").mkdir()
    (project / "experiments" / "monitors.cobalt.py").write_text(MONITOR, encoding="utf-8")
    today = datetime.now(UTC).strftime("%Y-%m-%d")

    code, out, err = cobalt(capsys, "monitor", "score", "support", today)
    assert code == 0, err
    assert out.startswith(f"{today}: completed, 1 traces, judge $0, run monitor-support-{today}\n")
    assert "  ok lyon: Not tested: lyon has 1 scored windows" in out
    code, _, err = cobalt(capsys, "monitor", "score", "nobody", today)
    assert code == 2 and "No monitor 'nobody' is declared" in err and "(declared: support)" in err
