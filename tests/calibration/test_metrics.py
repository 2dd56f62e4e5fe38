"""The calibration statistics: hand-computed cases, and the same figures on random data from
independent routes: kappa by its closed form in moments, Spearman from scipy, alpha from the
`krippendorff` package."""

from __future__ import annotations

import random

import pytest

from cobalt_lib.grading.calibration import (
    Grade,
    calibrate,
    confusion,
    exact_rate,
    kappa_interval,
    krippendorff_alpha_ordinal,
    majority_share,
    mean_absolute_error,
    panel_grade,
    self_consistency,
    signed_bias,
    spearman,
    verdict,
    weighted_kappa,
    within_one_rate,
)


def test_figures_by_hand() -> None:
    pairs = [(3, 3), (2, 3), (0, -2), (-3, -3)]
    assert exact_rate(pairs) == 0.5
    assert within_one_rate(pairs) == 0.75
    assert mean_absolute_error(pairs) == 0.75  # (0 + 1 + 2 + 0) / 4
    assert signed_bias(pairs) == pytest.approx(-0.25)  # (0 + 1 - 2 + 0) / 4
    matrix = confusion(pairs)
    assert matrix[6][6] == 1 and matrix[5][6] == 1 and matrix[3][1] == 1 and matrix[0][0] == 1
    assert sum(map(sum, matrix)) == 4
    # Quadratic weights (i-j)^2/36 over -3..3. Observed: (0 + 1 + 4 + 0) / 36 over n = 4.
    # Expected: truths {3,2,0,-3} x grades {3,3,-2,-3}, each pair weighted 1/4:
    truths, grades = [3, 2, 0, -3], [3, 3, -2, -3]
    expected = sum((t - g) ** 2 for t in truths for g in grades) / 36 / 4
    assert weighted_kappa(pairs) == pytest.approx(1 - (5 / 36) / expected)


def test_undefined_figures_are_none() -> None:
    assert weighted_kappa([]) is None and exact_rate([]) is None and spearman([(1, 1)]) is None
    assert weighted_kappa([(2, 2), (2, 2)]) is None  # chance agreement is already perfect
    assert spearman([(1, 0), (2, 0)]) is None
    assert kappa_interval([[(1, 1)]]) is None
    assert krippendorff_alpha_ordinal([[1], [2]]) is None


def _moment_kappa(x: list[int], y: list[int]) -> float:
    """Quadratic weighted kappa by its closed form in moments (a different route from the confusion
    matrix): 2 cov(x, y) / (var x + var y + (mean x - mean y)^2), population moments."""
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    cov = sum((a - mx) * (b - my) for a, b in zip(x, y, strict=True)) / n
    vx, vy = sum((a - mx) ** 2 for a in x) / n, sum((b - my) ** 2 for b in y) / n
    return 2 * cov / (vx + vy + (mx - my) ** 2)


def test_kappa_spearman_and_alpha_match_independent_implementations() -> None:
    krippendorff = pytest.importorskip("krippendorff")
    np = pytest.importorskip("numpy")
    stats = pytest.importorskip("scipy.stats")
    rng = random.Random(7)
    for _ in range(5):
        truth = [rng.randint(-3, 3) for _ in range(40)]
        a = [max(-3, min(3, t + rng.choice([-2, -1, 0, 0, 1]))) for t in truth]
        b = [max(-3, min(3, t + rng.choice([-1, 0, 1, 2]))) for t in truth]
        pairs = list(zip(truth, a, strict=True))
        assert weighted_kappa(pairs) == pytest.approx(_moment_kappa(truth, a), abs=1e-12)
        assert spearman(pairs) == pytest.approx(stats.spearmanr(truth, a).statistic, abs=1e-12)
        reference = krippendorff.alpha(reliability_data=np.array([truth, a, b]), level_of_measurement="ordinal",
                                       value_domain=list(range(-3, 4)))
        units = [list(v) for v in zip(truth, a, b, strict=True)]
        assert krippendorff_alpha_ordinal(units) == pytest.approx(reference, abs=1e-12)
    # Missing values: a unit rated by one coder only is not pairable.
    data = np.array([[1, 2, np.nan, 3], [1, 3, 2, np.nan], [np.nan, 2, 2, 3]])
    reference = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal")
    assert krippendorff_alpha_ordinal([[1, 1], [2, 3, 2], [2, 2], [3, 3]]) == pytest.approx(reference, abs=1e-12)


def test_bootstrap_interval_is_deterministic_and_brackets_the_kappa() -> None:
    rng = random.Random(3)
    groups = []
    for _ in range(30):
        t = rng.randint(-3, 3)
        groups.append([(t, max(-3, min(3, t + rng.choice([-1, 0, 1])))) for _ in range(2)])
    low, high = kappa_interval(groups, resamples=400, seed=1) or (0, 0)
    kappa = weighted_kappa([p for g in groups for p in g])
    assert kappa is not None and low <= kappa <= high and high - low > 0
    assert kappa_interval(groups, resamples=400, seed=1) == (low, high)


def _noisy_groups(seed: int, samples: int) -> list[list[tuple[int, int]]]:
    rng = random.Random(seed)
    truths = [rng.randint(-3, 3) for _ in range(samples)]
    return [[(t, max(-3, min(3, t + rng.choice((-1, 0, 0, 1))))) for _ in range(rng.choice((1, 2, 3)))]
            for t in truths]


