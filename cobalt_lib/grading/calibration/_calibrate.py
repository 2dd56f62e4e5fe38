"""From a grading run's grades to its calibration: per model, the panel, and agreement across models."""

from __future__ import annotations

from collections.abc import Sequence

from ._agreement import krippendorff_alpha_ordinal, pairwise, panel_grade
from ._metrics import (
    confusion,
    exact_rate,
    kappa_interval,
    majority_share,
    mean_absolute_error,
    self_consistency,
    signed_bias,
    spearman,
    weighted_kappa,
    within_one_rate,
)
from ._models import Agreement, Calibration, Coverage, Disagreement, Grade, ModelCalibration
from ._verdict import verdict

#: The panel's name in every table and in `--json`.
PANEL = "panel"


def calibrate(grades: Sequence[Grade], *, grader: str, grader_hash: str, iterations: int = 1,
              resamples: int = 1000, seed: int = 0) -> Calibration:
    """Every figure of the calibration. Grades without a `truth` count for coverage, self-consistency
    and agreement, not for the figures against the truth."""
    models = list(dict.fromkeys(g.model for g in grades))
    per_model = {m: model_calibration(m, [g for g in grades if g.model == m], resamples=resamples, seed=seed)
                 for m in models}
    samples = {g.id for g in grades}
    labelled = {g.id for g in grades if g.truth is not None}
    result = Calibration(grader=grader, grader_hash=grader_hash, samples=len(samples),
                         labelled_samples=len(labelled), iterations=iterations, models=per_model)
    if len(models) >= 2:
        result.panel = model_calibration(PANEL, panel_grades(grades), resamples=resamples, seed=seed)
        result.agreement = agreement(grades)
    return result


def model_calibration(model: str, grades: Sequence[Grade], *, resamples: int = 1000, seed: int = 0) -> ModelCalibration:
    """One model's figures over its usable grades of labelled samples."""
    usable = [g for g in grades if g.score is not None]
    scored = [g for g in usable if g.truth is not None]
    pairs = [(g.truth, g.score) for g in scored if g.truth is not None and g.score is not None]
    by_sample: dict[str, list[tuple[int, int]]] = {}
    repeats: dict[str, list[int]] = {}
    for g in usable:
        repeats.setdefault(g.id, []).append(g.score)  # type: ignore[arg-type]
    for g in scored:
        by_sample.setdefault(g.id, []).append((g.truth, g.score))  # type: ignore[arg-type]
    truths = [g.truth for g in _one_per_sample(grades) if g.truth is not None]
    label, share = majority_share(truths)
    kappa = weighted_kappa(pairs)
    interval = kappa_interval(list(by_sample.values()), resamples=resamples, seed=seed)
    same, spread, repeated = self_consistency(list(repeats.values()))
    return ModelCalibration(
        model=model, labelled=len(by_sample), pairs=len(pairs), exact_match_rate=exact_rate(pairs),
        within_one_rate=within_one_rate(pairs), mean_absolute_error=mean_absolute_error(pairs),
        signed_bias=signed_bias(pairs), weighted_kappa=kappa,
        kappa_ci_low=interval[0] if interval else None, kappa_ci_high=interval[1] if interval else None,
        majority_label=label, majority_share=share, spearman=spearman(pairs), confusion=confusion(pairs),
        self_consistency=same, mean_stddev=spread, repeated_samples=repeated,
        coverage=Coverage(attempted=len(grades), graded=len(usable), errors=len(grades) - len(usable),
                          rate=len(usable) / len(grades) if grades else None),
        disagreements=disagreements(scored), verdict=verdict(kappa, within_one_rate(pairs), len(by_sample)),
    )


def _one_per_sample(grades: Sequence[Grade]) -> list[Grade]:
    seen: dict[str, Grade] = {}
    for g in grades:
        seen.setdefault(g.id, g)
    return list(seen.values())


def disagreements(grades: Sequence[Grade]) -> list[Disagreement]:
    """Labelled, usable grades that differ from the truth, largest difference first (then by id)."""
    found = [Disagreement(id=g.id, iteration=g.iteration, truth=g.truth, grade=g.score,
                          difference=g.score - g.truth, notes=g.notes)
             for g in grades if g.truth is not None and g.score is not None and g.score != g.truth]
    return sorted(found, key=lambda d: (-abs(d.difference), d.id, d.iteration))


def panel_grades(grades: Sequence[Grade]) -> list[Grade]:
    """The panel's grade of each (sample, iteration): the median of the models' usable grades, ties
    toward 0; unusable (an error) when no model gave a usable grade."""
    units: dict[tuple[str, int], list[Grade]] = {}
    for g in grades:
        units.setdefault((g.id, g.iteration), []).append(g)
    panel = []
    for (sample, iteration), group in units.items():
        values = [g.score for g in group if g.score is not None]
        panel.append(Grade(model=PANEL, id=sample, iteration=iteration, score=panel_grade(values),
                           notes=", ".join(f"{g.model}: {_shown(g.score)}" for g in group), truth=group[0].truth))
    return panel


def _shown(score: int | None) -> str:
    return "error" if score is None else f"{score:+d}"


def agreement(grades: Sequence[Grade]) -> Agreement:
    """Pairwise agreement and Krippendorff's alpha across the models, a unit being (sample, iteration)."""
    by_model: dict[str, dict[tuple[str, int], int]] = {}
    for g in grades:
        if g.score is not None:
            by_model.setdefault(g.model, {})[(g.id, g.iteration)] = g.score
    units: dict[tuple[str, int], list[int]] = {}
    for scores in by_model.values():
        for unit, score in scores.items():
            units.setdefault(unit, []).append(score)
    return Agreement(pairs=pairwise(by_model), krippendorff_alpha=krippendorff_alpha_ordinal(list(units.values())),
                     units=sum(len(v) >= 2 for v in units.values()))
