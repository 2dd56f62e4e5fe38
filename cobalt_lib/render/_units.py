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
    """A score (0..1) or a mean of scores with three decimals, `0.850`; `–` for none."""
    return "–" if value is None else f"{value:.3f}"


def score_delta(value: float | None) -> str:
    """A change of score, signed, `+0.050` or `-0.120`; a rounding residue reads `+0.000`, never `-0.000`."""
    return "–" if value is None else f"{round(value, 3) + 0.0:+.3f}"
