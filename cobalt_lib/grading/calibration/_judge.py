"""Any evaluator's verdicts against human labels: the figures that fit its scale, each with its interval,
the confusion matrix, the disagreements and the verdict.

- `-3..3` (graders): exact agreement, within one step, MAE, signed bias, quadratic weighted kappa.
- `pass/fail`: accuracy, precision, recall and F1 (pass the positive class), Cohen's kappa.
- `0..1`: Spearman's rho, quadratic weighted kappa over five equal bins, MAE, signed bias.

The headline kappa (weighted kappa, Cohen's kappa, kappa over bins) is what `calibrated()` gates on.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..._numbers import decimal
from ._metrics import spearman
from ._models import Verdict
from ._people import HumanCeiling
from ._scales import Scale, categories, category, category_values, shown
from ._verdict import GATING_KAPPA, MIN_RELIABLE_SAMPLES, MONITORING_KAPPA, verdict

#: Options that say which model judges, not what it is asked: left out of the prompt hash.
_NOT_PROMPT = frozenset({"name", "threshold", "description", "model", "provider", "base_url"})


class _LabelledItem(BaseModel):
    """What an observation and a disagreement say of their item: where it is, the judge's reason, the
    person's note, and what the item asked and the agent answered."""

    item_id: str
    item_index: int
    run_index: int = 0
    reason: str = ""
    note: str = ""
    who: str = ""
    input: Any = None
    output: Any = None


class Observation(_LabelledItem):
    """One usable verdict of the evaluator on a labelled item (one per repeat)."""

    label: float
    judged: float
    score: float | None = None


class Figure(BaseModel):
    """One agreement figure and its 95% interval (`how` the interval was computed)."""

    name: str
    title: str
    value: float | None = None
    low: float | None = None
    high: float | None = None
    kind: Literal["rate", "kappa", "correlation", "difference"] = "rate"
    how: str = ""
    #: Why there is no value, when there is none ("the judge's scores are all equal").
    why: str = ""


class LabelDisagreement(_LabelledItem):
    """A labelled item where the evaluator's verdict falls in another category than the person's label."""

    label: str
    judged: str
    difference: float


class JudgeCalibration(BaseModel):
    """An evaluator of one run measured against the labels of its experiment."""

    experiment: str
    evaluator: str
    evaluator_type: str
    run_id: str
    scale: Scale
    prompt_hash: str
    model: str | None = None
    #: Items the evaluator scored usably in the run, and those of them a person labelled.
    items: int = 0
    labelled: int = 0
    #: (label, verdict) pairs: one per usable repeat of a labelled item.
    pairs: int = 0
    #: Labels of this experiment and evaluator in the store (some may be of items this run lacks).
    labels: int = 0
    #: Labelled items whose label was set on another output than this run's (the agent answered differently).
    stale_labels: int = 0
    #: Labels on item ids this run does not hold (a typo in an id, or items of another dataset): not counted.
    unmatched_labels: int = 0
    #: Labels still needed before the figures are reliable (0 once there are enough).
    needed: int = 0
    figures: list[Figure] = Field(default_factory=list)
    kappa_name: str = "kappa"
    kappa: float | None = None
    kappa_low: float | None = None
    kappa_high: float | None = None
    within_one: float | None = None
    categories: list[str] = Field(default_factory=list)
    #: Rows the label's category, columns the evaluator's.
    confusion: list[list[int]] = Field(default_factory=list)
    disagreements: list[LabelDisagreement] = Field(default_factory=list)
    verdict: Verdict = Field(default_factory=Verdict)
    created_at: str = ""
    #: Agreement between the people who labelled (when two or more labelled an item), the judge beside it.
    human: HumanCeiling | None = None

    def figure(self, name: str) -> Figure | None:
        return next((f for f in self.figures if f.name == name), None)


