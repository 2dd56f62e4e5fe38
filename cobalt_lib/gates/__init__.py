"""Quality gates over a run's aggregates: thresholds, no-regression, error rate, custom checks, and
`calibrated` (the grader behind a gate was measured against human labels)."""

from __future__ import annotations

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
from ._calibrated import Calibrated, calibrated

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
