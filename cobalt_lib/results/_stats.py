"""Descriptive statistics: small pure functions with guards for empty input."""

from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(sorted_values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile (numpy's default) of already sorted values; q in 0..100."""
    if not 0 <= q <= 100:
        raise ValueError(f"percentile q={q!r} must be between 0 and 100.")
    if not sorted_values:
        return None
    if len(sorted_values) == 1:
        return float(sorted_values[0])
    rank = (len(sorted_values) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(sorted_values) - 1)
    frac = rank - low
    return float(sorted_values[low] + (sorted_values[high] - sorted_values[low]) * frac)


def mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def stddev(values: Sequence[float]) -> float | None:
    """Population standard deviation (0 for one value)."""
    if not values:
        return None
    m = math.fsum(values) / len(values)
    return math.sqrt(math.fsum((v - m) ** 2 for v in values) / len(values))


def describe(values: Sequence[float]) -> dict[str, float | int | None]:
    """mean, median, p50, p95, p99, min, max, stddev and count of `values`."""
    ordered = sorted(values)
    median = percentile(ordered, 50)
    return {
        "avg": mean(ordered),
        "median": median,
        "p50": median,
        "p95": percentile(ordered, 95),
        "p99": percentile(ordered, 99),
        "min": ordered[0] if ordered else None,
        "max": ordered[-1] if ordered else None,
        "stddev": stddev(ordered),
        "count": len(ordered),
    }
