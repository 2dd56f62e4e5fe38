"""Stage 3 from a run's compact `Tally` (what the library path keeps instead of its items) gives exactly
the summary the items themselves give, and the one cobalt computed from a list of items before."""

from __future__ import annotations

import dataclasses
import math
import random
from pathlib import Path
from typing import Any

import pytest

from cobalt_lib import Dataset, Evaluator, define_config, experiment
from cobalt_lib.results import _stats
from cobalt_lib.results._report import Evaluation, ItemResult, ItemSpread, Stats, Summary
from cobalt_lib.run import FreshRun, RescoreRun, RunPlan, prepare, summarise
from cobalt_lib.run._aggregate import Tally
from cobalt_lib.run._stages import FinishedItems, build_report


def _plan(tmp_path: Path, *, rescore: bool) -> RunPlan:
    exp = experiment("tally", Dataset([{"input": f"q{i}", "expected_output": "a"} for i in range(4)]),
                     lambda ctx: "a", runs=2, evaluators=[
                         Evaluator(name="exact", type="exact-match"),
                         Evaluator(name="judge", type="function", fn=lambda c: 1.0),
                         Evaluator(name="never", type="function", fn=lambda c: 1.0)])  # no item has it
    plan = prepare(exp, define_config(output_dir=str(tmp_path)), FreshRun(run_id="run-1"))
    # a rescore's summary differs (no agent cost or tokens): only its request matters to stage 3
    return dataclasses.replace(plan, request=RescoreRun(parent_run_id="run-0", outputs=[])) if rescore else plan


def _items() -> list[ItemResult]:
    """Errors, timeouts, eval-errors, cached and fresh judge scores, unknown costs, 4 items x 2 runs."""
    def ev(score: float | None, **kw: Any) -> Evaluation:
        return Evaluation(score=score, passed=None if score is None else score >= 0.5, **kw)

    judged = {"judge_calls": 1, "input_tokens": 10, "output_tokens": 2, "judge_model": "m"}
    return [
        ItemResult(index=0, run_index=0, latency_ms=10.0, tokens=5, cost_usd=0.001, evaluations={
            "exact": ev(1.0), "judge": ev(0.8, cost_usd=0.0002, **judged)}),
        ItemResult(index=0, run_index=1, latency_ms=12.5, tokens=6, cost_usd=0.002, evaluations={
            "exact": ev(0.0), "judge": ev(0.4, cached=True, cost_usd=0.0002, **judged)}),
        ItemResult(index=1, run_index=0, status="error", error="boom", latency_ms=1.0, tokens=3),
        ItemResult(index=1, run_index=1, status="timeout", error="slow", latency_ms=10_000.0),
        ItemResult(index=2, run_index=0, latency_ms=7.0, tokens=None, cost_usd=0.003, evaluations={
            "exact": ev(1.0), "judge": ev(None, status="eval-error", error="no JSON", judge_calls=2)}),
        ItemResult(index=2, run_index=1, latency_ms=8.0, tokens=4, cost_usd=None, evaluations={
            "exact": ev(1.0), "judge": ev(0.9, cost_usd=None, **judged), "extra": ev(0.1)}),
        ItemResult(index=3, run_index=0, latency_ms=9.0, tokens=2, cost_usd=0.004, evaluations={
            "exact": ev(None), "judge": ev(0.6, cost_usd=0.0001, **judged)}),
        ItemResult(index=3, run_index=1, latency_ms=11.0, tokens=1, cost_usd=0.005, evaluations={
            "exact": ev(0.0), "judge": ev(0.7, cost_usd=0.0003, **judged)}),
    ]


