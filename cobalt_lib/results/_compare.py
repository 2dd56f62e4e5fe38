"""Comparing two runs: B - A per evaluator, with a paired bootstrap confidence interval.

Items are paired by identity (`item_identity`: the item's `id`, else its content hash), never by
position, each with all its repeats (`_pairing`). The bootstrap resamples items, each with its
repeats (a cluster bootstrap): repeats of one item are not independent evidence, so `runs > 1` does
not narrow the interval. An item's score on each side is the mean of its scored repeats, so a run
with repeats compares with one without. The CLI (`cobalt compare`), the pages and the MCP server
render the same `Comparison`.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, Field

from .._numbers import fixed, percent
from ._conversation import Divergence, diverged
from ._direction import gain, lower_is_better
from ._evaluation_identity import IdentityChange, identity_changes
from ._pairing import ItemPair, PairChunk, Unpaired, pairing, score_of, unpaired_items
from ._report import ExperimentReport, ItemResult

Verdict = Literal["improved", "regressed", "no significant change", "not comparable"]

#: Run metrics compared besides the evaluators (all lower-is-better).
RUN_METRICS = ("latency.p95", "cost.mean")
#: The rule `--fail-on-regression` applies, said with every comparison: it is not `no_regression`'s.
REGRESSION_RULE = ("--fail-on-regression fails when an evaluator's verdict is regressed (its paired bootstrap CI "
                   "lies entirely on the worse side of 0) or when B scored fewer of the paired items than A "
                   "because of errors; it does not apply no_regression's tolerance against a baseline file")
#: Grading runs (`cobalt grade`) are judged by agreement with the human scores instead.
GRADING_RULE = ("grading runs are compared by agreement with the human scores, not by mean grade: "
                "--fail-on-regression fails when a model's exact agreement regressed (its paired bootstrap CI "
                "over the labelled samples lies entirely below 0)")
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
    """One paired item's score change for one evaluator; with repeats, each side's mean over them."""

    #: The item's index in B, and in A when it moved (an item inserted before it, say).
    index: int
    index_a: int
    item_id: str = ""
    evaluator: str
    input: Any = None
    score_a: float
    score_b: float
    delta: float
    repeats_a: int = 1
    repeats_b: int = 1
    #: `2 of 3 passed` when the item passed in some repeats and failed in others on that side.
    flaky_a: str | None = None
    flaky_b: str | None = None


class StatusChange(BaseModel):
    """A paired item whose agent calls fared differently: `ok` in one run and `error` in the other, or
    (with repeats) `2 of 3 ok`."""

    index: int
    item_id: str = ""
    status_a: str
    status_b: str
    error: str | None = None


class AgreementDelta(BaseModel):
    """Grading runs: one model's agreement with the human scores in A and B, over the labelled samples both
    graded. The verdict comes from a paired bootstrap of the exact-agreement difference over those samples."""

    model: str
    samples: int = 0
    exact_a: float | None = None
    exact_b: float | None = None
    within_one_a: float | None = None
    within_one_b: float | None = None
    kappa_a: float | None = None
    kappa_b: float | None = None
    kappa_a_ci: tuple[float, float] | None = None
    kappa_b_ci: tuple[float, float] | None = None
    exact_delta: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    verdict: Verdict = "not comparable"
    why: str = ""


class FlakyItem(BaseModel):
    """A paired item that passed in some repeats and failed in others, in A or in B."""

    index: int
    item_id: str = ""
    a: str | None = None
    b: str | None = None


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
    #: Paired items whose pass/fail differs across repeats in A or in B (`2 of 3 passed`).
    flaky: list[FlakyItem] = Field(default_factory=list)
    #: Paired items that are conversations in both runs, and those whose transcripts differ: from which turn.
    conversations: int = 0
    diverged: list[Divergence] = Field(default_factory=list)
    #: Grading runs (both made by `cobalt grade`): per model, agreement with the human scores. When set,
    #: it, not the evaluators' mean grades, decides regressions.
    agreement: list[AgreementDelta] | None = None
    #: The experiment `latest`/`previous` were looked up in when the caller chose it for the user
    #: (`cobalt compare` without --experiment); None when the runs were named outright.
    scope: str | None = None
    #: What `--fail-on-regression` checks (`REGRESSION_RULE`).
    regression_rule: str = REGRESSION_RULE
    #: How B's evaluation identity differs from A's (`identity_changes`): a change with `measurement` set
    #: means the deltas compare two measurements. Empty when both measured alike (or neither says).
    identity_changes: list[IdentityChange] = Field(default_factory=list)

    @property
    def measured_differently(self) -> list[IdentityChange]:
        """The identity changes that make A and B two measurements (dataset, evaluator configuration)."""
        return [c for c in self.identity_changes if c.measurement]

    @property
    def missing_from_b(self) -> list[Unpaired]:
        """Items of baseline A that B lacks (removed from the dataset, or their input changed)."""
        return [u for u in self.unpaired if u.reason != "only in B"]

    @property
    def regressed(self) -> list[str]:
        """Names of the evaluators whose CI lies on the worse side of zero (above it for `*Latency` ones);
        for grading runs, the models whose agreement with the human scores regressed."""
        if self.agreement is not None:
            return [g.model for g in self.agreement if g.verdict == "regressed"]
        return [e.evaluator for e in self.evaluators if e.verdict == "regressed"]

    @property
    def lost_scores(self) -> list[EvaluatorDelta]:
        """The evaluators that scored fewer paired items in B than in A because of errors."""
        return [e for e in self.evaluators if e.lost_scores]


def compare_reports(a: ExperimentReport, b: ExperimentReport, *, top: int = 5, resamples: int = 2000,
                    seed: int = 0, confidence: float = 0.95) -> Comparison:
    """Compare run `b` against baseline run `a` (deltas are B - A); reproducible for a given seed."""
    return compare_chunks(a, b, [pairing(a.items, b.items)], top=top, resamples=resamples, seed=seed,
                          confidence=confidence)


def compare_chunks(a: ExperimentReport, b: ExperimentReport, chunks: Iterable[PairChunk], *, top: int = 5,
                   resamples: int = 2000, seed: int = 0, confidence: float = 0.95) -> Comparison:
    """`compare_reports` over the runs' pairing in parts (`chunks`: the whole pairing, or chunks streamed
    from the store in identity order): each part is tallied and let go, so memory holds the per-item
    differences (16 bytes a pair per evaluator), the `top` changes and what changed status, not the
    items; `a` and `b` give the rest (summaries, identities), their items unread. The same figures
    whatever the parts: what depends on order is put in B's order at the end."""
    if resamples < 1:
        raise ValueError(f"resamples must be 1 or more, got {resamples}.")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}.")
    tally = _Tally(top)
    for chunk in chunks:
        tally.add(chunk)
    result = Comparison(
        run_a=a.id, run_b=b.id, experiment_a=a.name, experiment_b=b.name, timestamp_a=a.timestamp,
        timestamp_b=b.timestamp, confidence=confidence, resamples=resamples, seed=seed, paired=tally.paired,
        unpaired=unpaired_items(tally.only_a, tally.only_b), status_changes=_by_index(tally.status_changes),
        flaky=_by_index(tally.flaky), conversations=tally.conversations, diverged=_by_index(tally.diverged),
        metrics=[_metric_delta(a, b, path) for path in RUN_METRICS],
        identity_changes=[] if a.identity is None and b.identity is None else identity_changes(a.identity, b.identity),
    )
    for name in dict.fromkeys([*a.summary.scores, *b.summary.scores, *tally.names]):
        delta = _evaluator_delta(name, tally.mean(a, "a", name), tally.mean(b, "b", name), tally.diffs_of(name),
                                 resamples, seed, confidence)
        scored_a, scored_b, lost = tally.scored.get(name, (0, 0, 0))
        ran_in_b = name in b.summary.scores or name in tally.names_b  # an evaluator dropped from B is not B's error
        delta.scored_a, delta.scored_b, delta.lost = scored_a, scored_b, lost if ran_in_b else 0
        result.evaluators.append(delta)
    result.regressions, result.improvements = tally.worst(), tally.best()
    return result


