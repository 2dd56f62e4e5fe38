"""Which way is better for a metric or an evaluator: the one rule every pass mark, gate and comparison uses.

Metrics and evaluators named `latency*`, `cost*`, `tokens*`, `*Duration` or `*Latency` are better
when smaller: a score passes its pass mark when it is at or below it, a gate when the value is at
most its limit, and a comparison counts a drop as an improvement.
"""

from __future__ import annotations

#: Gates compare with this relative slack, so a mean that rounding puts a hair off its limit
#: (three scores of 0.35 average to 0.34999999999999998) still counts as on the limit.
_SLACK = 1e-9


def lower_is_better(metric: str) -> bool:
    """`latency*`, `cost*`, `tokens*`, `*Duration` and `*Latency` are better when smaller."""
    name = metric.split(".", 1)[0]
    return name.startswith(("latency", "cost", "tokens")) or name.endswith(("Duration", "Latency"))


def meets(actual: float, limit: float, *, lower: bool) -> bool:
    """`actual <= limit` for lower-is-better metrics, else `actual >= limit`, up to float rounding."""
    slack = _SLACK * max(1.0, abs(limit))
    return actual <= limit + slack if lower else actual >= limit - slack


def passes(evaluator: str, score: float, mark: float) -> bool:
    """Whether one item's `score` from `evaluator` passes its pass mark, in the evaluator's direction."""
    return meets(score, mark, lower=lower_is_better(evaluator))


def gain(metric: str, delta: float) -> float:
    """`delta` (new - old) signed so that positive means better: negated for lower-is-better metrics."""
    return -delta if lower_is_better(metric) else delta


def mark_words(evaluator: str) -> tuple[str, str]:
    """How a failing score of `evaluator` is described: ("low", "<") or, lower-is-better, ("high", ">")."""
    return ("high", ">") if lower_is_better(evaluator) else ("low", "<")
