"""The human ceiling: how well the people who labelled an evaluator's items agree with each other, on the
items two or more of them labelled, and the judge against each of them and against their consensus.

A judge is measured against people, and people disagree: their agreement is the most a judge can be
expected to reach. Krippendorff's alpha over every person (ordinal on the scale's categories; for
pass/fail that is the nominal alpha), and per pair of people the kappa of the scale (quadratic weighted over
the categories for -3..3 and 0..1, Cohen's for pass/fail), each with a bootstrap interval over items.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from itertools import combinations

from pydantic import BaseModel, Field

from ._agreement import krippendorff_alpha_ordinal
from ._scales import Scale, categories, category

#: Who the judge is in the pairs of `HumanCeiling.judge`.
JUDGE = "judge"


class PairKappa(BaseModel):
    """The kappa between two raters (people, or the judge and a person) over the items both rated."""

    a: str
    b: str
    items: int
    kappa: float | None = None
    low: float | None = None
    high: float | None = None


class HumanCeiling(BaseModel):
    """Agreement between people, and the judge beside it."""

    people: list[str] = Field(default_factory=list)
    #: Items two or more people labelled (the ones agreement between people is measured on).
    shared_items: int = 0
    alpha: float | None = None
    alpha_low: float | None = None
    alpha_high: float | None = None
    kappa_name: str = "kappa"
    between_people: list[PairKappa] = Field(default_factory=list)
    judge_vs_people: list[PairKappa] = Field(default_factory=list)
    judge_vs_consensus: PairKappa | None = None
    #: Whether the judge agrees with the people's consensus at least as well as people agree with each other.
    judge_at_ceiling: bool | None = None
    text: str = ""


def consensus(scale: Scale, values: list[float]) -> float:
    """The people's consensus on one item: the median (the lower median on a scale of categories, so it is
    one of them; 0..1 keeps the plain median)."""
    return float(statistics.median(values) if scale == "0..1" else statistics.median_low(values))


def human_ceiling(scale: Scale, labels: Mapping[str, Mapping[str, float]], judged: Mapping[str, float], *,
                  resamples: int = 1000, seed: int = 0) -> HumanCeiling | None:
    """`labels` {item: {person: value}}, `judged` {item: the judge's value}; None when no item has two people."""
    shared = {item: by for item, by in labels.items() if len(by) >= 2}
    if not shared:
        return None
    people = sorted({who for by in labels.values() for who in by})
    name = "Cohen's kappa" if scale == "pass/fail" else "weighted kappa"
    result = HumanCeiling(people=people, shared_items=len(shared), kappa_name=name)
    units = {item: [category(scale, v) for v in by.values()] for item, by in shared.items()}
    result.alpha = krippendorff_alpha_ordinal(list(units.values()))
    result.alpha_low, result.alpha_high = _alpha_interval(list(units.values()), resamples, seed)
    for a, b in combinations(people, 2):
        pairs = {item: (by[a], by[b]) for item, by in labels.items() if a in by and b in by}
        result.between_people.append(_pair(scale, a, b, pairs, resamples, seed))
    for who in people:
        pairs = {item: (by[who], judged[item]) for item, by in labels.items() if who in by and item in judged}
        result.judge_vs_people.append(_pair(scale, JUDGE, who, pairs, resamples, seed))
    agreed = {item: (consensus(scale, list(by.values())), judged[item]) for item, by in labels.items()
              if item in judged}
    result.judge_vs_consensus = _pair(scale, JUDGE, "consensus", agreed, resamples, seed)
    result.judge_at_ceiling, result.text = _verdict(result)
    return result


def _pair(scale: Scale, a: str, b: str, pairs: Mapping[str, tuple[float, float]], resamples: int,
          seed: int) -> PairKappa:
    from . import _figures as f

    size = len(categories(scale))
    groups = f.matrices(size, [[(category(scale, x), category(scale, y))] for x, y in pairs.values()])
    weights = None if scale == "pass/fail" else f.quadratic_weights(size)
    value = f.point(f.kappa(groups.sum(axis=0), weights)) if pairs else None
    interval = f.bootstrap(groups, lambda m: f.kappa(m, weights), resamples=resamples, seed=seed)
    return PairKappa(a=a, b=b, items=len(pairs), kappa=value, low=interval[0] if interval else None,
                     high=interval[1] if interval else None)


def _alpha_interval(units: list[list[int]], resamples: int, seed: int) -> tuple[float | None, float | None]:
    import numpy as np

    if len(units) < 2:
        return None, None
    rng = np.random.default_rng(seed)
    found = [krippendorff_alpha_ordinal([units[i] for i in rng.integers(0, len(units), len(units))])
             for _ in range(resamples)]
    values = [v for v in found if v is not None]
    if not values:
        return None, None
    low, high = np.quantile(values, [0.025, 0.975])
    return float(low), float(high)


def _verdict(ceiling: HumanCeiling) -> tuple[bool | None, str]:
    from ..._numbers import score

    people = [p.kappa for p in ceiling.between_people if p.kappa is not None]
    judge = ceiling.judge_vs_consensus.kappa if ceiling.judge_vs_consensus else None
    if not people or judge is None:
        return None, "too few shared labels to compare the judge with the people's agreement"
    between = statistics.fmean(people)
    if judge >= between - 1e-9:
        return True, (f"the judge agrees with the people's consensus ({ceiling.kappa_name} {score(judge)}) as well "
                      f"as they agree with each other ({score(between)}): it is at the human ceiling")
    return False, (f"the judge agrees with the people's consensus less ({ceiling.kappa_name} {score(judge)}) than "
                   f"they agree with each other ({score(between)})")


def ceiling_lines(ceiling: HumanCeiling) -> list[str]:
    """The ceiling as lines for a terminal: alpha, each pair, the judge against each person and the consensus."""
    from ..._numbers import score

    def shown(value: float | None, low: float | None, high: float | None) -> str:
        interval = f" [{score(low)}, {score(high)}]" if low is not None and high is not None else ""
        return f"{score(value)}{interval}"

    lines = [f"people: {', '.join(ceiling.people)}; {ceiling.shared_items} items labelled by two or more",
             f"Krippendorff's alpha between people {shown(ceiling.alpha, ceiling.alpha_low, ceiling.alpha_high)}"]
    lines += [f"{p.a} vs {p.b}: {ceiling.kappa_name} {shown(p.kappa, p.low, p.high)} over {p.items} items"
              for p in [*ceiling.between_people, *ceiling.judge_vs_people]
              + ([ceiling.judge_vs_consensus] if ceiling.judge_vs_consensus else [])]
    return [*lines, ceiling.text]


