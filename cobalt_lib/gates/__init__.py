"""Quality gates over a run's aggregates: thresholds, no-regression, error rate, custom checks."""

from __future__ import annotations

from ._assertions import (
    RUN_METRICS,
    Assertion,
    Custom,
    ErrorRate,
    NoRegression,
    Threshold,
    assertion,
    check_metric,
    config_assertions,
    experiment_gates,
    lower_is_better,
    meets,
    no_regression,
    threshold,
)

__all__ = [
    "RUN_METRICS",
    "Assertion",
    "Custom",
    "ErrorRate",
    "NoRegression",
    "Threshold",
    "assertion",
    "check_metric",
    "config_assertions",
    "experiment_gates",
    "lower_is_better",
    "meets",
    "no_regression",
    "threshold",
]