@pytest.mark.parametrize("rescore", [False, True])
def test_the_tally_of_a_run_gives_the_summary_its_items_give(tmp_path: Path, rescore: bool) -> None:
    plan = _plan(tmp_path, rescore=rescore)
    items = _items()
    expected = _reference_summary(plan, sorted(items, key=lambda i: (i.index, i.run_index)), 123.0)
    assert expected.errors == 1 and expected.timeouts == 1 and expected.cached_scores == 1
    assert len(expected.per_item) == 4 and expected.scores["judge"].errors == 1
    finished = FinishedItems(tmp_path / "spill")
    for item in random.Random(7).sample(items, len(items)):  # in the order they happen to finish
        finished.append(item)
    assert summarise(plan, finished.tally, 123.0) == expected
    assert summarise(plan, items, 123.0) == expected
    assert build_report(plan, finished, 123.0, "completed").summary == expected
    assert build_report(plan, items, 123.0, "completed").summary == expected
    assert summarise(plan, Tally(), 0.0) == _reference_summary(plan, [], 0.0)


# The summary as cobalt computed it from the list of items before the run kept them on disk (commit
# 00cfc5f, `run/_aggregate.py`), kept verbatim as the reference the tally must reproduce.


def _reference_summary(plan: RunPlan, items: list[ItemResult], duration_ms: float) -> Summary:
    ok = [i for i in items if i.status == "ok"]
    evaluations = [ev for i in items for ev in i.evaluations.values()]
    fresh = [ev for ev in evaluations if not ev.cached]
    agent_cost = _known_sum([i.cost_usd for i in ok]) if any(i.cost_usd is not None for i in ok) else None
    agent_tokens = sum(i.tokens or 0 for i in items)
    if isinstance(plan.request, RescoreRun):
        agent_cost, agent_tokens = (None if agent_cost is None else 0.0), 0
    judge_cost = _known_sum([ev.cost_usd for ev in fresh if ev.judge_calls])
    summary = Summary(
        total_items=plan.total_items, total_runs=len(items), ok=len(ok),
        errors=sum(i.status == "error" for i in items), timeouts=sum(i.status == "timeout" for i in items),
        total_duration_ms=duration_ms, avg_latency_ms=_stats.mean(_latencies(items)),
        agent_tokens=agent_tokens, judge_tokens=sum(ev.tokens for ev in fresh),
        judge_calls=sum(ev.judge_calls for ev in evaluations), cached_scores=sum(ev.cached for ev in evaluations),
        agent_cost=agent_cost, judge_cost=judge_cost,
        estimated_cost=None if agent_cost is None or judge_cost is None else agent_cost + judge_cost,
    )
    summary.total_tokens = summary.agent_tokens + summary.judge_tokens
    for evaluator in plan.evaluators:
        summary.scores[evaluator.name] = _score_stats([i.evaluations[evaluator.name] for i in items
                                                       if evaluator.name in i.evaluations], len(items))
    summary.metrics = {
        "latency": _describe(_latencies(items)),
        "cost": _describe([i.cost_usd for i in ok if i.cost_usd is not None]),
        "tokens": _describe([float(i.tokens) for i in ok if i.tokens is not None]),
    }
    if plan.runs > 1:
        summary.per_item = _spreads(plan, items)
    return summary


def _latencies(items: list[ItemResult]) -> list[float]:
    return [i.latency_ms for i in items if i.status != "error" and i.latency_ms is not None]


def _score_stats(evaluations: list[Any], attempts: int) -> Stats:
    scored = [ev for ev in evaluations if ev.status == "ok" and ev.score is not None]
    stats = _describe([ev.score for ev in scored])
    stats.errors = sum(ev.status != "ok" for ev in evaluations)
    stats.coverage = len(scored) / attempts if attempts else None
    stats.pass_rate = sum(bool(ev.passed) for ev in scored) / attempts if attempts else None
    return stats


def _describe(values: list[float]) -> Stats:
    return Stats.model_validate(_stats.describe(values))


def _spreads(plan: RunPlan, items: list[ItemResult]) -> list[ItemSpread]:
    by_index: dict[int, list[ItemResult]] = {}
    for item in items:
        by_index.setdefault(item.index, []).append(item)
    return [
        ItemSpread(index=index, runs=len(group), evaluators={
            e.name: _score_stats([i.evaluations[e.name] for i in group if e.name in i.evaluations], len(group))
            for e in plan.evaluators})
        for index, group in sorted(by_index.items())
    ]


def _known_sum(values: list[float | None]) -> float | None:
    return None if any(v is None for v in values) else math.fsum(v for v in values if v is not None)
