"""Drift: is an evaluator's mean over the latest windows below what its baseline windows lead one to expect?

A one-sided EWMA control chart per evaluator, its limit from the baseline's own spread:

- The **baseline** is the `N` windows before the chart's `RECENT` latest ones: their mean `m0` (the
  windows' means averaged) and the spread of their means `s` (their sample standard deviation), which
  holds both the day-to-day variation of production traffic and each window's sampling noise.
- The **chart** is the EWMA of the `RECENT` latest windows' means (weight `LAMBDA` on the newest),
  started from `m0`: `z = m0 + sum_i w_i (x_i - m0)`, `w_i = LAMBDA (1 - LAMBDA)^i`.
- **Corrected for sample size**: a window of `n` traces has a mean whose variance is `s^2` plus the
  sampling variance `v (1/n - 1/n0)`, `v` the baseline's pooled per-trace variance and `n0` its mean
  window size: a small window is noisier than the baseline's, a large one steadier.
- The statistic `t = (z - m0) / (s sqrt(sum_i w_i^2 c_i + (sum_i w_i)^2 / N))` (`c_i` each window's
  variance over `s^2`) is Student-t with `N - 1` degrees of freedom when the window means are normal and
  independent: the chart flags when `t` falls below `-t_{N-1}(1 - ALPHA)` (above, for an evaluator where
  lower is better). So the **false-alarm rate is ALPHA = 1% per window tested** on a stable evaluator,
  whatever `N`; `tests/monitor/test_drift.py` checks it over 1,000 seeded null windows.
- **Delay**: with `LAMBDA = 0.5`, a drop of 3 baseline spreads (N = 14) is flagged on the second window
  after it, 4 spreads on the first (`detection_delay`, tabled in docs/monitors.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .._numbers import decimal, number

#: The false-alarm rate per window tested on a stable evaluator.
ALPHA = 0.01
LAMBDA = 0.5
#: The windows the chart averages; the baseline is the `N` windows before them.
RECENT = 3


@dataclass(frozen=True)
class Window:
    """One window's figures for one evaluator: its mean score, the scores' variance and how many."""

    key: str
    mean: float
    variance: float
    count: int


@dataclass(frozen=True)
class DriftTest:
    """The chart's reading at the latest window."""

    window: str
    baseline_mean: float
    #: The EWMA of the recent windows, and its shift from the baseline mean.
    ewma: float
    shift: float
    #: The shift's 95% interval (from the chart's own standard error).
    interval: tuple[float, float]
    statistic: float
    #: The limit `statistic` is held against (negative: a drop is drift).
    limit: float
    flagged: bool
    baseline_windows: int
    #: The EWMA value (in `ewma`'s units) past which the chart flags: the limit a control chart draws.
    bound: float = 0.0

    def sentence(self, evaluator: str) -> str:
        moved = "fell" if self.shift < 0 else "rose"
        low, high = self.interval
        return (f"{evaluator} {moved} by {number(abs(self.shift))} to {number(self.ewma)} (95% interval "
                f"{number(low, sign=True)} to {number(high, sign=True)}) against its {self.baseline_windows}-window "
                f"baseline of {number(self.baseline_mean)}; t = {decimal(self.statistic)}, "
                f"limit {decimal(self.limit)}.")


def drift_test(windows: Sequence[Window], *, baseline: int = 14, lower_is_better: bool = False) -> DriftTest | None:
    """The chart at the last of `windows` (oldest first); None while there are fewer than
    `baseline + RECENT` windows with scores."""
    scored = [w for w in windows if w.count > 0]
    if len(scored) < baseline + RECENT or baseline < 3:
        return None
    base, recent = scored[-(baseline + RECENT):-RECENT], scored[-RECENT:]
    m0 = sum(w.mean for w in base) / baseline
    s2 = sum((w.mean - m0) ** 2 for w in base) / (baseline - 1)
    pooled = sum(w.variance * w.count for w in base) / max(1, sum(w.count for w in base))
    n0 = sum(w.count for w in base) / baseline
    weights = [LAMBDA * (1 - LAMBDA) ** i for i in range(RECENT)]  # newest first
    newest_first = list(reversed(recent))
    spread = max(s2, 1e-12)
    variances = [max(spread + pooled * (1 / w.count - 1 / n0), spread * 0.05) for w in newest_first]
    shift = sum(wt * (w.mean - m0) for wt, w in zip(weights, newest_first, strict=True))
    error = math.sqrt(sum(wt * wt * v for wt, v in zip(weights, variances, strict=True))
                      + sum(weights) ** 2 * spread / baseline)
    statistic = shift / error
    critical = t_quantile(1 - ALPHA, baseline - 1)
    limit = critical if lower_is_better else -critical
    flagged = statistic > limit if lower_is_better else statistic < limit
    wide = t_quantile(0.975, baseline - 1) * error
    # The EWMA's shift is the recent windows' shift damped by sum(weights): shown undamped, as a shift of the mean.
    scale = 1 / sum(weights)
    return DriftTest(window=recent[-1].key, baseline_mean=m0, ewma=m0 + shift * scale, shift=shift * scale,
                     interval=((shift - wide) * scale, (shift + wide) * scale), statistic=statistic, limit=limit,
                     flagged=flagged, baseline_windows=baseline, bound=m0 + limit * error * scale)


def control_chart(windows: Sequence[Window], *, baseline: int = 14,
                  lower_is_better: bool = False) -> dict[str, DriftTest]:
    """The chart's reading at every window that has enough before it, by window key (windows oldest first)."""
    found = {}
    for end in range(baseline + RECENT, len(windows) + 1):
        test = drift_test(windows[:end], baseline=baseline, lower_is_better=lower_is_better)
        if test is not None:
            found[test.window] = test
    return found


def detection_delay(spreads: float, *, baseline: int = 14) -> int | None:
    """After how many windows a lasting drop of `spreads` baseline spreads is flagged (windows of the
    baseline's size, the baseline estimated without error); None when not within `RECENT`."""
    weights = [LAMBDA * (1 - LAMBDA) ** i for i in range(RECENT)]
    error = math.sqrt(sum(w * w for w in weights) + sum(weights) ** 2 / baseline)
    critical = t_quantile(1 - ALPHA, baseline - 1)
    for after in range(1, RECENT + 1):
        if spreads * sum(weights[:after]) / error > critical:
            return after
    return None


def t_quantile(p: float, df: int) -> float:
    """Student's t quantile by bisection on its distribution function."""
    low, high = -1e3, 1e3
    for _ in range(200):
        middle = (low + high) / 2
        if t_cdf(middle, df) < p:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def t_cdf(t: float, df: int) -> float:
    x = df / (df + t * t)
    tail = 0.5 * _incomplete_beta(df / 2, 0.5, x)
    return 1 - tail if t > 0 else tail


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b) (Lentz's continued fraction)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x > (a + 1) / (a + b + 2):
        return 1 - _incomplete_beta(b, a, 1 - x)
    tiny = 1e-300
    c, d = 1.0, 1 - (a + b) * x / (a + 1)
    d = 1 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 300):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1 + numerator * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= c * d
        if abs(c * d - 1) < 1e-15:
            break
    return front * result / a
