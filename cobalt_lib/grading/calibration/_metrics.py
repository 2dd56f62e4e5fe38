"""Agreement statistics between a grader and ground truth on the -3..3 scale, as small pure functions.

Written here rather than imported: each is a few lines, they run on hundreds of pairs, and
`cobalt grade` should not pull in scipy or scikit-learn (only the bootstrap uses numpy). The tests
check them against independent routes: kappa's closed form in moments, scipy's Spearman and the
`krippendorff` package.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

SCALE = tuple(range(-3, 4))
_INDEX = {label: i for i, label in enumerate(SCALE)}
#: Quadratic weights over the full scale: (i - j)^2 / 36, whichever labels occur.
_WEIGHTS = [[(i - j) ** 2 / (len(SCALE) - 1) ** 2 for j in range(len(SCALE))] for i in range(len(SCALE))]

Pairs = Sequence[tuple[int, int]]
#: Resample-by-sample cells counted at once in the bootstrap (8 bytes each, twice: about 8 MB).
_CHUNK_CELLS = 500_000


def exact_rate(pairs: Pairs) -> float | None:
    """Share of (truth, grade) pairs that are equal."""
    return sum(t == g for t, g in pairs) / len(pairs) if pairs else None


def within_one_rate(pairs: Pairs) -> float | None:
    """Share of pairs at most one step apart."""
    return sum(abs(t - g) <= 1 for t, g in pairs) / len(pairs) if pairs else None


def mean_absolute_error(pairs: Pairs) -> float | None:
    return math.fsum(abs(t - g) for t, g in pairs) / len(pairs) if pairs else None


def signed_bias(pairs: Pairs) -> float | None:
    """mean(grade - truth): positive is a lenient grader, negative a harsh one."""
    return math.fsum(g - t for t, g in pairs) / len(pairs) if pairs else None


def confusion(pairs: Pairs) -> list[list[int]]:
    """Counts, rows the truth and columns the grade, both -3..3."""
    matrix = [[0] * len(SCALE) for _ in SCALE]
    for t, g in pairs:
        matrix[_INDEX[t]][_INDEX[g]] += 1
    return matrix


def weighted_kappa(pairs: Pairs) -> float | None:
    """Cohen's kappa with quadratic weights over -3..3: 1 - sum(w * observed) / sum(w * expected).

    None when it is undefined: no pairs, or chance agreement already perfect (every truth and every
    grade the same one label).
    """
    return _kappa(confusion(pairs), len(pairs))


def _kappa(matrix: list[list[int]], n: int) -> float | None:
    if n == 0:
        return None
    rows = [sum(row) for row in matrix]
    cols = [sum(matrix[i][j] for i in range(len(SCALE))) for j in range(len(SCALE))]
    observed = expected = 0.0
    for i, row in enumerate(matrix):
        for j, count in enumerate(row):
            observed += _WEIGHTS[i][j] * count
            expected += _WEIGHTS[i][j] * rows[i] * cols[j] / n
    return None if expected == 0 else 1.0 - observed / expected


def kappa_interval(groups: Sequence[Pairs], *, resamples: int = 1000, seed: int = 0,
                   confidence: float = 0.95) -> tuple[float, float] | None:
    """A percentile bootstrap interval for the weighted kappa, resampling whole samples (`groups`:
    one list of pairs per sample, all its iterations), so repeated iterations of one sample do not
    pass for independent evidence. None with fewer than two samples or no defined resample."""
    import numpy as np  # here: `import cobalt_lib` stays light

    groups = [g for g in groups if g]
    if len(groups) < 2:
        return None
    counts = np.array([np.ravel(confusion(g)) for g in groups], dtype=float)  # one flat 7x7 matrix per sample
    weights = np.ravel(np.array(_WEIGHTS))
    values: list[float] = []
    rng = np.random.default_rng(seed)
    # The picks are drawn in blocks of 500 resamples (that fixes the random stream: the same seed gives
    # the same interval as ever); int32 draws the very same values as int64 for fewer bytes.
    pick_type = np.int32 if len(groups) < 2**31 else np.int64
    for start in range(0, resamples, 500):
        picks = rng.integers(0, len(groups), size=(min(500, resamples - start), len(groups)), dtype=pick_type)
        values += _kappas(_resampled_totals(picks, counts), weights)
    if not values:
        return None
    values.sort()
    tail = (1 - confidence) / 2
    return _quantile(values, tail), _quantile(values, 1 - tail)


def _resampled_totals(picks: Any, counts: Any) -> Any:
    """Each resample's summed confusion counts, (resamples, 49), from how often it picked each sample.

    A few resamples at a time, so memory stays a few megabytes whatever the number of samples (indexing
    `counts[picks]` would hold resamples x samples x 49 floats: 980 MB at 5,000 samples). The sums are
    of whole numbers, exact in float64, so they equal the direct sum bit for bit."""
    import numpy as np

    resamples, samples = picks.shape
    rows = max(1, _CHUNK_CELLS // samples)
    totals = np.empty((resamples, counts.shape[1]))
    for first in range(0, resamples, rows):
        chunk = picks[first:first + rows]
        offsets = np.arange(len(chunk), dtype=np.int64)[:, None] * samples
        times = np.bincount((chunk + offsets).ravel(), minlength=len(chunk) * samples).reshape(len(chunk), samples)
        totals[first:first + len(chunk)] = times @ counts
    return totals


def _kappas(totals: Any, weights: Any) -> list[float]:
    """The weighted kappa of each resample's summed counts; undefined ones left out."""
    import numpy as np

    n = totals.sum(axis=1)
    matrices = totals.reshape(-1, len(SCALE), len(SCALE))
    expected_cells = np.einsum("bi,bj->bij", matrices.sum(axis=2), matrices.sum(axis=1)).reshape(len(n), -1)
    observed = totals @ weights
    expected = (expected_cells @ weights) / n
    defined = expected > 0
    result: list[float] = (1.0 - observed[defined] / expected[defined]).tolist()
    return result


