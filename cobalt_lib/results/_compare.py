"""Comparing two runs: B - A per evaluator, with a paired bootstrap confidence interval.

Items are paired by (item index, run index) and must have the same input (equal `input_hash`):
an item whose input changed between the runs is reported as unpaired, never compared. The CLI
(`cobalt compare`) and the MCP server render the same `Comparison`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from ._direction import gain, lower_is_better
from ._report import ExperimentReport, ItemResult

Verdict = Literal["improved", "regressed", "no significant change", "not comparable"]
Key = tuple[int, int]

#: Run metrics compared besides the evaluators (all lower-is-better).
RUN_METRICS = ("latency.p95", "cost.mean")
#: The rule `--fail-on-regression` applies, said with every comparison: it is not `no_regression`'s.
REGRESSION_RULE = ("--fail-on-regression fails when an evaluator's verdict is regressed (its paired bootstrap CI "
                   "lies entirely on the worse side of 0) or when B scored fewer of the paired items than A "
                   "because of errors; it does not apply no_regression's tolerance against a baseline file")
#: Resampled means computed per numpy block, to keep memory flat for large runs.
_BLOCK_CELLS = 1_000_000


class EvaluatorDelta(BaseModel):
    """One evaluator: its means in both runs, B - A, and the paired bootstrap CI of the difference."""

    evaluator: str
    mean_a: float | None = None
    mean_b: float | None = None
    delta: float | None = None
    pairs: int = 0
    paired_delta: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    verdict: Verdict = "not comparable"
    #: Paired items with a score in A, and in B (an eval-error or a failed agent call has none).
    scored_a: int = 0
    scored_b: int = 0
    #: Paired items scored in A with no score in B although B ran the evaluator: lost to errors.
    lost: int = 0
    #: Why the verdict is what it is, with the numbers: the rule applied.
    why: str = ""

    @property
    def lost_scores(self) -> bool:
        """B scored fewer of the paired items than A because of errors (all of them, at worst): a
        breakdown the verdict, computed over the pairs left, cannot show."""
        return self.lost > 0 and self.scored_b < self.scored_a


class MetricDelta(BaseModel):
    """A run metric (`latency.p95`, `cost.mean`); lower is better."""

    metric: str
    a: float | None = None
    b: float | None = None
    delta: float | None = None


class ItemChange(BaseModel):
    """One paired item's score change for one evaluator."""

    index: int
    run_index: int
    evaluator: str
    input: Any = None
    score_a: float
    score_b: float
    delta: float


class StatusChange(BaseModel):
    """A paired item whose agent call succeeded in one run and not in the other."""

    index: int
    run_index: int
    status_a: str
    status_b: str
    error: str | None = None


class Unpaired(BaseModel):
    index: int
    run_index: int
    reason: Literal["input changed", "only in A", "only in B"]


class Comparison(BaseModel):
    """Run B against baseline run A: every delta is B - A."""

    run_a: str
    run_b: str
    experiment_a: str
    experiment_b: str
    timestamp_a: str
    timestamp_b: str
    confidence: float = 0.95
    resamples: int = 2000
    seed: int = 0
    paired: int = 0
    evaluators: list[EvaluatorDelta] = Field(default_factory=list)
    metrics: list[MetricDelta] = Field(default_factory=list)
    regressions: list[ItemChange] = Field(default_factory=list)
    improvements: list[ItemChange] = Field(default_factory=list)
    status_changes: list[StatusChange] = Field(default_factory=list)
    unpaired: list[Unpaired] = Field(default_factory=list)
    #: The experiment `latest`/`previous` were looked up in when the caller chose it for the user
    #: (`cobalt compare` without --experiment); None when the runs were named outright.
    scope: str | None = None
    #: What `--fail-on-regression` checks (`REGRESSION_RULE`).
    regression_rule: str = REGRESSION_RULE

    @property
    def regressed(self) -> list[str]:
        """Names of the evaluators whose CI lies on the worse side of zero (above it for `*Latency` ones)."""
        return [e.evaluator for e in self.evaluators if e.verdict == "regressed"]

    @property
    def lost_scores(self) -> list[EvaluatorDelta]:
        """The evaluators that scored fewer paired items in B than in A because of errors."""
        return [e for e in self.evaluators if e.lost_scores]


