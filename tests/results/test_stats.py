"""Descriptive statistics, checked against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from cobalt_lib.results._stats import describe, mean, percentile, stddev

SEEDS = [0, 1, 2, 3, 42]


def random_values(seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    size = int(rng.integers(2, 300))
    return [float(v) for v in rng.normal(loc=50, scale=20, size=size)]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("q", [0, 1, 25, 50, 75, 90, 95, 99, 99.9, 100])
def test_percentile_matches_numpy_linear(seed: int, q: float) -> None:
    values = random_values(seed)
    expected = float(np.percentile(values, q, method="linear"))
    assert percentile(sorted(values), q) == pytest.approx(expected, rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_stddev_matches_numpy_population(seed: int) -> None:
    values = random_values(seed)
    assert stddev(values) == pytest.approx(float(np.std(values, ddof=0)), rel=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_mean_matches_numpy(seed: int) -> None:
    values = random_values(seed)
    assert mean(values) == pytest.approx(float(np.mean(values)), rel=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_describe_matches_numpy(seed: int) -> None:
    values = random_values(seed)
    stats = describe(values)
    assert stats["count"] == len(values)
    assert stats["avg"] == pytest.approx(float(np.mean(values)), rel=1e-12)
    assert stats["median"] == stats["p50"] == pytest.approx(float(np.median(values)), rel=1e-12)
    assert stats["p95"] == pytest.approx(float(np.percentile(values, 95)), rel=1e-12)
    assert stats["p99"] == pytest.approx(float(np.percentile(values, 99)), rel=1e-12)
    assert stats["min"] == min(values)
    assert stats["max"] == max(values)
    assert stats["stddev"] == pytest.approx(float(np.std(values)), rel=1e-12)


def test_describe_does_not_need_sorted_input_or_change_it() -> None:
    values = [5.0, 1.0, 3.0, 2.0, 4.0]
    stats = describe(values)
    assert (stats["min"], stats["median"], stats["max"]) == (1.0, 3.0, 5.0)
    assert values == [5.0, 1.0, 3.0, 2.0, 4.0]


def test_known_small_values() -> None:
    stats = describe([1, 2, 3, 4])
    assert stats["avg"] == 2.5
    assert stats["median"] == 2.5
    assert stats["p95"] == pytest.approx(3.85)
    assert stats["stddev"] == pytest.approx(1.118033988749895)


def test_empty_input() -> None:
    assert describe([]) == {"avg": None, "median": None, "p50": None, "p95": None, "p99": None,
                            "min": None, "max": None, "stddev": None, "count": 0}
    assert percentile([], 50) is None
    assert mean([]) is None
    assert stddev([]) is None


def test_single_value() -> None:
    stats = describe([0.7])
    assert stats == {"avg": 0.7, "median": 0.7, "p50": 0.7, "p95": 0.7, "p99": 0.7,
                     "min": 0.7, "max": 0.7, "stddev": 0.0, "count": 1}


def test_identical_values_have_zero_stddev() -> None:
    assert stddev([0.25] * 1000) == pytest.approx(0.0, abs=1e-15)
    assert percentile([0.25] * 1000, 99) == 0.25


def test_mean_is_exact_for_many_small_floats() -> None:
    assert mean([0.1] * 10) == 0.1


def test_percentile_extremes_are_min_and_max() -> None:
    values = [1.0, 4.0, 9.0]
    assert percentile(values, 0) == 1.0
    assert percentile(values, 100) == 9.0


@pytest.mark.parametrize("q", [-1, 100.5, 150])
def test_percentile_out_of_range_is_an_error(q: float) -> None:
    with pytest.raises(ValueError, match="between 0 and 100"):
        percentile([1.0, 2.0, 3.0], q)


def test_results_are_floats() -> None:
    assert isinstance(percentile([1, 2], 50), float)
    assert isinstance(mean([1, 2]), float)
    assert isinstance(stddev([1, 2]), float)
