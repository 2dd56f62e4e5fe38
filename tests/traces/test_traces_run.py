"""Spans an instrumented agent emits land on the item whose call made them, under concurrency, for a sync
agent (worker threads) and an async one (tasks); the model spans' usage becomes the item's cost; the
trajectory kinds read the tool calls from the trace."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from stores import project_store
from traced_agent import MODEL, async_agent, per_city_replies, sync_agent

from cobalt_lib import Dataset, Evaluator, experiment, load_config
from cobalt_lib.llm._pricing import cost_usd
from cobalt_lib.run._execute import execute
from cobalt_lib.run._plan import prepare
from cobalt_lib.run._requests import RescoreRun
from cobalt_lib.store._history import load_report

#: Every test on both backends: the project's DuckDB file, and a team store (COBALT_STORE_URL).
pytestmark = pytest.mark.usefixtures("store_url")

CITIES = ["Paris", "Oslo", "Lima", "Reykjavik", "Rome", "Kyiv", "Quito", "Accra", "Hanoi", "Bern", "Dakar", "Sucre"]


def dataset() -> Dataset:
    items = [{"id": f"w{i}", "input": f"weather in {city}",
              "expected_tool_calls": [{"name": "get_weather", "arguments": {"city": city}}]}
             for i, city in enumerate(CITIES)]
    # item 0 also expects a forecast it never asks for: half of its expected calls are made
    items[0]["expected_tool_calls"] = [{"name": "get_weather", "arguments": {"city": "Paris"}},
                                       {"name": "get_forecast"}]
    return Dataset(items=items)


EVALUATORS = [
    Evaluator(name="tools", type="tool_call_match", source="trace"),
    Evaluator(name="calls", type="max_tool_calls", n=1, source="trace"),
    Evaluator(name="valid", type="tool_calls_valid", source="trace",
              schema={"get_weather": {"type": "object", "required": ["city"],
                                      "properties": {"city": {"type": "string"}}}}),
    Evaluator(name="two-model-calls", type="max_model_calls", n=2),
    Evaluator(name="asked-the-model", type="has_span", span_kind="model",
              attributes={"gen_ai.request.model": MODEL}, min_count=2),
]


@pytest.mark.parametrize("flavour", ["sync", "async"])
def test_spans_land_on_their_items_under_concurrency(project: Path, llm: Any, flavour: str) -> None:
    llm.respond = per_city_replies
    agent = (sync_agent if flavour == "sync" else async_agent)(llm.openai_url)
    report = experiment(f"weather-{flavour}", dataset(), agent, evaluators=EVALUATORS, concurrency=6).run()
    assert llm.max_inflight > 1  # the items' calls really overlapped
    store = project_store(project)
    spans = store.spans_of(report.id)
    assert sorted(spans) == [(i, 0) for i in range(len(CITIES))]
    trace_ids = set()
    for item in report.items:
        city = CITIES[item.index]
        mine = spans[(item.index, 0)]
        assert [s.name for s in sorted(mine, key=lambda s: s.start_ns)] == [
            "invoke_agent weather", f"chat {MODEL}", "execute_tool get_weather", f"chat {MODEL}"]
        assert [s.kind for s in mine] == ["model", "tool", "model", "agent"]  # the order they ended
        assert len({s.trace_id for s in mine}) == 1
        trace_ids.add(mine[0].trace_id)
        root = next(s for s in mine if s.kind == "agent")
        assert all(s.parent_id == root.span_id for s in mine if s is not root)
        tool = next(s for s in mine if s.kind == "tool")
        assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {"city": city}
        answers = [json.loads(s.attributes["gen_ai.output.messages"])[0]["parts"][0]["content"]
                   for s in sorted(mine, key=lambda s: s.start_ns) if s.kind == "model"]
        assert answers == [f"checking {city}", f"final {city}"]
        # the model spans' usage is the item's: 1x and 2x the city's length in, 3 + 3 out
        assert item.output == f"final {city}"
        assert {k: item.metadata[k] for k in ("llm_calls", "input_tokens", "output_tokens", "model")} == {
            "llm_calls": 2, "input_tokens": 3 * len(city), "output_tokens": 6, "model": MODEL}
        assert item.tokens == 3 * len(city) + 6
        assert item.cost_usd == pytest.approx(cost_usd(MODEL, 3 * len(city), 6))
        scores = {name: ev.score for name, ev in item.evaluations.items()}
        assert scores == {"tools": 0.5 if item.index == 0 else 1.0, "calls": 1.0, "valid": 1.0,
                          "two-model-calls": 1.0, "asked-the-model": 1.0}, item.index
    assert len(trace_ids) == len(CITIES)
    reason = report.items[0].evaluations["tools"].reason
    assert reason == "1/2 matched: missing get_forecast"
    assert report.summary.agent_cost == pytest.approx(sum(cost_usd(MODEL, 3 * len(c), 6) or 0 for c in CITIES))


def test_an_agent_without_spans_has_no_trace_and_trace_kinds_say_why(project: Path) -> None:
    report = experiment("plain", Dataset(items=[{"input": "q", "expected_tool_calls": []}]), lambda ctx: "a",
                        evaluators=[Evaluator(name="tools", type="tool_call_match", source="trace"),
                                    Evaluator(name="cap", type="max_model_calls", n=3)],
                        max_error_rate=1.0).run()
    [item] = report.items
    assert project_store(project).spans_of(report.id) == {}
    assert item.metadata == {} and item.cost_usd is None
    assert item.evaluations["tools"].status == "eval-error"
    assert item.evaluations["tools"].error == (
        "the item's trace has no spans, so its tool calls cannot be read from it: instrument the agent with "
        'OpenTelemetry (docs/traces.md), or read the calls it reports (source="metadata")')
    assert item.evaluations["cap"].error == (
        "the item's trace has no spans, so its model calls cannot be read from it: instrument the agent with "
        "OpenTelemetry (docs/traces.md)")


def test_a_rescore_scores_the_stored_trace_and_keeps_it(project: Path, llm: Any) -> None:
    llm.respond = per_city_replies
    exp = experiment("weather-rescore", dataset(), sync_agent(llm.openai_url), evaluators=EVALUATORS[:1],
                     concurrency=4)
    first = exp.run()
    called = llm.count()
    exp.evaluators = [*EVALUATORS[:1], Evaluator(name="one-call", type="max_model_calls", n=1)]
    store = project_store(project)
    request = RescoreRun(parent_run_id=first.id, outputs=load_report(store, first.id).items)
    again = asyncio.run(execute(prepare(exp, load_config(), request)))
    assert llm.count() == called  # no agent call
    assert [i.evaluations["one-call"].reason for i in again.items] == ["2 model calls, over 1"] * len(CITIES)
    assert [i.evaluations["tools"].score for i in again.items] == [0.5] + [1.0] * (len(CITIES) - 1)
    kept = store.spans_of(again.id)
    assert {k: [s.span_id for s in v] for k, v in kept.items()} == {
        k: [s.span_id for s in v] for k, v in store.spans_of(first.id).items()}


def test_spans_from_the_agents_own_threads_land_on_its_item_through_their_parent(project: Path) -> None:
    """A span started in a thread of the agent's own (no context variable there) is the item's when the agent
    carried its OpenTelemetry context into the thread, as instrumented thread pools do."""
    from concurrent.futures import ThreadPoolExecutor

    from opentelemetry import context as otel_context
    from opentelemetry import trace

    tracer = trace.get_tracer("threaded")
    pool = ThreadPoolExecutor(4)

    def work(ctx: Any, carried: Any) -> None:
        token = otel_context.attach(carried)
        try:
            with tracer.start_as_current_span(f"work {ctx.index}"):
                pass
        finally:
            otel_context.detach(token)

    def agent(ctx: Any) -> str:
        with tracer.start_as_current_span(f"agent {ctx.index}"):
            pool.submit(work, ctx, otel_context.get_current()).result()
            pool.submit(lambda: tracer.start_span("orphan").end()).result()  # no context carried: nobody's
        return "done"

    report = experiment("threaded", Dataset(items=[{"input": i} for i in range(6)]), agent, concurrency=3).run()
    pool.shutdown()
    spans = project_store(project).spans_of(report.id)
    assert {key: sorted(s.name for s in found) for key, found in spans.items()} == {
        (i, 0): [f"agent {i}", f"work {i}"] for i in range(6)}


def test_a_failed_calls_spans_are_kept_and_past_max_spans_they_are_counted(project: Path) -> None:
    from opentelemetry import trace

    tracer = trace.get_tracer("capped")

    def agent(ctx: Any) -> str:
        for step in range(5):
            with tracer.start_as_current_span(f"step {step}") as span:
                if ctx.index == 1 and step == 1:
                    span.set_status(trace.StatusCode.ERROR, "the tool broke")
                    raise RuntimeError("the tool broke")
        return "done"

    config = load_config()
    config.traces.max_spans = 3
    config.ci.max_error_rate = 1.0
    report = experiment("capped", Dataset(items=[{"input": 0}, {"input": 1}]), agent).run(config=config)
    ok, failed = report.items
    assert (ok.status, ok.metadata) == ("ok", {"spans_dropped": 2})
    assert failed.status == "error"
    spans = project_store(project).spans_of(report.id)
    assert [s.name for s in spans[(0, 0)]] == ["step 0", "step 1", "step 2"]
    assert [(s.name, s.status, s.status_message) for s in spans[(1, 0)]] == [
        ("step 0", "unset", None), ("step 1", "error", "RuntimeError: the tool broke")]  # the SDK's own wording
    assert spans[(1, 0)][1].events[0]["name"] == "exception"


def test_no_span_is_collected_when_collect_is_off(project: Path) -> None:
    from opentelemetry import trace

    tracer = trace.get_tracer("off")

    def agent(ctx: Any) -> str:
        with tracer.start_as_current_span("chat") as span:
            span.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 5})
        return "done"

    config = load_config()
    config.traces.collect = False
    report = experiment("off", Dataset(items=[{"input": 0}]), agent).run(config=config)
    assert project_store(project).spans_of(report.id) == {}
    assert report.items[0].metadata == {}


def test_a_span_the_agent_never_ends_does_not_keep_its_items_trace_alive(project: Path) -> None:
    import gc
    import weakref

    from opentelemetry import trace

    from cobalt_lib.traces._collect import ItemTrace

    tracer = trace.get_tracer("leaky")
    traces: list[weakref.ref[ItemTrace]] = []

    def agent(ctx: Any) -> str:
        from cobalt_lib.traces._collect import current_trace

        traces.append(weakref.ref(current_trace.get()))  # type: ignore[arg-type]
        tracer.start_span("never ended")
        with tracer.start_as_current_span("ended"):
            pass
        return "done"

    report = experiment("leaky", Dataset(items=[{"input": i} for i in range(3)]), agent).run()
    assert [[s.name for s in i.spans] for i in report.items] == [[], [], []]  # the report keeps no spans
    assert [len(v) for v in project_store(project).spans_of(report.id).values()] == [1, 1, 1]
    gc.collect()
    assert [ref() for ref in traces] == [None, None, None]
