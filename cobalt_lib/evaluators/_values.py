"""What a kind's `score` may return, turned into an `Evaluation`."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..results._report import EvalResult, Evaluation

#: Said when a value cannot be used, so the user knows every shape that works.
RETURN_SHAPES = "return a float in 0..1, a bool, a dict with 'score' or an EvalResult"


def to_evaluation(value: Any, name: str) -> Evaluation:
    """An `Evaluation` as is; a float, bool, dict with `score` or `EvalResult` as a 0..1 score.

    Anything else, NaN or a score outside 0..1 is an `eval-error` that names the evaluator.
    """
    if isinstance(value, Evaluation):
        return value
    reason = None
    if isinstance(value, EvalResult):
        value, reason = value.score, value.reason
    elif isinstance(value, Mapping):
        if "score" not in value:
            return Evaluation(status="eval-error", error=f"evaluator {name!r} returned a dict without 'score'",
                              raw_response=repr(value)[:500])
        value, reason = value["score"], value.get("reason")
    if isinstance(value, bool):
        value = 1.0 if value else 0.0
    if not isinstance(value, int | float):
        return Evaluation(status="eval-error", raw_response=repr(value)[:500],
                          error=f"evaluator {name!r} returned {type(value).__name__}; {RETURN_SHAPES}")
    if math.isnan(value):
        return Evaluation(status="eval-error", raw_response="nan",
                          error=f"evaluator {name!r} returned NaN; return a float in 0..1")
    if not 0.0 <= value <= 1.0:
        return Evaluation(status="eval-error", raw_score=float(value), raw_response=repr(value),
                          error=f"evaluator {name!r} returned score {value}, outside 0..1")
    return Evaluation(score=float(value), reason=None if reason is None else str(reason))
