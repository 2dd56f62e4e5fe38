"""Stage 3: per-evaluator statistics and run metrics (latency, cost, tokens) of a run's items.

They are computed from a `Tally`: the few numbers per item and per evaluation the statistics need,
in flat arrays (a few dozen bytes per item), so a run need not keep its items to summarise them.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable

from ..results import _stats
from ..results._conversation import simulator_spend
from ..results._report import ItemResult, ItemSpread, Stats, Summary
from ._plan import RunPlan
from ._requests import RescoreRun

_STATUS = {"ok": 0, "error": 1, "timeout": 2}
_SCORED, _NO_SCORE, _EVAL_ERROR = 0, 1, 2


class _Verdicts:
    """One evaluator's verdicts: item index, kind (scored, ok without a score, eval-error), score, passed."""

    __slots__ = ("index", "kind", "passed", "score")

    def __init__(self) -> None:
        self.index = array("q")
        self.kind = array("b")
        self.score = array("d")
        self.passed = array("b")

    def given_and_scored(self) -> tuple[int, int]:
        """How many outputs this evaluator was given, and how many it scored (usable score)."""
        return len(self.kind), self.kind.count(_SCORED)

    def stats(self, positions: Iterable[int], attempts: int) -> Stats:
        """Statistics of the usable scores; `errors` counts eval-errors. Coverage and pass rate are over
        every attempted agent call, so a failed or timed-out call counts as unscored and not passed: a
        flaky agent cannot look solid."""
        scored, passed, errors = [], 0, 0
        for p in positions:
            if self.kind[p] == _SCORED:
                scored.append(self.score[p])
                passed += self.passed[p]
            elif self.kind[p] == _EVAL_ERROR:
                errors += 1
        stats = _describe(scored)
        stats.errors = errors
        stats.coverage = len(scored) / attempts if attempts else None
        stats.pass_rate = passed / attempts if attempts else None
        return stats


class Tally:
    """What `summarise` needs of a run's items, added one item at a time as each finishes."""

    def __init__(self) -> None:
        self.index = array("q")
        self.status = array("b")
        #: Agent latencies of ok and timed-out calls: a timeout took at least the timeout, and leaving
        #: it out would let latency gates pass exactly when the agent is slowest.
        self.latencies = array("d")
        self.ok_costs = array("d")  # the known costs of ok calls
        self.ok_costs_unknown = 0
        self.ok_tokens = array("d")
        self.agent_tokens = 0
        self.judge_tokens = 0
        self.judge_calls = 0
        self.cached_scores = 0
        self.judge_costs = array("d")  # of fresh evaluations that called a judge
        self.judge_costs_unknown = False
        self.verdicts: dict[str, _Verdicts] = {}

    @classmethod
    def of(cls, items: Iterable[ItemResult]) -> Tally:
        tally = cls()
        for item in items:
            tally.add(item)
        return tally

    def __len__(self) -> int:
        return len(self.index)

    def add(self, item: ItemResult) -> None:
        self.index.append(item.index)
        self.status.append(_STATUS[item.status])
        if item.status != "error" and item.latency_ms is not None:
            self.latencies.append(item.latency_ms)
        self.agent_tokens += item.tokens or 0
        if item.status == "ok":
            if item.cost_usd is None:
                self.ok_costs_unknown += 1
            else:
                self.ok_costs.append(item.cost_usd)
            if item.tokens is not None:
                self.ok_tokens.append(float(item.tokens))
        if item.metadata and (simulated := simulator_spend(item.metadata)) is not None:
            self._add_simulated(*simulated)
        for name, ev in item.evaluations.items():
            self.judge_calls += ev.judge_calls
            if ev.cached:
                self.cached_scores += 1
            else:
                self.judge_tokens += ev.tokens
                if ev.judge_calls:
                    if ev.cost_usd is None:
                        self.judge_costs_unknown = True
                    else:
                        self.judge_costs.append(ev.cost_usd)
            verdicts = self.verdicts.get(name) or self.verdicts.setdefault(name, _Verdicts())
            verdicts.index.append(item.index)
            if ev.status != "ok":
                verdicts.kind.append(_EVAL_ERROR)
            else:
                verdicts.kind.append(_NO_SCORE if ev.score is None else _SCORED)
            verdicts.score.append(0.0 if ev.score is None else ev.score)
            verdicts.passed.append(1 if ev.passed else 0)


    def _add_simulated(self, calls: int, tokens: int, cost: float | None) -> None:
        """A simulated user's model calls are cobalt's own spend, as the judge's are: counted with them."""
        self.judge_calls += calls
        self.judge_tokens += tokens
        if calls and cost is None:
            self.judge_costs_unknown = True
        elif calls and cost is not None:
            self.judge_costs.append(cost)