def prompt_hash(described: Mapping[str, Any]) -> str:
    """What the evaluator asks, as a hash: a grader's content hash; else SHA-256 of its type and options
    (its judge prompt and system prompt, cobalt's default when it sets none), the model left out."""
    if described.get("type") == "grader" and described.get("grader_hash"):
        return str(described["grader_hash"])
    payload = {k: v for k, v in described.items() if k not in _NOT_PROMPT}
    if payload.get("type", "llm-judge") == "llm-judge" and not payload.get("system"):
        from ...llm._judge import SYSTEM_PROMPT

        payload["system"] = SYSTEM_PROMPT
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def calibrate_judge(scale: Scale, observations: Sequence[Observation], *, resamples: int = 1000,
                    seed: int = 0, **identity: Any) -> JudgeCalibration:
    """Every figure of `observations` on `scale`; `identity` fills experiment, evaluator, run, hash, model."""
    from ._figures import matrices

    by_item: dict[str, list[Observation]] = {}
    for o in observations:
        by_item.setdefault(o.item_id, []).append(o)
    size = len(categories(scale))
    groups = matrices(size, [[(category(scale, o.label), category(scale, o.judged)) for o in found]
                             for found in by_item.values()])
    result = JudgeCalibration(scale=scale, labelled=len(by_item), pairs=len(observations),
                              categories=categories(scale), **identity)
    total = groups.sum(axis=0)
    result.confusion = [[int(n) for n in row] for row in total.tolist()]
    result.figures = _figures(scale, groups, observations, resamples=resamples, seed=seed)
    headline = next(f for f in result.figures if f.kind == "kappa")
    result.kappa_name, result.kappa, result.kappa_low, result.kappa_high = (headline.title, headline.value,
                                                                            headline.low, headline.high)
    within = result.figure("within_one")
    result.within_one = within.value if within else None
    result.disagreements = _disagreements(scale, observations)
    result.needed = max(0, MIN_RELIABLE_SAMPLES - result.labelled)
    result.verdict = scale_verdict(scale, result.kappa, result.within_one, result.labelled, result.kappa_name)
    return result


def _figures(scale: Scale, groups: Any, observations: Sequence[Observation], *, resamples: int,
             seed: int) -> list[Figure]:
    import numpy as np

    from . import _figures as f

    total = groups.sum(axis=0)
    n = int(total.sum())
    size = total.shape[0]
    index = np.arange(size)
    values = np.array(category_values(scale))

    def boot(stat: Any) -> tuple[float | None, float | None]:
        found = f.bootstrap(groups, stat, resamples=resamples, seed=seed)
        return (found[0], found[1]) if found else (None, None)

    def rate(name: str, title: str, mask: Any) -> Figure:
        hits = float((total * mask).sum())
        interval = f.wilson(hits, n)
        return Figure(name=name, title=title, value=hits / n if n else None, low=interval[0] if interval else None,
                      high=interval[1] if interval else None, how="Wilson score interval")

    def booted(name: str, title: str, stat: Any, kind: Any) -> Figure:
        low, high = boot(stat)
        return Figure(name=name, title=title, value=f.point(stat(total)) if n else None, low=low, high=high,
                      kind=kind, how=f"bootstrap over items ({resamples} resamples)")

    if scale == "pass/fail":
        tp, fp, fn = total[1, 1], total[0, 1], total[1, 0]
        return [rate("accuracy", "accuracy", np.eye(size)),
                _ratio("precision", "precision", tp, tp + fp), _ratio("recall", "recall", tp, tp + fn),
                booted("f1", "F1", f.f1, "rate"), booted("kappa", "Cohen's kappa", f.kappa, "kappa")]
    if scale == "-3..3":
        steps = np.abs(index[:, None] - index[None, :])
        diff = values[None, :] - values[:, None]
        weights = f.quadratic_weights(size)
        return [rate("exact", "exact agreement", steps == 0), rate("within_one", "within one step", steps <= 1),
                booted("mae", "mean absolute error", lambda m: f.mean_over(m, np.abs(diff)), "difference"),
                booted("bias", "bias (verdict − label)", lambda m: f.mean_over(m, diff), "difference"),
                booted("weighted_kappa", "weighted kappa", lambda m: f.kappa(m, weights), "kappa")]
    pairs = [(o.label, o.judged) for o in observations]
    rho = spearman(pairs)
    interval = f.fisher_interval(rho, len(pairs))
    weights = f.quadratic_weights(size)
    return [Figure(name="spearman", title="Spearman's rho", value=rho, low=interval[0] if interval else None,
                   high=interval[1] if interval else None, kind="correlation", how="Fisher z interval",
                   why="" if rho is not None else _no_correlation(pairs)),
            booted("binned_kappa", f"kappa over {size} bins", lambda m: f.kappa(m, weights), "kappa"),
            _continuous("mae", "mean absolute error", [abs(j - t) for t, j in pairs], observations, resamples, seed),
            _continuous("bias", "bias (verdict − label)", [j - t for t, j in pairs], observations, resamples, seed)]


