"""Quality gates over a run's aggregates: thresholds, no-regression, error rate, custom checks, and
`calibrated` (the grader behind a gate was measured against human labels)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value