def _quantile(ordered: list[float], q: float) -> float:
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties given their average rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    result = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in range(start, end + 1):
            result[order[k]] = (start + end) / 2 + 1
        start = end + 1
    return result


def spearman(pairs: Sequence[tuple[float, float]]) -> float | None:
    """Spearman's rank correlation: Pearson's r of the average ranks. None when either side is constant."""
    if len(pairs) < 2:
        return None
    x, y = ranks([t for t, _ in pairs]), ranks([g for _, g in pairs])
    mx, my = statistics.fmean(x), statistics.fmean(y)
    sxy = math.fsum((a - mx) * (b - my) for a, b in zip(x, y, strict=True))
    sxx, syy = math.fsum((a - mx) ** 2 for a in x), math.fsum((b - my) ** 2 for b in y)
    return None if sxx == 0 or syy == 0 else sxy / math.sqrt(sxx * syy)


def self_consistency(per_sample: Sequence[Sequence[int]]) -> tuple[float | None, float | None, int]:
    """Across iterations: the share of samples whose usable grades all agree, the mean per-sample
    (population) standard deviation, and how many samples had two or more usable grades."""
    repeated = [grades for grades in per_sample if len(grades) >= 2]
    if not repeated:
        return None, None, 0
    same = sum(len(set(grades)) == 1 for grades in repeated) / len(repeated)
    spread = statistics.fmean(statistics.pstdev(grades) for grades in repeated)
    return same, spread, len(repeated)


def majority_share(truths: Sequence[int]) -> tuple[int | None, float | None]:
    """The most common truth label and its share: a high exact rate means little if this is high too."""
    if not truths:
        return None, None
    counts = {label: truths.count(label) for label in set(truths)}
    label = max(sorted(counts), key=lambda k: counts[k])
    return label, counts[label] / len(truths)
