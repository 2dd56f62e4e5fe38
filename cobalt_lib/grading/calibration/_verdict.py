"""What the calibration figures support, in the bands teams use.

Quadratic kappa alone is too generous on a -3..3 scale: it forgives a grade two steps off as nearly
right, so a grader exact on 6 of 10 samples and two steps off on 3 reaches kappa 0.8. A band needs
both kappa and the share of grades within one step of the human's, which reads the same way to a
person as to the statistic.
"""

from __future__ import annotations

from typing import Literal

from ..._numbers import fixed, percent
from ._models import Verdict

#: Fewer labelled samples than this and the figures are not yet reliable, whatever they say.
MIN_RELIABLE_SAMPLES = 50
GATING_KAPPA = 0.7
MONITORING_KAPPA = 0.4
#: The share of grades at most one step from the human's label each band needs, beside its kappa.
GATING_WITHIN_ONE = 0.9
MONITORING_WITHIN_ONE = 0.7

Band = Literal["exploration", "monitoring", "gating"]


def verdict(kappa: float | None, within_one: float | None, labelled: int) -> Verdict:
    """gating: kappa >= 0.7 and 90% of grades within one step; monitoring: kappa >= 0.4 and 70% within
    one; else exploration. Under 50 labelled samples the verdict says the figures are not yet reliable."""
    if labelled == 0:
        return Verdict(band=None, reliable=False, labelled=0,
                       text="no verdict: no sample with a ground-truth score was graded usably")
    if kappa is None or within_one is None:
        return Verdict(band=None, reliable=False, labelled=labelled,
                       text="no verdict: the weighted kappa is undefined (no usable grades of labelled samples, "
                            "or every label and grade is the same)")
    figures = f"kappa {fixed(kappa, 2)}, {percent(within_one)} within one step"
    band: Band
    if kappa >= GATING_KAPPA and within_one >= GATING_WITHIN_ONE - 1e-9:
        band, text = "gating", f"{figures}: fit to gate releases"
    elif kappa >= MONITORING_KAPPA and within_one >= MONITORING_WITHIN_ONE - 1e-9:
        band, text = "monitoring", (f"{figures}: trend monitoring only (gating needs kappa >= {GATING_KAPPA} and "
                                    f"{percent(GATING_WITHIN_ONE)} within one step)")
    else:
        band, text = "exploration", (f"{figures}: exploration only (monitoring needs kappa >= {MONITORING_KAPPA} and "
                                     f"{percent(MONITORING_WITHIN_ONE)} within one step)")
    reliable = labelled >= MIN_RELIABLE_SAMPLES
    if not reliable:
        text += (f"; not yet reliable: only {labelled} labelled samples (label {MIN_RELIABLE_SAMPLES} or more "
                 "before trusting these figures)")
    return Verdict(band=band, reliable=reliable, labelled=labelled, text=text)
