"""The drift chart on seeded simulated windows: a known drop flagged at its window (or within the documented
delay) and not before, and the documented false-alarm rate over 1,000 null windows. Pure computation."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from cobalt_lib.monitor._drift import ALPHA, RECENT, Window, detection_delay, drift_test, t_cdf, t_quantile


def window(rng: np.random.Generator, key: str, mean: float) -> Window:
    """A day of judge scores in 0..1 (a Beta around `mean`), 40 to 80 sampled traces."""
    n = int(rng.integers(40, 81))
    scores = rng.beta(mean * 6, (1 - mean) * 6, n)
    return Window(key, float(scores.mean()), float(scores.var(ddof=1)), n)


def day_mean(rng: np.random.Generator, shifted: bool = False) -> float:
    """A stable evaluator's day: 0.75, moved a little by the day's traffic; a shifted one 0.15 lower."""
    return 0.75 + rng.normal(0, 0.015) - (0.15 if shifted else 0.0)


def test_a_drop_at_window_20_is_flagged_there_and_not_before() -> None:
    rng = np.random.default_rng(20)
    windows: list[Window] = []
    flagged = []
    for day in range(30):
        windows.append(window(rng, f"day-{day}", day_mean(rng, shifted=day >= 20)))
        test = drift_test(windows, baseline=14)
        if test is not None and test.flagged:
            flagged.append(day)
    assert flagged and flagged[0] == 20 and all(day >= 20 for day in flagged)
    test = drift_test(windows[:21], baseline=14)
    assert test is not None and test.interval[0] < test.shift < test.interval[1] < 0
    assert test.sentence("helpful").startswith("helpful fell by ")


def test_the_false_alarm_rate_over_1000_null_windows_is_the_documented_one() -> None:
    rng = np.random.default_rng(1000)
    alarms = 0
    for _ in range(1000):
        history = [window(rng, f"day-{d}", day_mean(rng)) for d in range(14 + RECENT)]
        test = drift_test(history, baseline=14)
        assert test is not None
        alarms += test.flagged
    low, high = stats.binom.interval(0.99, 1000, ALPHA)
    assert low <= alarms <= high


def test_lower_is_better_flags_a_rise() -> None:
    rng = np.random.default_rng(5)
    history = [window(rng, f"d{d}", day_mean(rng)) for d in range(14)]
    history += [window(rng, f"d{d}", 0.95) for d in range(14, 14 + RECENT)]
    rose = drift_test(history, lower_is_better=True)
    assert rose is not None and rose.flagged and rose.limit > 0
    fell = drift_test(history)
    assert fell is not None and not fell.flagged


def test_too_few_windows_test_nothing() -> None:
    rng = np.random.default_rng(1)
    assert drift_test([window(rng, f"d{d}", 0.7) for d in range(14 + RECENT - 1)]) is None


def test_the_documented_delays_and_quantiles() -> None:
    assert [detection_delay(s) for s in (2, 3, 4)] == [3, 2, 1]
    for df in (3, 13, 40):
        assert t_quantile(0.99, df) == pytest.approx(stats.t.ppf(0.99, df), rel=1e-9)
        assert t_cdf(-1.7, df) == pytest.approx(stats.t.cdf(-1.7, df), rel=1e-9)
