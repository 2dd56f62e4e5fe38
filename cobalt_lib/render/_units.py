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


def score(value: float | None, *, sign: bool = False, digits: int = 3) -> str:
    """A 0..1 score as `0.750` (three decimals, as every table shows scores), or a score difference
    (`+0.050` with `sign`); `-` for none."""
    if value is None:
        return "-"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


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


def signed(value: float | None, digits: int = 2) -> str:
    """A difference such as a bias or a change of kappa, with its sign (`+0.20`, `-0.05`); `–` for none."""
    return "–" if value is None else f"{value:+.{digits}f}"


def interval(low: float | None, high: float | None, *, rate: bool = False) -> str:
    """A 95% interval as `[0.41, 0.78]` (or `[41%, 78%]` for rates); empty when there is none."""
    if low is None or high is None:
        return ""
    return f"[{percent(low)}, {percent(high)}]" if rate else f"[{decimal(low)}, {decimal(high)}]"


def points(delta: float | None) -> str:
    """A change between two rates in percentage points (`+30 points`); `–` for none."""
    return "–" if delta is None else f"{delta * 100:+.0f} points"


def count(n: int, noun: str) -> str:
    """`1 item`, `3 items`, `0 errors`: the noun agrees with the number."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def percent(rate: float | None) -> str:
    """A rate 0..1 as `90%`, or `92.5%` when a whole percent would round it; `–` for none."""
    if rate is None:
        return "–"
    whole = round(rate * 100, 1)
    return f"{whole:.0f}%" if whole == int(whole) else f"{whole:.1f}%"


def decimal(value: float | None, digits: int = 2) -> str:
    """A plain figure such as a mean absolute error or a kappa, `digits` after the point; `–` for none."""
    return "–" if value is None else f"{value:.{digits}f}"


def score_delta(value: float | None) -> str:
    """A change of score, signed, `+0.050` or `-0.120`; a rounding residue reads `+0.000`, never `-0.000`."""
    return "–" if value is None else f"{round(value, 3) + 0.0:+.3f}"