def test_bootstrap_interval_keeps_the_figures_it_gave_before_it_was_chunked() -> None:
    # Pinned from the version that indexed counts[picks] whole (commit 7e5338b): the same seed, the same interval.
    groups = _noisy_groups(7, 301)
    assert kappa_interval(groups, resamples=1200, seed=5) == (0.9344820519649394, 0.9524669068705601)
    assert kappa_interval(groups, resamples=1200, seed=5, confidence=0.9) == (0.9360556005418387, 0.9509565252132515)


def test_bootstrap_interval_over_many_samples_equals_the_direct_resample_sums() -> None:
    import numpy as np

    from cobalt_lib.grading.calibration._metrics import _quantile

    # 1,500 samples: each block of 500 resamples is summed in several chunks.
    groups = _noisy_groups(11, 1500)
    counts = np.array([np.ravel(confusion(g)) for g in groups], dtype=float)
    weights = np.ravel(np.array([[(i - j) ** 2 / 36 for j in range(7)] for i in range(7)]))
    rng = np.random.default_rng(2)
    kappas = []
    for size in (500, 200):
        for row in rng.integers(0, len(groups), size=(size, len(groups))):
            total = counts[row].sum(axis=0)
            matrix = total.reshape(7, 7)
            expected = np.outer(matrix.sum(axis=1), matrix.sum(axis=0)).ravel() @ weights / total.sum()
            kappas.append(float(1 - total @ weights / expected))
    kappas.sort()
    assert kappa_interval(groups, resamples=700, seed=2) == (_quantile(kappas, 0.025), _quantile(kappas, 0.975))


def test_panel_median_ties_round_toward_zero() -> None:
    assert panel_grade([1, 2]) == 1
    assert panel_grade([-2, -1]) == -1
    assert panel_grade([-1, 0]) == 0 and panel_grade([0, 1]) == 0
    assert panel_grade([-3, 3, 2]) == 2
    assert panel_grade([]) is None


def test_self_consistency_and_majority_share() -> None:
    same, spread, repeated = self_consistency([[1, 1, 1], [2, 0], [3]])
    assert same == 0.5 and spread == pytest.approx(0.5) and repeated == 2  # pstdev([2, 0]) = 1
    assert self_consistency([[1], [2]]) == (None, None, 0)
    assert majority_share([3, 3, 3, -1]) == (3, 0.75)


@pytest.mark.parametrize(("kappa", "within_one", "labelled", "band", "reliable", "phrase"), [
    (0.39, 1.0, 60, "exploration", True, "exploration only"),
    (0.4, 0.7, 60, "monitoring", True, "trend monitoring"),
    (0.7, 0.9, 60, "gating", True, "kappa 0.70, 90% within one step: fit to gate releases"),
    (0.95, 0.89, 60, "monitoring", True, "trend monitoring only (gating needs kappa >= 0.7 and 90% within one step)"),
    (0.6, 0.69, 60, "exploration", True, "monitoring needs kappa >= 0.4 and 70% within one step"),
    (0.9, 1.0, 49, "gating", False, "not yet reliable: only 49 labelled samples"),
    (None, None, 10, None, False, "no verdict"),
])
def test_verdict_bands(kappa: float | None, within_one: float | None, labelled: int, band: str | None,
                       reliable: bool, phrase: str) -> None:
    result = verdict(kappa, within_one, labelled)
    assert (result.band, result.reliable) == (band, reliable)
    assert phrase in result.text


def test_a_grader_two_steps_off_on_three_of_ten_is_not_fit_to_gate() -> None:
    """The seed's "60% exact" grader: quadratic kappa forgives two steps off as nearly right (0.81 here),
    so kappa alone would call it fit to gate releases; 70% within one step keeps it at monitoring."""
    truths = [-3, -2, -1, 0, 1, 2, 3, 3, -3, 1]
    grades = [-3, -2, -1, 0, 1, 2, 1, 1, -1, 0]  # 6 exact, 3 two steps off, 1 one step off
    cal = calibrate([Grade(model="m", id=str(i), iteration=1, score=g, truth=t)
                     for i, (t, g) in enumerate(zip(truths, grades, strict=True))], grader="g", grader_hash="h" * 64)
    figures = cal.models["m"]
    assert (figures.exact_match_rate, figures.within_one_rate) == (0.6, 0.7)
    assert figures.weighted_kappa == pytest.approx(0.8127, abs=1e-4)
    assert figures.verdict.band == "monitoring"
    assert "fit to gate" not in figures.verdict.text


def test_calibrate_counts_errors_as_coverage_not_as_rates() -> None:
    grades = [Grade(model="m", id=str(i), iteration=1, score=s, truth=t, notes=f"n{i}")
              for i, (s, t) in enumerate([(3, 3), (None, 2), (0, 2), (-3, -3)])]
    cal = calibrate(grades, grader="g", grader_hash="h" * 64).models["m"]
    assert (cal.coverage.attempted, cal.coverage.graded, cal.coverage.errors) == (4, 3, 1)
    assert cal.coverage.rate == 0.75
    assert cal.pairs == 3 and cal.exact_match_rate == pytest.approx(2 / 3)
    assert [d.model_dump() for d in cal.disagreements] == [
        {"id": "2", "iteration": 1, "truth": 2, "grade": 0, "difference": -2, "notes": "n2"}]
    assert cal.verdict.labelled == 3 and not cal.verdict.reliable
