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


def score(value: float | None) -> str:
    """A score or statistic with three significant digits and no exponent (`0.55`, `1`, `0.0123`); `-` for none."""
    if value is None:
        return "-"
    if value == 0 or abs(value) >= 0.001:
        return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"
    return f"{value:.{2 - math.floor(math.log10(abs(value)))}f}"


def percent(fraction: float | None) -> str:
    """A fraction 0..1 as a whole percentage (`80%`), one decimal under 10% (`2.5%`); `-` for none."""
    if fraction is None:
        return "-"
    value = fraction * 100
    return f"{value:.1f}%" if 0 < abs(value) < 10 else f"{value:.0f}%"
