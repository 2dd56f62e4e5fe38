"""What the calibration figures support, in the bands teams use."""

from __future__ import annotations

from typing import Literal

from ._models import Verdict

#: Fewer labelled samples than this and the figures are not yet reliable, whatever they say.
MIN_RELIABLE_SAMPLES = 50
GATING_KAPPA = 0.7
MONITORING_KAPPA = 0.4


def verdict(kappa: float | None, labelled: int) -> Verdict:
    """kappa < 0.4 exploration only, 0.4 to 0.7 trend monitoring, 0.7 or more fit to gate releases;
    under 50 labelled samples the verdict says the figures are not yet reliable."""
    if labelled == 0:
        return Verdict(band=None, reliable=False, labelled=0,
                       text="no verdict: no sample with a ground-truth score was graded usably")
    if kappa is None:
        return Verdict(band=None, reliable=False, labelled=labelled,
                       text="no verdict: the weighted kappa is undefined (no usable grades of labelled samples, "
                            "or every label and grade is the same)")
    band: Literal["exploration", "monitoring", "gating"]
    if kappa >= GATING_KAPPA:
        band, text = "gating", f"kappa {kappa:.2f} >= {GATING_KAPPA}: fit to gate releases"
    elif kappa >= MONITORING_KAPPA:
        band, text = "monitoring", f"kappa {kappa:.2f} is {MONITORING_KAPPA} to {GATING_KAPPA}: trend monitoring only"
    else:
        band, text = "exploration", f"kappa {kappa:.2f} < {MONITORING_KAPPA}: exploration only"
    reliable = labelled >= MIN_RELIABLE_SAMPLES
    if not reliable:
        text += (f"; not yet reliable: only {labelled} labelled samples (label {MIN_RELIABLE_SAMPLES} or more "
                 "before trusting these figures)")
    return Verdict(band=band, reliable=reliable, labelled=labelled, text=text)
