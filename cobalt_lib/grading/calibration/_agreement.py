"""Agreement between graders (models): pairwise rates and Krippendorff's alpha, and the panel's median."""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from itertools import combinations

from ._metrics import exact_rate, weighted_kappa, within_one_rate
from ._models import PairAgreement

Unit = tuple[str, int]


def pairwise(grades: Mapping[str, Mapping[Unit, int]]) -> list[PairAgreement]:
    """For each pair of models, over the units both graded: exact and within-one agreement and the
    quadratic weighted kappa between them."""
    result = []
    for a, b in combinations(grades, 2):
        shared = [(grades[a][u], grades[b][u]) for u in grades[a] if u in grades[b]]
        result.append(PairAgreement(model_a=a, model_b=b, units=len(shared), exact_rate=exact_rate(shared),
                                    within_one_rate=within_one_rate(shared), weighted_kappa=weighted_kappa(shared)))
    return result


def krippendorff_alpha_ordinal(units: Sequence[Sequence[int]]) -> float | None:
    """Krippendorff's alpha with the ordinal metric; `units` holds each unit's values (one per coder
    that rated it). Units with fewer than two values are not pairable and are left out.

    alpha = 1 - (n - 1) * sum(o_ck * d_ck) / sum(n_c * n_k * d_ck), with o the coincidence matrix,
    n_c its margins and d_ck = (sum of n_g for g from c to k - (n_c + n_k) / 2)^2. None when
    undefined (fewer than two pairable values, or every value the same).
    """
    pairable = [list(values) for values in units if len(values) >= 2]
    labels = sorted({v for values in pairable for v in values})
    index = {label: i for i, label in enumerate(labels)}
    size = len(labels)
    coincidence = [[0.0] * size for _ in range(size)]
    for values in pairable:
        m = len(values)
        for i, a in enumerate(values):
            for j, b in enumerate(values):
                if i != j:
                    coincidence[index[a]][index[b]] += 1 / (m - 1)
    margins = [math.fsum(row) for row in coincidence]
    n = math.fsum(margins)
    if n <= 1:
        return None

    def delta(c: int, k: int) -> float:
        low, high = min(c, k), max(c, k)
        return (math.fsum(margins[low:high + 1]) - (margins[c] + margins[k]) / 2) ** 2

    observed = math.fsum(coincidence[c][k] * delta(c, k) for c in range(size) for k in range(size))
    expected = math.fsum(margins[c] * margins[k] * delta(c, k) for c in range(size) for k in range(size))
    return None if expected == 0 else 1 - (n - 1) * observed / expected


def panel_grade(values: Sequence[int]) -> int | None:
    """The median of the models' grades, a half-way median rounded toward 0 (1.5 -> 1, -0.5 -> 0)."""
    if not values:
        return None
    return math.trunc(statistics.median(values))