_Indexed = TypeVar("_Indexed", StatusChange, FlakyItem, Divergence)


def _by_index(found: list[_Indexed]) -> list[_Indexed]:
    """In B's order (each paired item's index in B is its own): as pairing the whole runs lists them."""
    return sorted(found, key=lambda f: f.index)


class _Tally:
    """What a comparison keeps of the pairs it has seen."""

    def __init__(self, top: int) -> None:
        self.top = top
        self.paired = self.conversations = 0
        self.only_a: dict[int, str] = {}
        self.only_b: dict[int, str] = {}
        self.status_changes: list[StatusChange] = []
        self.flaky: list[FlakyItem] = []
        self.diverged: list[Divergence] = []
        self.names: dict[str, None] = {}  # every evaluator any item of either run has, in the order met
        self.names_b: set[str] = set()
        self.scored: dict[str, tuple[int, int, int]] = {}  # scored in A, in B, lost in B
        self.sums: dict[tuple[str, str], tuple[float, int]] = {}  # (side, evaluator): every item's scores
        self._diffs: dict[str, tuple[array[int], array[float]]] = {}  # (index in B, delta) per pair
        self._worst: list[ItemChange] = []
        self._best: list[ItemChange] = []

    def add(self, chunk: PairChunk) -> None:
        self.paired += len(chunk.pairs)
        for side, unpaired, into in (("a", chunk.only_a, self.only_a), ("b", chunk.only_b, self.only_b)):
            for index, (ident, repeats) in unpaired.items():
                into[index] = ident
                self._seen(side, repeats)
        for pair in chunk.pairs:
            self._seen("a", pair.a)
            self._seen("b", pair.b)
            self._count(pair)
        self.status_changes += _status_changes(chunk.pairs)
        self.flaky += _flaky(chunk.pairs)
        conversations, parted = diverged(chunk.pairs)
        self.conversations += conversations
        self.diverged += parted
        self._changes(chunk.pairs)

    def _seen(self, side: str, repeats: list[ItemResult]) -> None:
        for item in repeats:
            for name in item.evaluations:
                self.names.setdefault(name)
                if side == "b":
                    self.names_b.add(name)
                if (value := score_of(item, name)) is not None:
                    total, count = self.sums.get((side, name), (0.0, 0))
                    self.sums[(side, name)] = (total + value, count + 1)

    def _count(self, pair: ItemPair) -> None:
        for name in {n for r in [*pair.a, *pair.b] for n in r.evaluations}:
            score_a, score_b = pair.score("a", name), pair.score("b", name)
            scored_a, scored_b, lost = self.scored.get(name, (0, 0, 0))
            self.scored[name] = (scored_a + (score_a is not None), scored_b + (score_b is not None),
                                 lost + (score_a is not None and score_b is None))

    def _changes(self, pairs: list[ItemPair]) -> None:
        for change in _score_changes(pairs):
            indexes, deltas = self._diffs.setdefault(change.evaluator, (array("q"), array("d")))
            indexes.append(change.index)
            deltas.append(change.delta)
            side = gain(change.evaluator, change.delta)
            if side:
                kept = self._worst if side < 0 else self._best
                kept.append(change)
                if len(kept) > 4 * self.top + 64:  # cut back now and then: memory holds about `top`
                    kept[:] = sorted(kept, key=_largest_first)[:self.top]

    def worst(self) -> list[ItemChange]:
        return sorted(self._worst, key=_largest_first)[:self.top]

    def best(self) -> list[ItemChange]:
        return sorted(self._best, key=_largest_first)[:self.top]

    def diffs_of(self, name: str) -> list[float]:
        """The evaluator's per-pair deltas in B's order (the bootstrap's draws depend on it)."""
        indexes, deltas = self._diffs.get(name, (array("q"), array("d")))
        return [deltas[p] for p in sorted(range(len(indexes)), key=indexes.__getitem__)]

    def mean(self, report: ExperimentReport, side: str, name: str) -> float | None:
        """The run's mean for the evaluator: its summary's, else over every item seen."""
        stats = report.summary.scores.get(name)
        if stats is not None and stats.avg is not None:
            return stats.avg
        total, count = self.sums.get((side, name), (0.0, 0))
        return total / count if count else None


