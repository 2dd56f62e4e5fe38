"""Two grading runs compared by agreement with the human scores, not by mean grade.

A grader that agrees better with the humans can grade lower on average; its mean grade says nothing
about its quality. Per model both runs graded with: exact, within-one agreement and quadratic kappa
(with its interval) in each run, over the labelled samples both graded (paired by sample id), and a
paired bootstrap over those samples of the exact-agreement difference, which gives the verdict.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..._numbers import interval, percent
from ...results._compare import AgreementDelta, bootstrap_ci
from ...results._pairing import ItemPair, pair_items
from ...results._report import ExperimentReport, ItemResult
from ._metrics import exact_rate, kappa_interval, weighted_kappa, within_one_rate
from ._stored import grading_config

Pairs = list[tuple[int, int]]


def is_grading_run(report: ExperimentReport) -> bool:
    """Made by `cobalt grade`: its config holds the grading and its calibration."""
    return grading_config(report.config) is not None


def compare_agreement(a: ExperimentReport, b: ExperimentReport, *, resamples: int = 2000, seed: int = 0,
                      confidence: float = 0.95) -> list[AgreementDelta]:
    """Per model graded in both runs, agreement with the human scores in A and in B, and its verdict."""
    pairs, _ = pair_items(a.items, b.items)
    models = [m for m in dict.fromkeys(n for r in a.items for n in r.evaluations)
              if any(m in r.evaluations for r in b.items)]
    return [_model_delta(m, pairs, resamples, seed, confidence) for m in models]


def _grades(repeats: Sequence[ItemResult], model: str) -> Pairs:
    """(truth, grade) of each repeat with a usable grade; none when the sample has no human score."""
    truth = repeats[0].item.get("truth") if repeats else None
    if not isinstance(truth, int):
        return []
    found = []
    for r in repeats:
        ev = r.evaluations.get(model)
        if r.status == "ok" and ev is not None and ev.status == "ok" and ev.raw_score is not None:
            found.append((truth, int(ev.raw_score)))
    return found


def _exact(pairs: Pairs) -> float:
    return math.fsum(t == g for t, g in pairs) / len(pairs)


def _model_delta(model: str, pairs: list[ItemPair], resamples: int, seed: int, confidence: float) -> AgreementDelta:
    both = [(ga, gb) for p in pairs if (ga := _grades(p.a, model)) and (gb := _grades(p.b, model))]
    side_a, side_b = [g for g, _ in both], [g for _, g in both]
    flat_a, flat_b = [x for g in side_a for x in g], [x for g in side_b for x in g]
    result = AgreementDelta(
        model=model, samples=len(both), exact_a=exact_rate(flat_a), exact_b=exact_rate(flat_b),
        within_one_a=within_one_rate(flat_a), within_one_b=within_one_rate(flat_b),
        kappa_a=weighted_kappa(flat_a), kappa_b=weighted_kappa(flat_b),
        kappa_a_ci=kappa_interval(side_a, resamples=resamples, seed=seed, confidence=confidence),
        kappa_b_ci=kappa_interval(side_b, resamples=resamples, seed=seed, confidence=confidence))
    if len(both) < 2:
        result.why = f"not comparable: {len(both)} labelled sample graded in both runs (2 or more are needed)"
        return result
    diffs = [_exact(gb) - _exact(ga) for ga, gb in both]
    result.exact_delta = math.fsum(diffs) / len(diffs)
    low, high = result.ci_low, result.ci_high = bootstrap_ci(diffs, resamples=resamples, seed=seed,
                                                             confidence=confidence)
    result.verdict = "improved" if low > 0 else "regressed" if high < 0 else "no significant change"
    head = (f"exact agreement {percent(result.exact_a)} -> {percent(result.exact_b)} over {len(both)} labelled "
            f"samples, paired {percent(confidence)} CI {interval(low, high, sign=True)}")
    result.why = (f"{result.verdict}: {head}" + (" contains 0" if result.verdict == "no significant change"
                                                  else f" entirely {'above' if low > 0 else 'below'} 0"))
    return result