def _no_correlation(pairs: Sequence[tuple[float, float]]) -> str:
    """Why a rank correlation is undefined: too few pairs, or one side that never varies."""
    if len(pairs) < 2:
        return f"undefined: {len(pairs)} labelled verdict{'' if len(pairs) == 1 else 's'}, it needs 2 or more"
    if len({j for _, j in pairs}) == 1:
        return f"undefined: the judge's scores are all equal ({decimal(pairs[0][1])})"
    return f"undefined: the labels are all equal ({decimal(pairs[0][0])})"


def _ratio(name: str, title: str, hits: float, n: float) -> Figure:
    from ._figures import wilson

    interval = wilson(float(hits), int(n))
    return Figure(name=name, title=title, value=float(hits) / float(n) if n else None,
                  low=interval[0] if interval else None, high=interval[1] if interval else None,
                  how="Wilson score interval")


def _continuous(name: str, title: str, values: list[float], observations: Sequence[Observation],
                resamples: int, seed: int) -> Figure:
    """A mean of per-pair values on the 0..1 scale (not binned), bootstrapped over items."""
    import numpy as np

    from ._figures import bootstrap

    if not values:
        return Figure(name=name, title=title, kind="difference")
    items = list(dict.fromkeys(o.item_id for o in observations))
    position = {item: i for i, item in enumerate(items)}
    sums = np.zeros((len(items), 1, 2))  # per item: (sum of values, pairs) as a 1x2 "matrix"
    for value, o in zip(values, observations, strict=True):
        sums[position[o.item_id], 0] += (value, 1)
    found = bootstrap(sums, lambda m: m[..., 0, 0] / m[..., 0, 1], resamples=resamples, seed=seed)
    return Figure(name=name, title=title, value=sum(values) / len(values), low=found[0] if found else None,
                  high=found[1] if found else None, kind="difference",
                  how=f"bootstrap over items ({resamples} resamples)")


def _disagreements(scale: Scale, observations: Sequence[Observation]) -> list[LabelDisagreement]:
    found = [LabelDisagreement(item_id=o.item_id, item_index=o.item_index, run_index=o.run_index,
                               label=shown(scale, o.label), judged=shown(scale, o.judged),
                               difference=o.judged - o.label, reason=o.reason, note=o.note, who=o.who,
                               input=o.input, output=o.output)
             for o in observations if category(scale, o.label) != category(scale, o.judged)]
    return sorted(found, key=lambda d: (-abs(d.difference), d.item_index, d.run_index))


def scale_verdict(scale: Scale, kappa: float | None, within_one: float | None, labelled: int,
                  kappa_name: str = "kappa") -> Verdict:
    """The -3..3 scale's verdict needs kappa and within-one agreement (`verdict`); the others band by their
    kappa alone: gating >= 0.7, monitoring >= 0.4, else exploration, not reliable under 50 labelled items."""
    if scale == "-3..3":
        return verdict(kappa, within_one, labelled)
    if labelled == 0:
        return Verdict(text="no verdict: no labelled item was scored usably")
    if kappa is None:
        return Verdict(labelled=labelled, text=f"no verdict: {kappa_name} is undefined (every label and every "
                                               "verdict is the same one value)")
    figures = f"{kappa_name} {decimal(kappa)}"
    if kappa >= GATING_KAPPA - 1e-9:  # 0.7 computed as 0.6999999999 is 0.7
        band, text = "gating", f"{figures}: fit to gate releases"
    elif kappa >= MONITORING_KAPPA - 1e-9:
        band, text = "monitoring", f"{figures}: trend monitoring only (gating needs {GATING_KAPPA})"
    else:
        band, text = "exploration", f"{figures}: exploration only (monitoring needs {MONITORING_KAPPA})"
    reliable = labelled >= MIN_RELIABLE_SAMPLES
    if not reliable:
        text += (f"; not yet reliable: only {labelled} labelled items (label {MIN_RELIABLE_SAMPLES - labelled} more "
                 "before trusting these figures)")
    return Verdict(band=band, reliable=reliable, labelled=labelled, text=text)  # type: ignore[arg-type]
