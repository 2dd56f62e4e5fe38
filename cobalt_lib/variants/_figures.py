"""The variant grid: variants x evaluators, each cell the variant's mean with its paired interval and
verdict against the baseline variant, plus cost, latency and the quality/cost frontier.

Every cell is `compare_reports(baseline, variant)`'s own `EvaluatorDelta`: the grid and `cobalt compare`
of the same two runs agree to the last digit. The frontier holds the variants no other variant beats
on quality while costing no more (quality: the mean of the evaluators' means, or one named evaluator).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from .._errors import ConfigError
from ..results._compare import Verdict, compare_reports
from ..results._direction import lower_is_better
from ..results._report import ExperimentReport

#: How a verdict reads in a grid cell: better or worse than the baseline variant, or neither.
VERDICT_WORDS: dict[str, str] = {"improved": "better", "regressed": "worse",
                                 "no significant change": "no significant change", "not comparable": "not comparable",
                                 "baseline": "baseline"}
FRONTIER_RULE = ("on the frontier: no other variant has a higher quality at the same or a lower agent cost per "
                 "item, nor a lower cost at the same or a higher quality")


class GridCell(BaseModel):
    """One variant x evaluator: its mean, and (not the baseline) `compare`'s paired CI of variant - baseline."""

    evaluator: str
    mean: float | None = None
    delta: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    pairs: int = 0
    verdict: Verdict | str = "baseline"
    why: str = ""

    @property
    def word(self) -> str:
        return VERDICT_WORDS.get(self.verdict, self.verdict)


class GridRow(BaseModel):
    """One variant: its run, cells, cost, latency, quality, whether it is on the frontier and passed its gates."""

    variant: str
    params: dict[str, Any] = Field(default_factory=dict)
    run_id: str
    status: str
    baseline: bool = False
    cells: list[GridCell] = Field(default_factory=list)
    #: What the agent cost in the run (US dollars), and per agent call; None when unknown.
    agent_cost: float | None = None
    cost_per_item: float | None = None
    judge_cost: float | None = None
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    quality: float | None = None
    #: None when its cost or quality is unknown (no frontier without both).
    frontier: bool | None = None
    passed: bool = False
    failed_gates: list[str] = Field(default_factory=list)

    def cell(self, evaluator: str) -> GridCell | None:
        return next((c for c in self.cells if c.evaluator == evaluator), None)


class VariantGrid(BaseModel):
    """A run group's grid; rows in the order the variants were declared, the baseline first."""

    group_id: str
    experiment: str
    baseline: str
    evaluators: list[str] = Field(default_factory=list)
    rows: list[GridRow] = Field(default_factory=list)
    #: What quality means on the frontier: `mean of evaluator means` or the evaluator named.
    quality: str = "mean of evaluator means"
    frontier_rule: str = FRONTIER_RULE
    confidence: float = 0.95
    resamples: int = 2000
    seed: int = 0

    @property
    def passed(self) -> bool:
        """Every variant's run completed and passed its gates."""
        return all(r.passed for r in self.rows)

    def row(self, variant: str) -> GridRow | None:
        return next((r for r in self.rows if r.variant == variant), None)


def build_grid(group_id: str, reports: Sequence[ExperimentReport], *, quality: str | None = None,
               resamples: int = 2000, seed: int = 0, confidence: float = 0.95) -> VariantGrid:
    """The grid of a group's `reports` (one per variant; the baseline the one whose variant says so, else
    the first). Each non-baseline cell is `compare_reports(baseline, variant)` with the same resamples,
    seed and confidence `cobalt compare` uses."""
    if not reports:
        raise ConfigError(f"Run group {group_id} has no runs.")
    base = next((r for r in reports if _variant(r).get("baseline")), reports[0])
    evaluators = list(dict.fromkeys(name for r in reports for name in r.summary.scores))
    if quality is not None and (quality not in evaluators or lower_is_better(quality)):
        raise ConfigError(f"The grid's quality evaluator {quality!r} is not one of the group's higher-is-better "
                          f"evaluators: {', '.join(e for e in evaluators if not lower_is_better(e)) or 'none'}.")
    grid = VariantGrid(group_id=group_id, experiment=base.name, baseline=base.variant or base.id,
                       evaluators=evaluators, quality=quality or "mean of evaluator means",
                       confidence=confidence, resamples=resamples, seed=seed)
    ordered = [base, *(r for r in reports if r is not base)]
    for report in ordered:
        grid.rows.append(_row(report, base, evaluators, quality, resamples, seed, confidence))
    mark_frontier(grid.rows)
    return grid


def _row(report: ExperimentReport, base: ExperimentReport, evaluators: list[str], quality: str | None,
         resamples: int, seed: int, confidence: float) -> GridRow:
    s = report.summary
    latency = s.metrics.get("latency")
    cost = s.metrics.get("cost")
    row = GridRow(variant=report.variant or report.id, params=dict(_variant(report).get("params") or {}),
                  run_id=report.id, status=report.status, baseline=report is base, agent_cost=s.agent_cost,
                  cost_per_item=cost.avg if cost else None, judge_cost=s.judge_cost,
                  latency_p50_ms=latency.p50 if latency else None, latency_p95_ms=latency.p95 if latency else None,
                  passed=report.passed, failed_gates=[a.name for a in report.assertions if not a.passed])
    if row.baseline:
        row.cells = [GridCell(evaluator=name, mean=_mean(report, name)) for name in evaluators]
    else:
        deltas = {d.evaluator: d for d in compare_reports(base, report, top=0, resamples=resamples, seed=seed,
                                                          confidence=confidence).evaluators}
        row.cells = [_cell(name, report, deltas.get(name)) for name in evaluators]
    row.quality = _quality(report, evaluators, quality)
    return row


def _cell(name: str, report: ExperimentReport, delta: Any) -> GridCell:
    if delta is None:
        return GridCell(evaluator=name, mean=_mean(report, name), verdict="not comparable",
                        why="the baseline variant has no scores for it")
    return GridCell(evaluator=name, mean=_mean(report, name), delta=delta.paired_delta, ci_low=delta.ci_low,
                    ci_high=delta.ci_high, pairs=delta.pairs, verdict=delta.verdict, why=delta.why)


def _mean(report: ExperimentReport, name: str) -> float | None:
    stats = report.summary.scores.get(name)
    return stats.avg if stats else None


def _quality(report: ExperimentReport, evaluators: list[str], named: str | None) -> float | None:
    """The named evaluator's mean, else the mean of the higher-is-better evaluators' means."""
    if named is not None:
        return _mean(report, named)
    means = [m for name in evaluators if not lower_is_better(name) and (m := _mean(report, name)) is not None]
    return sum(means) / len(means) if means else None


def mark_frontier(rows: Sequence[GridRow]) -> None:
    """Mark each row with a known quality and cost per item: on the frontier unless another dominates it."""
    known = [r for r in rows if r.quality is not None and r.cost_per_item is not None]
    for row in rows:
        row.frontier = None if row not in known else not any(_dominates(other, row) for other in known
                                                              if other is not row)


def _dominates(a: GridRow, b: GridRow) -> bool:
    assert a.quality is not None and b.quality is not None and a.cost_per_item is not None
    assert b.cost_per_item is not None
    better_or_same = a.quality >= b.quality and a.cost_per_item <= b.cost_per_item
    return better_or_same and (a.quality > b.quality or a.cost_per_item < b.cost_per_item)


def _variant(report: ExperimentReport) -> dict[str, Any]:
    variant = report.config.get("variant")
    return variant if isinstance(variant, dict) else {}
