"""A monitor's window scored as a run: its sampled traces the items, their recorded outputs replayed, the
same traces on every scoring, no double rows, and a judge budget that stops the window saying so."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from conftest import TEST_KEY, write_judge_config
from fakellm import FakeLLM, answer
from production_traces import store_traces

from cobalt_lib import Evaluator, load_config
from cobalt_lib.monitor import Ingest, monitor, sampled, score_window, window_bounds
from cobalt_lib.store import Store

DAY = "2026-11-20"


def seeded(project: Path, n: int = 40) -> Store:
    config = load_config()
    store = Store.for_config(config)
    start, _ = window_bounds(DAY)
    answers = [(f"Where is parcel {1000 + i}?", "It is in Lyon." if i % 4 else "I cannot say.") for i in range(n)]
    store_traces(Ingest(store), answers, at_ns=start)
    store_traces(Ingest(store), answers[:5], at_ns=start - 3600 * 10**9)  # the day before: not in the window
    return store


@pytest.mark.parametrize("backend", ["duckdb", pytest.param("postgres", marks=pytest.mark.slow)])
def test_a_window_scores_its_sample_once_however_often_it_is_scored(
        project: Path, backend: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    if backend == "postgres":  # traces in, sampled and scored, on the team store
        monkeypatch.setenv("COBALT_STORE_URL", request.getfixturevalue("pg_url"))
    store = seeded(project)
    watch = monitor("support", traces={"service.name": "support-bot", "span": "invoke_agent support"}, sample=0.5,
                    evaluators=[Evaluator(name="lyon", type="contains", value="Lyon")])
    first = score_window(watch, DAY, load_config())
    again = score_window(watch, DAY, load_config())

    in_window = [t["trace_id"] for t in store.trace_list(since_ns=window_bounds(DAY)[0])]
    expected = sorted(t for t in in_window if sampled("support", t, 0.5))
    assert 10 < len(expected) < 30 and first.traces == again.traces == len(expected)
    run = store.get_run(first.run_id)
    assert run is not None and (run["source"], run["status"]) == ("monitor", "completed")
    rows = store.query("SELECT item_id, score FROM scores JOIN outputs USING (run_id, item_index, run_index) "
                       "WHERE run_id = ? ORDER BY item_id", [first.run_id])
    assert [r["item_id"] for r in rows] == expected  # one row per sampled trace, after two scorings
    outputs = store.query("SELECT output FROM outputs WHERE run_id = ?", [first.run_id])
    assert {o["output"] for o in outputs} == {"It is in Lyon.", "I cannot say."}


def test_a_window_over_its_budget_is_incomplete_and_says_so(project: Path, llm: FakeLLM,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    write_judge_config(project, llm)
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    store = seeded(project, 12)
    llm.script(*[answer(0.9)] * 12)
    per_call = (20 * 0.15 + 10 * 0.60) / 1e6
    watch = monitor("budgeted", traces={"service.name": "support-bot"}, budget_usd=per_call * 3.5,
                    evaluators=[Evaluator(name="helpful", prompt="Q: {{input}}\nA: {{output}}")])
    result = score_window(watch, DAY, load_config().model_copy(update={"concurrency": 1}))

    assert result.status == "incomplete" and result.traces == 12
    assert result.note is not None and result.note.startswith(f"Window {DAY} is incomplete: its judge budget of $")
    run = store.get_run(result.run_id)
    assert run is not None and run["status"] == "incomplete"
    assert run["summary"]["notes"]["budget"] == result.note
    scored = store.query("SELECT count(*) AS n FROM scores WHERE run_id = ?", [result.run_id])[0]["n"]
    assert 4 <= scored < 12


def test_windows_are_utc_days() -> None:
    start, end = window_bounds(DAY)
    assert datetime.fromtimestamp(start / 1e9, UTC).isoformat() == "2026-11-20T00:00:00+00:00"
    assert (end - start) == 86_400 * 10**9


def test_a_window_reads_a_whole_trace_from_its_summary_and_one_received_in_parts_from_its_spans(project: Path) -> None:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from production_traces import memory_provider, run_agent

    from cobalt_lib.monitor import read_trace
    from cobalt_lib.monitor._monitor import window_traces
    from cobalt_lib.monitor._otlp import from_protobuf

    config = load_config(project).model_copy(update={"prices": {}})
    store = Store.for_config(config)
    ingest = Ingest(store)
    provider, memory = memory_provider()
    start, _ = window_bounds(DAY)
    whole = run_agent(provider, "Where is parcel 1?", "In Lyon.", at_ns=start)
    parts = run_agent(provider, "Where is parcel 2?", "In Nantes.", at_ns=start + 10**9)
    spans = list(memory.get_finished_spans())
    for batch in (spans[:4], spans[4:6], spans[6:]):  # the second trace's spans in two requests, as exporters cut them
        ingest.accept(from_protobuf(encode_spans(batch).SerializeToString()))
    watch = monitor("parts", traces={"service.name": "support-bot"}, evaluators=[
        Evaluator(name="lyon", type="contains", value="Lyon")])

    read = {t.trace_id: t for t in window_traces(watch, DAY, config)}
    assert (len(read[whole].spans), len(read[parts].spans)) == (0, 4)  # the summary; the spans
    from_spans = read_trace(whole, store.trace_spans_of([whole])[whole], service="support-bot")
    for field in ("input", "output", "conversation", "tool_calls", "usage", "failed", "start_ns", "service", "tokens"):
        assert getattr(read[whole], field) == getattr(from_spans, field), field
    assert (read[whole].output, read[parts].input, read[parts].output) == (
        "In Lyon.", "Where is parcel 2?", "In Nantes.")
    assert read[whole].tool_calls[0].name == "track" and read[whole].usage["input_tokens"] == 280
    assert len(store.trace_summaries_of([parts])[parts]) == 2  # neither part whole: the spans are read
    result = score_window(watch, DAY, config)
    scores = store.query("SELECT item_id, score FROM scores JOIN outputs USING (run_id, item_index, run_index) "
                         "WHERE run_id = ? ORDER BY item_id", [result.run_id])
    assert {r["item_id"]: r["score"] for r in scores} == {whole: 1.0, parts: 0.0}