def compare_reports(a: ExperimentReport, b: ExperimentReport, *, top: int = 5, resamples: int = 2000,
                    seed: int = 0, confidence: float = 0.95) -> Comparison:
    """Compare run `b` against baseline run `a` (deltas are B - A); reproducible for a given seed."""
    if resamples < 1:
        raise ValueError(f"resamples must be 1 or more, got {resamples}.")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}.")
    pairs, unpaired = pair_items(a.items, b.items)
    changes = _score_changes(pairs)
    result = Comparison(
        run_a=a.id, run_b=b.id, experiment_a=a.name, experiment_b=b.name, timestamp_a=a.timestamp,
        timestamp_b=b.timestamp, confidence=confidence, resamples=resamples, seed=seed, paired=len(pairs),
        unpaired=unpaired, status_changes=_status_changes(pairs),
        metrics=[_metric_delta(a, b, path) for path in RUN_METRICS],
    )
    for name in _evaluator_names(a, b):
        diffs = [c.delta for c in changes if c.evaluator == name]
        delta = _evaluator_delta(a, b, name, diffs, resamples, seed, confidence)
        _count_scored(delta, pairs, ran_in_b=_ran(b, name))
        result.evaluators.append(delta)
    # A lower-is-better evaluator (`*Latency`) improves when its score drops.
    result.regressions = sorted((c for c in changes if gain(c.evaluator, c.delta) < 0), key=_largest_first)[:top]
    result.improvements = sorted((c for c in changes if gain(c.evaluator, c.delta) > 0), key=_largest_first)[:top]
    return result


def pair_items(a: Sequence[ItemResult],
               b: Sequence[ItemResult]) -> tuple[list[tuple[ItemResult, ItemResult]], list[Unpaired]]:
    """Pairs by (index, run_index) with equal input hashes; everything else is unpaired."""
    by_key_a = {(i.index, i.run_index): i for i in a}
    by_key_b = {(i.index, i.run_index): i for i in b}
    pairs: list[tuple[ItemResult, ItemResult]] = []
    unpaired: list[Unpaired] = []
    for key in sorted(by_key_a.keys() | by_key_b.keys()):
        item_a, item_b = by_key_a.get(key), by_key_b.get(key)
        if item_a is None or item_b is None:
            unpaired.append(Unpaired(index=key[0], run_index=key[1], reason="only in B" if item_a is None
                                     else "only in A"))
        elif item_a.input_hash != item_b.input_hash:
            unpaired.append(Unpaired(index=key[0], run_index=key[1], reason="input changed"))
        else:
            pairs.append((item_a, item_b))
    return pairs, unpaired


