"""The records of a calibration: per model (and for the panel), agreement across models. Rates are 0..1."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class Grade(BaseModel):
    """One grading: a model's answer for one sample at one iteration (score None: unusable)."""

    model: str
    id: str
    iteration: int
    score: int | None = None
    notes: str = ""
    truth: int | None = None


class Disagreement(BaseModel):
    """A graded, labelled sample where the grader and the truth differ; `difference` is grade - truth."""

    id: str
    iteration: int
    truth: int
    grade: int
    difference: int
    notes: str = ""


class Coverage(BaseModel):
    """Usable answers over attempted gradings; unusable ones (after the one retry) are left out of every rate."""

    attempted: int = 0
    graded: int = 0
    errors: int = 0
    rate: float | None = None


class Verdict(BaseModel):
    """What the figures support: `gating` (kappa >= 0.7 and 90% within one step), `monitoring` (kappa >= 0.4
    and 70% within one), `exploration` (below)."""

    band: Literal["exploration", "monitoring", "gating"] | None = None
    reliable: bool = False
    labelled: int = 0
    text: str = ""


class ModelCalibration(BaseModel):
    """One model's (or the panel's) grades against the ground truth, over the usable grades of labelled samples."""

    model: str
    labelled: int = 0
    pairs: int = 0
    exact_match_rate: float | None = None
    within_one_rate: float | None = None
    mean_absolute_error: float | None = None
    signed_bias: float | None = None
    weighted_kappa: float | None = None
    kappa_ci_low: float | None = None
    kappa_ci_high: float | None = None
    majority_label: int | None = None
    majority_share: float | None = None
    spearman: float | None = None
    #: Rows the truth, columns the grade, both -3..3.
    confusion: list[list[int]] = Field(default_factory=list)
    self_consistency: float | None = None
    mean_stddev: float | None = None
    repeated_samples: int = 0
    coverage: Coverage = Field(default_factory=Coverage)
    disagreements: list[Disagreement] = Field(default_factory=list)
    verdict: Verdict = Field(default_factory=Verdict)


class PairAgreement(BaseModel):
    """Two models over the gradings both made usable: exact and within-one agreement, weighted kappa."""

    model_a: str
    model_b: str
    units: int = 0
    exact_rate: float | None = None
    within_one_rate: float | None = None
    weighted_kappa: float | None = None


class Agreement(BaseModel):
    """Across models: every pair, and Krippendorff's alpha (ordinal) over all of them."""

    pairs: list[PairAgreement] = Field(default_factory=list)
    krippendorff_alpha: float | None = None
    units: int = 0


class Calibration(BaseModel):
    """A grading run's calibration: per model, the panel (median of the models) and their agreement."""

    grader: str
    grader_hash: str
    samples: int = 0
    labelled_samples: int = 0
    iterations: int = 1
    models: dict[str, ModelCalibration] = Field(default_factory=dict)
    panel: ModelCalibration | None = None
    agreement: Agreement | None = None