def bootstrap_ci(diffs: list[float], *, resamples: int = 2000, seed: int = 0,
                 confidence: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of `diffs`, one per item (resampling the items with replacement;
    an item with repeats gives the mean of its repeats, so its repeats are resampled together)."""
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


def _largest_first(change: ItemChange) -> tuple[float, int, str]:
    return (-abs(change.delta), change.index, change.evaluator)


def _score_changes(pairs: list[ItemPair]) -> list[ItemChange]:
    changes = []
    for pair in pairs:
        names = {n for r in pair.a for n in r.evaluations} & {n for r in pair.b for n in r.evaluations}
        for name in sorted(names):
            score_a, score_b = pair.score("a", name), pair.score("b", name)
            if score_a is not None and score_b is not None:
                changes.append(ItemChange(
                    index=pair.index, index_a=pair.index_a, item_id=pair.item_id, evaluator=name,
                    input=pair.b[0].input, score_a=score_a, score_b=score_b, delta=score_b - score_a,
                    repeats_a=len(pair.a), repeats_b=len(pair.b), flaky_a=pair.flaky("a"), flaky_b=pair.flaky("b")))
    return changes


def _status_changes(pairs: list[ItemPair]) -> list[StatusChange]:
    changes = []
    for pair in pairs:
        status_a, status_b = pair.status("a"), pair.status("b")
        if status_a != status_b:
            error = next((r.error for r in [*pair.b, *pair.a] if r.error), None)
            changes.append(StatusChange(index=pair.index, item_id=pair.item_id, status_a=status_a,
                                        status_b=status_b, error=error))
    return changes


def _flaky(pairs: list[ItemPair]) -> list[FlakyItem]:
    return [FlakyItem(index=p.index, item_id=p.item_id, a=p.flaky("a"), b=p.flaky("b"))
            for p in pairs if p.flaky("a") or p.flaky("b")]


def _evaluator_delta(name: str, mean_a: float | None, mean_b: float | None, diffs: list[float], resamples: int,
                     seed: int, confidence: float) -> EvaluatorDelta:
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
    head = f"paired mean {_signed(d.paired_delta)}, {percent(confidence)} CI {interval}"
    if d.verdict == "no significant change":
        return f"no significant change: {head} contains 0"
    side = "below" if (d.ci_high or 0) < 0 else "above"
    lower = " (lower is better)" if lower_is_better(d.evaluator) else ""
    return f"{d.verdict}: {head} entirely {side} 0{lower}"


def _signed(value: float | None) -> str:
    """`+0.10`; a rounding residue such as -1e-16 shows as `+0.00`, not `-0.00`."""
    return fixed(value or 0.0, 2, sign=True)


def _run_metric(report: ExperimentReport, path: str) -> float | None:
    """The metric; a cost is unknown (None) when an answered item's cost is: the mean of the known ones would
    pass for the run's (the runs list, the run page and trends say `unknown` too)."""
    stats = report.summary.metrics.get(path.split(".")[0])
    if path.startswith("cost") and stats is not None and stats.count < report.summary.ok:
        return None
    return report.metric(path)


def _metric_delta(a: ExperimentReport, b: ExperimentReport, path: str) -> MetricDelta:
    value_a, value_b = _run_metric(a, path), _run_metric(b, path)
    delta = None if value_a is None or value_b is None else value_b - value_a
    return MetricDelta(metric=path, a=value_a, b=value_b, delta=delta)