def summarise(plan: RunPlan, items: Iterable[ItemResult] | Tally, duration_ms: float) -> Summary:
    """Stage 3: per-evaluator statistics and run metrics (latency, cost, tokens)."""
    tally = items if isinstance(items, Tally) else Tally.of(items)
    ok = tally.status.count(_STATUS["ok"])
    agent_cost = None if tally.ok_costs_unknown or not tally.ok_costs else math.fsum(tally.ok_costs)
    agent_tokens = tally.agent_tokens
    if isinstance(plan.request, RescoreRun):
        # A rescore calls no agent: the outputs were paid for by the parent run, so this run's agent
        # cost is 0 when the parent's was known, and stays unknown (None) when it was not.
        agent_cost, agent_tokens = (None if agent_cost is None else 0.0), 0
    judge_cost = None if tally.judge_costs_unknown else math.fsum(tally.judge_costs)
    summary = Summary(
        total_items=plan.total_items, total_runs=len(tally), ok=ok, errors=tally.status.count(_STATUS["error"]),
        timeouts=tally.status.count(_STATUS["timeout"]), total_duration_ms=duration_ms,
        avg_latency_ms=_stats.mean(tally.latencies), agent_tokens=agent_tokens, judge_tokens=tally.judge_tokens,
        judge_calls=tally.judge_calls, cached_scores=tally.cached_scores, agent_cost=agent_cost, judge_cost=judge_cost,
        estimated_cost=None if agent_cost is None or judge_cost is None else agent_cost + judge_cost,
    )
    summary.total_tokens = summary.agent_tokens + summary.judge_tokens
    for evaluator in plan.evaluators:
        verdicts = tally.verdicts.get(evaluator.name) or _Verdicts()
        summary.scores[evaluator.name] = verdicts.stats(range(len(verdicts.index)), len(tally))
    summary.metrics = {
        "latency": _describe(tally.latencies),
        "cost": _describe(tally.ok_costs),
        "tokens": _describe(tally.ok_tokens),
    }
    if plan.runs > 1:
        summary.per_item = _spreads(plan, tally)
    return summary


def _describe(values: Iterable[float]) -> Stats:
    return Stats.model_validate(_stats.describe(list(values)))


def _spreads(plan: RunPlan, tally: Tally) -> list[ItemSpread]:
    """Per item index: its scores across its runs, per evaluator."""
    runs: dict[int, int] = {}
    for index in tally.index:
        runs[index] = runs.get(index, 0) + 1
    groups: dict[str, dict[int, list[int]]] = {}
    for evaluator in plan.evaluators:
        verdicts = tally.verdicts.get(evaluator.name)
        by_index: dict[int, list[int]] = {}
        groups[evaluator.name] = by_index
        for position, index in enumerate(verdicts.index if verdicts else ()):
            by_index.setdefault(index, []).append(position)
    return [
        ItemSpread(index=index, runs=count, evaluators={
            e.name: (tally.verdicts.get(e.name) or _Verdicts()).stats(groups[e.name].get(index, ()), count)
            for e in plan.evaluators})
        for index, count in sorted(runs.items())
    ]
