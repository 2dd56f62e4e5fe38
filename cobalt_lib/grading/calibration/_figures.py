"""Agreement figures of a judge with human labels, each with its interval, from confusion matrices.

Every figure but Spearman's is a function of the confusion matrix (rows the label, columns the judge's
value, over the scale's categories), so one function serves the figure and its bootstrap. Intervals:
Wilson's score interval for a proportion (exact, within one, accuracy, precision, recall); Fisher's z
for Spearman's rho; for the rest (kappas, F1, MAE, bias) a percentile bootstrap that resamples whole
items, so an item judged in several repeats counts once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

#: The normal quantile of a two-sided 95% interval.
Z95 = 1.959963984540054

Matrix = Any  # a numpy array (..., K, K): one or many confusion matrices


def wilson(successes: float, n: int, z: float = Z95) -> tuple[float, float] | None:
    """Wilson's score interval for a proportion `successes / n`; None when n is 0."""
    if n == 0:
        return None
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def fisher_interval(rho: float | None, n: int, z: float = Z95) -> tuple[float, float] | None:
    """tanh(atanh(rho) +- z / sqrt(n - 3)): None with 3 pairs or fewer; (rho, rho) when rho is +-1."""
    if rho is None or n <= 3:
        return None
    if abs(rho) >= 1:
        return rho, rho
    centre, half = math.atanh(rho), z / math.sqrt(n - 3)
    return math.tanh(centre - half), math.tanh(centre + half)


def quadratic_weights(size: int) -> Any:
    import numpy as np

    index = np.arange(size)
    return (index[:, None] - index[None, :]) ** 2 / max(size - 1, 1) ** 2


def kappa(m: Matrix, weights: Any | None = None) -> Any:
    """Cohen's kappa, 1 - sum(w * observed) / sum(w * expected), with w the disagreement weights (0 on the
    diagonal, 1 elsewhere when None); NaN where chance agreement is already perfect."""
    import numpy as np

    size = m.shape[-1]
    w = 1.0 - np.eye(size) if weights is None else weights
    n = m.sum(axis=(-2, -1))
    expected = np.einsum("...i,...j->...ij", m.sum(axis=-1), m.sum(axis=-2)) / np.maximum(n, 1)[..., None, None]
    denominator = (w * expected).sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, 1.0 - (w * m).sum(axis=(-2, -1)) / denominator, np.nan)


def share(m: Matrix, mask: Any) -> Any:
    """The share of pairs in the cells `mask` selects."""
    import numpy as np

    n = m.sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n > 0, (m * mask).sum(axis=(-2, -1)) / n, np.nan)


def mean_over(m: Matrix, cell_values: Any) -> Any:
    """The mean of `cell_values[i, j]` over the pairs (MAE: |v_j - v_i|, bias: v_j - v_i)."""
    return share(m, cell_values)


def precision(m: Matrix) -> Any:
    """Of the judge's passes, the share the person passed: tp / (tp + fp), class 1 being pass."""
    import numpy as np

    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(m[..., :, 1].sum(axis=-1) > 0, m[..., 1, 1] / m[..., :, 1].sum(axis=-1), np.nan)


def recall(m: Matrix) -> Any:
    """Of the person's passes, the share the judge passed: tp / (tp + fn)."""
    import numpy as np

    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(m[..., 1, :].sum(axis=-1) > 0, m[..., 1, 1] / m[..., 1, :].sum(axis=-1), np.nan)


def f1(m: Matrix) -> Any:
    """2 tp / (2 tp + fp + fn): the harmonic mean of precision and recall."""
    import numpy as np

    tp, fp, fn = m[..., 1, 1], m[..., 0, 1], m[..., 1, 0]
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(2 * tp + fp + fn > 0, 2 * tp / (2 * tp + fp + fn), np.nan)


def bootstrap(groups: Any, statistic: Callable[[Any], Any], *, resamples: int = 1000, seed: int = 0,
              confidence: float = 0.95) -> tuple[float, float] | None:
    """A percentile interval of `statistic` over resamples of `groups` (one confusion matrix per item,
    shape (items, K, K)); None with fewer than two items or no defined resample."""
    import numpy as np

    if len(groups) < 2:
        return None
    rng = np.random.default_rng(seed)
    values: list[float] = []
    for start in range(0, resamples, 500):  # blocks keep memory flat for many items
        picks = rng.integers(0, len(groups), size=(min(500, resamples - start), len(groups)))
        found = np.asarray(statistic(groups[picks].sum(axis=1)), dtype=float)
        values += found[~np.isnan(found)].tolist()
    if not values:
        return None
    tail = (1 - confidence) / 2
    low, high = np.quantile(values, [tail, 1 - tail])
    return float(low), float(high)


def point(value: Any) -> float | None:
    """A numpy scalar as a float, NaN as None."""
    number = float(value)
    return None if math.isnan(number) else number


def matrices(categories: int, pairs_by_item: Sequence[Sequence[tuple[int, int]]]) -> Any:
    """One confusion matrix per item (rows the label's category, columns the judge's)."""
    import numpy as np

    groups = np.zeros((len(pairs_by_item), categories, categories))
    for g, pairs in enumerate(pairs_by_item):
        for truth, judged in pairs:
            groups[g, truth, judged] += 1
    return groups
