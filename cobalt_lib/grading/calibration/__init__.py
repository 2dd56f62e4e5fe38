"""Grading the grader: a grader's scores against human labels, across models, with a verdict."""

from __future__ import annotations

from ._agreement import krippendorff_alpha_ordinal, pairwise, panel_grade
from ._calibrate import PANEL, agreement, calibrate, disagreements, model_calibration, panel_grades
from ._metrics import (
    SCALE,
    confusion,
    exact_rate,
    kappa_interval,
    majority_share,
    mean_absolute_error,
    ranks,
    self_consistency,
    signed_bias,
    spearman,
    weighted_kappa,
    within_one_rate,
)
from ._models import Agreement, Calibration, Coverage, Disagreement, Grade, ModelCalibration, PairAgreement, Verdict
from ._stored import EXPERIMENT_PREFIX, StoredCalibration, grading_config, stored_calibrations
from ._verdict import (
    GATING_KAPPA,
    GATING_WITHIN_ONE,
    MIN_RELIABLE_SAMPLES,
    MONITORING_KAPPA,
    MONITORING_WITHIN_ONE,
    verdict,
)

__all__ = [
    "EXPERIMENT_PREFIX",
    "GATING_KAPPA",
    "GATING_WITHIN_ONE",
    "MIN_RELIABLE_SAMPLES",
    "MONITORING_KAPPA",
    "MONITORING_WITHIN_ONE",
    "PANEL",
    "SCALE",
    "Agreement",
    "Calibration",
    "Coverage",
    "Disagreement",
    "Grade",
    "ModelCalibration",
    "PairAgreement",
    "StoredCalibration",
    "Verdict",
    "agreement",
    "calibrate",
    "confusion",
    "disagreements",
    "exact_rate",
    "grading_config",
    "kappa_interval",
    "krippendorff_alpha_ordinal",
    "majority_share",
    "mean_absolute_error",
    "model_calibration",
    "pairwise",
    "panel_grade",
    "panel_grades",
    "ranks",
    "self_consistency",
    "signed_bias",
    "spearman",
    "stored_calibrations",
    "verdict",
    "weighted_kappa",
    "within_one_rate",
]