def bootstrap_ci(diffs: list[float], *, resamples: int = 2000, seed: int = 0,
                 confidence: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of `diffs` (resampling the pairs with replacement)."""
    import numpy as np  # lazily: `cobalt --help` and the other commands need no numpy

    values = np.asarray(diffs, dtype=float)
    rng = np.random.default_rng(seed)
    block = max(1, _BLOCK_CELLS // len(values))
    means = np.empty(resamples)
    for start in range(0, resamples, block):
        count = min(block, resamples - start)
        means[start : start + count] = values[rng.integers(0, len(values), size=(count, len(values)))].mean(axis=1)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def _largest_first(change: ItemChange) -> tuple[float, int, int, str]:
    return (-abs(change.delta), change.index, change.run_index, change.evaluator)


def _score(item: ItemResult, evaluator: str) -> float | None:
    ev = item.evaluations.get(evaluator)
    if item.status != "ok" or ev is None or ev.status != "ok" or ev.score is None:
        return None
    return ev.score


def _score_changes(pairs: list[tuple[ItemResult, ItemResult]]) -> list[ItemChange]:
    changes = []
    for item_a, item_b in pairs:
        for name in item_a.evaluations.keys() & item_b.evaluations.keys():
            score_a, score_b = _score(item_a, name), _score(item_b, name)
            if score_a is not None and score_b is not None:
                changes.append(ItemChange(index=item_a.index, run_index=item_a.run_index, evaluator=name,
                                          input=item_b.input, score_a=score_a, score_b=score_b,
                                          delta=score_b - score_a))
    return changes


def _status_changes(pairs: list[tuple[ItemResult, ItemResult]]) -> list[StatusChange]:
    return [StatusChange(index=x.index, run_index=x.run_index, status_a=x.status, status_b=y.status,
                         error=y.error or x.error)
            for x, y in pairs if x.status != y.status]


def _evaluator_names(a: ExperimentReport, b: ExperimentReport) -> list[str]:
    names = [*a.summary.scores, *b.summary.scores]
    names += [n for report in (a, b) for item in report.items for n in item.evaluations]
    return list(dict.fromkeys(names))


def _ran(report: ExperimentReport, name: str) -> bool:
    """Whether the run had the evaluator at all (its summary lists it even when every call failed)."""
    return name in report.summary.scores or any(name in item.evaluations for item in report.items)


def _count_scored(delta: EvaluatorDelta, pairs: list[tuple[ItemResult, ItemResult]], *, ran_in_b: bool) -> None:
    name = delta.evaluator
    for item_a, item_b in pairs:
        score_a, score_b = _score(item_a, name), _score(item_b, name)
        delta.scored_a += score_a is not None
        delta.scored_b += score_b is not None
        # An evaluator dropped from B is not an error of B's; a failed call or an eval-error is.
        delta.lost += score_a is not None and score_b is None and ran_in_b


def _mean(report: ExperimentReport, name: str) -> float | None:
    stats = report.summary.scores.get(name)
    if stats is not None and stats.avg is not None:
        return stats.avg
    scores = [s for item in report.items if (s := _score(item, name)) is not None]
    return math.fsum(scores) / len(scores) if scores else None


def _evaluator_delta(a: ExperimentReport, b: ExperimentReport, name: str, diffs: list[float], resamples: int,
                     seed: int, confidence: float) -> EvaluatorDelta:
    mean_a, mean_b = _mean(a, name), _mean(b, name)
    result = EvaluatorDelta(evaluator=name, mean_a=mean_a, mean_b=mean_b, pairs=len(diffs),
                            delta=None if mean_a is None or mean_b is None else mean_b - mean_a)
    if not diffs:
        result.why = "not comparable: no paired item has a score in both runs"
        return result
    result.paired_delta = math.fsum(diffs) / len(diffs)
    if len(diffs) < 2:  # one pair says nothing about the spread: no interval, no verdict
        result.why = "not comparable: one paired item gives no confidence interval"
        return result
    low, high = result.ci_low, result.ci_high = bootstrap_ci(diffs, resamples=resamples, seed=seed,
                                                             confidence=confidence)
    # The CI of the change in the better direction: negated for a lower-is-better evaluator.
    better_low, better_high = sorted((gain(name, low), gain(name, high)))
    result.verdict = ("improved" if better_low > 0 else "regressed" if better_high < 0
                      else "no significant change")
    result.why = _why(result, confidence)
    return result


def _why(d: EvaluatorDelta, confidence: float) -> str:
    """The verdict with the rule and numbers behind it: `regressed: paired mean -0.10, 95% CI [-0.15, -0.05]
    entirely below 0`."""
    interval = f"[{_signed(d.ci_low)}, {_signed(d.ci_high)}]"
    head = f"paired mean {_signed(d.paired_delta)}, {confidence:.0%} CI {interval}"
    if d.verdict == "no significant change":
        return f"no significant change: {head} contains 0"
    side = "below" if (d.ci_high or 0) < 0 else "above"
    lower = " (lower is better)" if lower_is_better(d.evaluator) else ""
    return f"{d.verdict}: {head} entirely {side} 0{lower}"


def _signed(value: float | None) -> str:
    """`+0.10`; a rounding residue such as -1e-16 shows as `+0.00`, not `-0.00`."""
    return f"{round(value or 0.0, 2) + 0.0:+.2f}"


def _metric_delta(a: ExperimentReport, b: ExperimentReport, path: str) -> MetricDelta:
    value_a, value_b = a.metric(path), b.metric(path)
    delta = None if value_a is None or value_b is None else value_b - value_a
    return MetricDelta(metric=path, a=value_a, b=value_b, delta=delta)
