"""Quality gates over a run's aggregates: thresholds, no-regression, error rate, custom checks, and
`calibrated` (the grader behind a gate was measured against human labels)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names
from ..results._direction import lower_is_better, meets
from ._assertions import (
    RUN_METRICS,
    Assertion,
    Custom,
    ErrorRate,
    EvaluatorsScored,
    NoRegression,
    Threshold,
    assertion,
    check_metric,
    config_assertions,
    experiment_gates,
    no_regression,
    threshold,
)

if TYPE_CHECKING:
    from ..grading._calibrated import Calibrated, calibrated

#: The `calibrated` gate is the grading wing's (it reads graders and stored calibrations), loaded on first use:
#: a run whose gates are thresholds does not load the wing.
_LAZY = {"Calibrated": "..grading._calibrated", "calibrated": "..grading._calibrated"}

__all__ = [
    "RUN_METRICS",
    "Assertion",
    "Calibrated",
    "Custom",
    "ErrorRate",
    "EvaluatorsScored",
    "NoRegression",
    "Threshold",
    "assertion",
    "calibrated",
    "check_metric",
    "config_assertions",
    "experiment_gates",
    "lower_is_better",
    "meets",
    "no_regression",
    "threshold",
]


__getattr__, _ = lazy_names(__name__, _LAZY, __all__, globals())
