"""The scale a person labels an evaluator on, and where the evaluator's own verdict sits on it.

Three scales: `-3..3` (a grader's raw grade, ordinal), `pass/fail` (kinds that score 1 or 0, and the
verdict of any evaluator against its pass mark: pass 1, fail 0) and `0..1` (every other score). A
label is a number on its evaluator's scale; the categories the statistics count are the scale's points
(0..1 is cut into five equal bins for its kappa and confusion matrix).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

from ..._numbers import decimal

Scale = Literal["pass/fail", "0..1", "-3..3"]
SCALES: tuple[Scale, ...] = ("pass/fail", "0..1", "-3..3")

#: Built-in kinds whose score is 1 or 0 (a check passes or not): labelled pass/fail.
BINARY_KINDS = frozenset({
    "contains", "equals_json", "exact-match", "json_schema", "json_valid", "max_cost", "max_latency", "max_tokens",
    "max_tool_calls", "numeric_match", "regex", "starts_with",
})
#: Bins of the 0..1 scale for its kappa and confusion matrix: [0, .2), [.2, .4), ..., [.8, 1].
BINS = 5
#: What a label is on each scale, for messages.
SCALE_TEXT: dict[Scale, str] = {
    "pass/fail": "pass or fail (1 or 0)",
    "0..1": "a number from 0 to 1",
    "-3..3": "a whole number from -3 to 3",
}


def scale_of(described: Mapping[str, Any]) -> Scale:
    """The scale of an evaluator as a run stores it (`config.evaluators[i]`)."""
    kind = str(described.get("type") or "llm-judge")
    if kind == "grader":
        return "-3..3"
    return "pass/fail" if kind in BINARY_KINDS else "0..1"


def label_value(scale: Scale, value: Any) -> float | None:
    """The value as stored, or None when it is not a label on `scale` (`pass`/`fail` and booleans are
    read as 1 and 0 on the pass/fail scale)."""
    if scale == "pass/fail" and isinstance(value, str) and value.strip().lower() in ("pass", "fail"):
        return 1.0 if value.strip().lower() == "pass" else 0.0
    if isinstance(value, bool):
        return float(value) if scale == "pass/fail" else None
    if not isinstance(value, int | float) or not math.isfinite(value):
        return None
    if scale == "pass/fail":
        return float(value) if value in (0, 1) else None
    if scale == "-3..3":
        return float(value) if value == int(value) and -3 <= value <= 3 else None
    return float(value) if 0 <= value <= 1 else None


def judged_value(scale: Scale, score: float | None, raw_score: float | None, passed: bool | None) -> float | None:
    """The evaluator's own verdict on the scale of its labels: the raw grade, pass (1) or fail (0) against
    its pass mark, or the 0..1 score. None for an unusable score."""
    if scale == "-3..3":
        return None if raw_score is None else float(raw_score)
    if scale == "pass/fail":
        return None if passed is None else float(passed)
    return None if score is None else float(score)


def category(scale: Scale, value: float) -> int:
    """The index of the value's category on the scale: -3..3 -> 0..6, fail/pass -> 0/1, 0..1 -> its bin."""
    if scale == "-3..3":
        return int(value) + 3
    if scale == "pass/fail":
        return int(value)
    return min(int(value * BINS), BINS - 1)


def categories(scale: Scale) -> list[str]:
    """The categories' names, in order: the confusion matrix's rows and columns."""
    if scale == "-3..3":
        return [f"{v:+d}" for v in range(-3, 4)]
    if scale == "pass/fail":
        return ["fail", "pass"]
    return [f"{decimal(i / BINS, 1)}–{decimal((i + 1) / BINS, 1)}" for i in range(BINS)]


def category_values(scale: Scale) -> list[float]:
    """Each category's value on the scale (a bin's midpoint for 0..1)."""
    if scale == "-3..3":
        return [float(v) for v in range(-3, 4)]
    if scale == "pass/fail":
        return [0.0, 1.0]
    return [(i + 0.5) / BINS for i in range(BINS)]


def shown(scale: Scale, value: float | None) -> str:
    """A label or verdict as people read it: `+2`, `pass`, `0.75`."""
    if value is None:
        return "–"
    if scale == "-3..3":
        return f"{int(value):+d}"
    if scale == "pass/fail":
        return "pass" if value >= 1 else "fail"
    return decimal(value)
