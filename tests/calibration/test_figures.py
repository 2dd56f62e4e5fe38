"""The judge-calibration figures against hand formulas and independent routes: Wilson's interval (scipy),
Fisher's z, Cohen's kappa, and on -3..3 the very figures and bootstrap interval `cobalt grade` reports."""

from __future__ import annotations

import math
import random

import pytest

from cobalt_lib.grading.calibration._figures import (
    Z95,
    bootstrap,
    fisher_interval,
    kappa,
    matrices,
    quadratic_weights,
    wilson,
)
from cobalt_lib.grading.calibration._judge import Observation, calibrate_judge, scale_verdict
from cobalt_lib.grading.calibration._metrics import (
    exact_rate,
    kappa_interval,
    mean_absolute_error,
    signed_bias,
    weighted_kappa,
    within_one_rate,
)
from cobalt_lib.grading.calibration._scales import category, label_value


def test_wilson_matches_its_formula_and_scipy() -> None:
    stats = pytest.importorskip("scipy.stats")
    # 0 of 10: centre = half = (z^2 / 20) / (1 + z^2 / 10), so the interval is [0, 2 * centre]
    centre = (Z95**2 / 20) / (1 + Z95**2 / 10)
    assert wilson(0, 10) == pytest.approx((0.0, 2 * centre))
    for k, n in ((0, 10), (3, 10), (8, 10), (10, 10), (47, 60)):
        ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
        assert wilson(k, n) == pytest.approx((ci.low, ci.high), abs=1e-9)
    assert wilson(0, 0) is None


def test_fisher_interval_by_hand() -> None:
    half = Z95 / math.sqrt(20 - 3)
    assert fisher_interval(0.6, 20) == pytest.approx((math.tanh(math.atanh(0.6) - half),
                                                      math.tanh(math.atanh(0.6) + half)))
    assert fisher_interval(1.0, 20) == (1.0, 1.0)
    assert fisher_interval(0.5, 3) is None and fisher_interval(None, 9) is None


def test_cohens_kappa_by_hand() -> None:
    np = pytest.importorskip("numpy")
    m = np.array([[20.0, 5.0], [10.0, 15.0]])  # the textbook table: p_o = 0.7, p_e = 0.5
    assert float(kappa(m)) == pytest.approx((0.7 - 0.5) / (1 - 0.5))
    assert math.isnan(float(kappa(np.array([[4.0, 0.0], [0.0, 0.0]]))))  # every label and verdict the same


def test_ordinal_figures_equal_cobalt_grades() -> None:
    rng = random.Random(11)
    truths = [rng.randint(-3, 3) for _ in range(40)]
    pairs = [(t, max(-3, min(3, t + rng.choice([-2, -1, 0, 0, 1])))) for t in truths]
    observations = [Observation(item_id=f"s{i}", item_index=i, label=t, judged=g) for i, (t, g) in enumerate(pairs)]
    cal = calibrate_judge("-3..3", observations, experiment="e", evaluator="g", evaluator_type="grader", run_id="r",
                          prompt_hash="h")
    f = {x.name: x for x in cal.figures}
    assert f["exact"].value == pytest.approx(exact_rate(pairs))
    assert f["within_one"].value == pytest.approx(within_one_rate(pairs))
    assert f["mae"].value == pytest.approx(mean_absolute_error(pairs))
    assert f["bias"].value == pytest.approx(signed_bias(pairs))
    assert f["weighted_kappa"].value == pytest.approx(weighted_kappa(pairs), abs=1e-12)
    # the same bootstrap (items resampled, seed 0, 1,000 times) as `cobalt grade`'s kappa interval
    low, high = kappa_interval([[p] for p in pairs], resamples=1000, seed=0) or (0, 0)
    assert (f["weighted_kappa"].low, f["weighted_kappa"].high) == pytest.approx((low, high), abs=1e-12)
    groups = matrices(7, [[(t + 3, g + 3)] for t, g in pairs])
    assert bootstrap(groups, lambda m: kappa(m, quadratic_weights(7)), resamples=1000) == pytest.approx((low, high))
    assert cal.verdict == scale_verdict("-3..3", cal.kappa, cal.within_one, 40)


def test_scales_read_labels_and_bin_0_to_1() -> None:
    assert label_value("pass/fail", "Pass") == 1.0 and label_value("pass/fail", 0.5) is None
    assert label_value("-3..3", 2) == 2.0 and label_value("-3..3", 2.5) is None and label_value("-3..3", 4) is None
    assert label_value("0..1", 0.3) == 0.3 and label_value("0..1", True) is None and label_value("0..1", 1.2) is None
    assert [category("0..1", v) for v in (0.0, 0.19, 0.2, 0.99, 1.0)] == [0, 0, 1, 4, 4]


def test_pass_fail_verdict_bands_say_how_many_labels_are_missing() -> None:
    few = scale_verdict("pass/fail", 0.75, None, 20, "Cohen's kappa")
    assert few.band == "gating" and not few.reliable and "label 30 more" in few.text
    assert scale_verdict("0..1", 0.5, None, 60).band == "monitoring"
    assert scale_verdict("0..1", None, None, 60).band is None
