"""Money, durations and counts as people read them: the names the reporter, compare and exports have
always imported, from the one number module (`_numbers`, which documents the rules)."""

from __future__ import annotations

from .._numbers import (
    UNKNOWN,
    count,
    data_size,
    decimal,
    delta,
    delta_interval,
    duration,
    fixed,
    integer,
    interval,
    metric,
    money,
    number,
    percent,
    points,
    raw,
    score,
    seconds,
    signed,
    threshold,
)

__all__ = [
    "UNKNOWN",
    "count",
    "data_size",
    "decimal",
    "delta",
    "delta_interval",
    "duration",
    "fixed",
    "integer",
    "interval",
    "metric",
    "money",
    "number",
    "percent",
    "points",
    "raw",
    "score",
    "seconds",
    "signed",
    "threshold",
]
