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
    # the pages' list of the traces this monitor scored, paged in SQL, newest first (on either backend)
    scored = [t["trace_id"] for t in store.trace_list() if t["trace_id"] in expected]
    assert [t["trace_id"] for t in store.trace_list(monitor="support", limit=5, offset=2)] == scored[2:7]
    assert store.trace_filters() == {"services": ["support-bot"], "monitors": ["support"]}
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


def test_a_window_reads_traces_from_summaries_or_parts_and_trace_evaluators_score_their_stored_spans(
        project: Path) -> None:
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

    # trace evaluators score the production spans stored (both traces': the summary's and the parts')
    traced = monitor("traced", traces={"service.name": "support-bot"}, evaluators=[
        Evaluator(name="calls", type="max_model_calls", n=1),
        Evaluator(name="tools", type="max_tool_calls", n=1, source="trace"),
        Evaluator(name="tracked", type="has_span", span_name="execute_tool track", span_kind="tool"),
        Evaluator(name="spans", type="function", fn=lambda ctx: len(ctx.spans) / 4)])
    result = score_window(traced, DAY, config)
    scores = store.query("SELECT o.item_id, s.evaluator, s.score, s.reason FROM scores s JOIN outputs o USING "
                         "(run_id, item_index, run_index) WHERE run_id = ?", [result.run_id])
    by = {(r["item_id"], r["evaluator"]): (r["score"], r["reason"]) for r in scores}
    for trace_id in (whole, parts):
        assert by[trace_id, "calls"] == (0.0, "2 model calls, over 1")
        assert by[trace_id, "tools"] == (1.0, "1 tool call, within 1")
        assert by[trace_id, "tracked"][0] == 1.0 and by[trace_id, "spans"][0] == 1.0
    stored = store.query("SELECT o.item_id, count(*) AS n FROM spans p JOIN outputs o USING (run_id, item_index, "
                         "run_index) WHERE run_id = ? GROUP BY o.item_id", [result.run_id])
    assert {r["item_id"]: r["n"] for r in stored} == {whole: 4, parts: 4}  # with the run's items, as a traced call's
    plain = store.query("SELECT count(*) AS n FROM spans WHERE run_id = ?", [f"monitor-parts-{DAY}"])
    assert plain[0]["n"] == 0  # a window without a trace evaluator reads no span of a whole trace, stores none


def chat_trace(provider: object, said: list[tuple[str, str]], at_ns: int) -> str:
    """A chat agent's trace: its last model call given the conversation so far, answering the last turn."""
    import json

    from opentelemetry.sdk.trace import TracerProvider

    assert isinstance(provider, TracerProvider)
    history = [m for user, answer in said[:-1] for m in (("user", user), ("assistant", answer))]
    asked = [*history, ("user", said[-1][0])]
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
                  "gen_ai.input.messages": json.dumps([{"role": r, "parts": [{"type": "text", "content": c}]}
                                                       for r, c in asked]),
                  "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                      {"type": "text", "content": said[-1][1]}]}])}
    span = provider.get_tracer("chat").start_span("chat gpt-4o-mini", attributes=attributes, start_time=at_ns)
    span.end(end_time=at_ns + 10**6)
    return format(span.get_span_context().trace_id, "032x")


def test_a_multi_turn_trace_scores_as_a_conversation_with_the_answers_it_recorded(judged_project: Path,
                                                                                 llm: FakeLLM) -> None:
    import json

    from fakellm import text
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from production_traces import memory_provider

    from cobalt_lib.monitor import read_trace
    from cobalt_lib.monitor._monitor import window_item
    from cobalt_lib.monitor._otlp import from_protobuf

    store = Store.for_config(load_config())
    provider, memory = memory_provider()
    said = [("Hello", "What is your order number?"), ("It is 77", "Order 77 ships today.")]
    chat = chat_trace(provider, said, window_bounds(DAY)[0])
    Ingest(store).accept(from_protobuf(encode_spans(memory.get_finished_spans()).SerializeToString()))
    verdicts = {"verdicts": [{"turn": 1, "forgets": False, "reason": "asks once"},
                             {"turn": 2, "forgets": True, "reason": "forgot the greeting"}]}
    llm.respond = lambda kind, body: text(json.dumps(verdicts))
    watch = monitor("chats", traces={"service.name": "support-bot"}, evaluators=[
        Evaluator("memory", type="knowledge_retention"), Evaluator("ships", type="contains", value="ships",
                                                                   per_turn=True)])
    result = score_window(watch, DAY, load_config())

    assert result.status == "completed" and result.traces == 1
    row = store.query("SELECT item_id, output FROM outputs WHERE run_id = ?", [result.run_id])[0]
    assert row["item_id"] == chat
    output = row["output"]
    assert output == [{"role": r, "content": c} for u, a in said for r, c in (("user", u), ("assistant", a))]
    scores = {r["evaluator"]: r for r in store.query("SELECT evaluator, score, turns FROM scores WHERE run_id = ?",
                                                     [result.run_id])}
    assert scores["memory"]["score"] == 0.5 and [t["score"] for t in scores["memory"]["turns"]] == [1.0, 0.0]
    assert [t["score"] for t in scores["ships"]["turns"]] == [0.0, 1.0]  # each recorded answer, its own turn
    prompt = str(llm.requests[0]["body"]["messages"])
    assert "Turn 1\\nuser: Hello\\nassistant: What is your order number?\\nTurn 2\\nuser: It is 77" in prompt

    from production_traces import ANSWER, QUESTION, run_agent

    provider, memory = memory_provider()
    one = run_agent(provider)
    single = read_trace(one, [s for s in store_spans(memory)], service="support-bot")
    assert window_item(single) == {"id": one, "input": QUESTION, "production": {
        "trace_id": one, "output": ANSWER, "service": "support-bot"}}
    assert window_item(single, conversational=True) == {  # with a conversational evaluator: a one-turn chat
        "id": one, "input": QUESTION, "conversation": {"turns": [QUESTION]},
        "production": {"trace_id": one, "output": ANSWER, "service": "support-bot", "answers": [ANSWER]}}


def store_spans(memory: object) -> list[object]:
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    from cobalt_lib.monitor._otlp import from_protobuf

    return [r.span for r in from_protobuf(encode_spans(memory.get_finished_spans()).SerializeToString())]  # type: ignore[attr-defined]
