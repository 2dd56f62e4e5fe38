"""Money and durations as people read them, shared by the reporter, compare and exports."""

from __future__ import annotations

import math


def money(value: float | None) -> str:
    """Dollars; sub-cent amounts keep three significant digits ($0.000027, not $0.0000)."""
    if value is None:
        return "unknown"
    if value == 0 or abs(value) >= 0.01:
        return f"${value:.4f}"
    return f"${value:.{2 - math.floor(math.log10(abs(value)))}f}"


def duration(ms: float | None) -> str:
    """Milliseconds as `4.24s`, `420ms`, `0.042ms` or `0.0000347ms`: three significant digits below 10 ms
    without trailing zeros, never a bare `0ms` for a fast call nor an exponent; `-` for none."""
    if ms is None:
        return "-"
    size = abs(ms)
    if size >= 1000:
        return f"{ms / 1000:.2f}s"
    if size >= 10 or size == 0:
        return f"{ms:.0f}ms"
    fixed = f"{ms:.{2 - math.floor(math.log10(size))}f}"
    return f"{fixed.rstrip('0').rstrip('.') if '.' in fixed else fixed}ms"


def count(n: int, noun: str) -> str:
    """`1 item`, `3 items`, `0 errors`: the noun agrees with the number."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def percent(share: float | None) -> str:
    """A share 0..1 as a whole percentage (`67%`), one decimal below 1% and above 99% where it matters
    (`99.5%`, never a rounded `100%` for a share short of 1); `-` for none."""
    if share is None:
        return "-"
    value = share * 100
    if 0 < abs(value) < 1 or 99 < abs(value) < 100:
        return f"{value:.1f}%"
    return f"{value:.0f}%"


def statistic(value: float | None, *, signed: bool = False) -> str:
    """An agreement statistic (kappa, rho, MAE, bias) to two decimals; `-` for none."""
    if value is None:
        return "-"
    return f"{value:+.2f}" if signed else f"{value:.2f}"


def interval(low: float | None, high: float | None, *, share: bool = False) -> str:
    """A 95% interval as `[0.41, 0.78]` (or `[41%, 78%]` for shares); empty when there is none."""
    if low is None or high is None:
        return ""
    return f"[{percent(low)}, {percent(high)}]" if share else f"[{statistic(low)}, {statistic(high)}]"


def points(delta: float | None) -> str:
    """A change between two shares in percentage points (`+30 points`); `-` for none."""
    return "-" if delta is None else f"{delta * 100:+.0f} points"
