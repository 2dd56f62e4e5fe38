"""Stage 3: per-evaluator statistics and run metrics (latency, cost, tokens) of a run's items."""

from __future__ import annotations

import math
from typing import Any

from ..results import _stats
from ..results._report import ItemResult, ItemSpread, Stats, Summary
from ._plan import RunPlan
from ._requests import RescoreRun


def summarise(plan: RunPlan, items: list[ItemResult], duration_ms: float) -> Summary:
    """Stage 3: per-evaluator statistics and run metrics (latency, cost, tokens)."""
    ok = [i for i in items if i.status == "ok"]
    evaluations = [ev for i in items for ev in i.evaluations.values()]
    fresh = [ev for ev in evaluations if not ev.cached]
    agent_cost = _known_sum([i.cost_usd for i in ok]) if any(i.cost_usd is not None for i in ok) else None
    agent_tokens = sum(i.tokens or 0 for i in items)
    if isinstance(plan.request, RescoreRun):
        # A rescore calls no agent: the outputs were paid for by the parent run, so this run's agent
        # cost is 0 when the parent's was known, and stays unknown (None) when it was not.
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
    """Agent latencies of ok and timed-out calls: a timeout took at least the timeout, and leaving it
    out would let latency gates pass exactly when the agent is slowest."""
    return [i.latency_ms for i in items if i.status != "error" and i.latency_ms is not None]


def _score_stats(evaluations: list[Any], attempts: int) -> Stats:
    """Statistics of the usable scores; `errors` counts eval-errors. Coverage and pass rate are over
    every attempted agent call, so a failed or timed-out call counts as unscored and not passed: a
    flaky agent cannot look solid."""
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
