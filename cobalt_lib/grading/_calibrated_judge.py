"""`calibrated("helpful")`: any evaluator that gates a deploy must have been measured against human labels.

The gate reads the calibrations `cobalt calibrate` stores, keyed by the experiment, the evaluator's prompt
hash and model: it passes only when the newest calibration in this experiment of the evaluator as it is now
(same prompt hash) for the model the run judged with reached `min_kappa` (the kappa of its scale:
weighted kappa for -3..3, Cohen's kappa for pass/fail, kappa over bins for 0..1; for -3..3 also
`min_within_one`) over at least `min_labels` labelled items. Too few labels is a failure that says how
many more to label.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from .._numbers import percent, score, threshold
from ..config._config import Config
from ..gates._assertions import Assertion
from ..results._report import AssertionResult, ExperimentReport
from .calibration._judge import JudgeCalibration, prompt_hash

if TYPE_CHECKING:
    from ..store._store import Store


class Described(Protocol):
    """An `Evaluator`: its name and how a run stores it."""

    name: str

    def describe(self) -> dict[str, Any]: ...


class CalibratedJudge(Assertion):
    """The gate of `calibrated(evaluator_or_name, ...)` for an evaluator (see the module's docstring)."""

    def __init__(self, evaluator: str | Described, min_kappa: float, *, model: str | None, min_within_one: float,
                 min_labels: int) -> None:
        self.evaluator = evaluator
        self.evaluator_name = evaluator if isinstance(evaluator, str) else evaluator.name
        self.min_kappa, self.min_within_one, self.min_labels, self.model = min_kappa, min_within_one, min_labels, model
        self.name = f"calibrated {self.evaluator_name} kappa >= {threshold(self.min_kappa)}"

    def evaluator_names(self) -> list[str]:
        return [self.evaluator_name]

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "type": "calibrated", "evaluator": self.evaluator_name, "min_kappa": self.min_kappa,
                "min_within_one": self.min_within_one, "min_labels": self.min_labels, "model": self.model}

    def evaluate(self, report: ExperimentReport, config: Config) -> list[AssertionResult]:
        from ..store._store import Store

        described = self._described(report)
        if described is None:
            declared = [e.get("name") for e in report.config.get("evaluators") or [] if isinstance(e, dict)]
            return [self._fail(f"the experiment has no evaluator {self.evaluator_name!r} (its evaluators: "
                               f"{', '.join(map(str, declared)) or 'none'}); calibrated() names one of them, or a "
                               "grader file")]
        models: list[str | None] = [self.model] if self.model else _models(report, self.evaluator_name)
        store = Store.for_config(config)
        return [self._check(report, store, prompt_hash(described), model) for model in models]

    def _described(self, report: ExperimentReport) -> dict[str, Any] | None:
        if not isinstance(self.evaluator, str):
            return self.evaluator.describe()
        declared = [e for e in report.config.get("evaluators") or [] if isinstance(e, dict)]
        return next((e for e in declared if e.get("name") == self.evaluator), None)

    def _check(self, report: ExperimentReport, store: Store, digest: str, model: str | None) -> AssertionResult:
        found = stored_calibration(store, digest, model, experiment=report.name)
        head = f"evaluator {self.evaluator_name!r} #{digest[:12]}" + (f" on {model}" if model else "")
        command = f"cobalt calibrate {report.name} --evaluator {self.evaluator_name}"
        if found is None:
            # Calibrations are kept per experiment: another experiment's labels never pass this one's gate.
            earlier = store.calibrations(experiment=report.name, evaluator=self.evaluator_name)
            same_prompt = [r for r in earlier if r["prompt_hash"] == digest]
            if same_prompt:
                measured = same_prompt[0].get("model") or "no model"
                return self._fail(f"{head}: the judge model changed since its last calibration (run "
                                  f"{same_prompt[0]['run_id']} measured it on {measured}, this run judged with "
                                  f"{model or 'no model'}); label its items and run: {command}")
            elsewhere = sorted({str(r["experiment"]) for r in store.calibrations(prompt_hash=digest)})
            if not earlier and elsewhere:
                return self._fail(f"{head} has no calibration in experiment {report.name!r} (only in "
                                  f"{', '.join(map(repr, elsewhere))}, on other items); label this experiment's items "
                                  f"and run: {command}")
            if earlier:
                return self._fail(f"{head} changed since its last calibration (run {earlier[0]['run_id']} measured "
                                  f"#{str(earlier[0]['prompt_hash'])[:12]}); label its items and run: {command}")
            return self._fail(f"{head} has never been calibrated against human labels; label its items (the run's "
                              f"page in `cobalt serve`, or `cobalt labels import`) and run: {command}")
        return self.verdict(head, found)

    def verdict(self, head: str, cal: JudgeCalibration) -> AssertionResult:
        """The gate's verdict on a stored calibration `cal` (`head` names what was measured)."""
        command = f"cobalt calibrate {cal.experiment} --evaluator {cal.evaluator}"
        if cal.labelled < self.min_labels:
            more = self.min_labels - cal.labelled
            return self._fail(f"{head}: only {cal.labelled} labelled items in calibration {cal.run_id}, too few to "
                              f"gate on; label {more} more (or pass min_labels=) and run: {command}",
                              actual=cal.kappa)
        if cal.kappa is None:
            return self._fail(f"{head}: {cal.kappa_name} of calibration {cal.run_id} is undefined ({cal.verdict.text})")
        bar = threshold(self.min_kappa)
        short = [f"{cal.kappa_name} {score(cal.kappa)} < {bar}"] if cal.kappa < self.min_kappa - 1e-9 else []
        within = cal.within_one
        if cal.scale == "-3..3" and (within or 0.0) < self.min_within_one - 1e-9:
            short.append(f"{percent(within or 0.0)} within one step < {percent(self.min_within_one)}")
        figures = f"{cal.kappa_name} {score(cal.kappa)} >= {bar} over {cal.labelled} labelled items"
        message = f"{head}, calibration of run {cal.run_id}: " + ("; ".join(short) if short else figures)
        return AssertionResult(name=self.name, passed=not short, actual=cal.kappa, expected=self.min_kappa,
                               message=f"{message} (verdict: {cal.verdict.text})")

    def _fail(self, message: str, actual: float | None = None) -> AssertionResult:
        return AssertionResult(name=self.name, passed=False, actual=actual, expected=self.min_kappa, message=message)


def stored_calibration(store: Store, digest: str, model: str | None, *,
                       experiment: str | None = None) -> JudgeCalibration | None:
    """The newest calibration stored for this prompt hash and judge model (of `experiment`, when given)."""
    rows = store.calibrations(prompt_hash=digest, experiment=experiment)
    return next((JudgeCalibration.model_validate(r["figures"]) for r in rows if _same(r.get("model"), model)), None)


def _same(stored: str | None, wanted: str | None) -> bool:
    from .graders._samples import canonical_model

    if not wanted:
        return not stored
    return stored is not None and canonical_model(stored) == canonical_model(wanted)


def _models(report: ExperimentReport, name: str) -> list[str | None]:
    """The judge models the run scored `name` with (None for an evaluator that calls no model)."""
    seen: list[str | None] = list(dict.fromkeys(item.evaluations[name].judge_model for item in report.items
                              if name in item.evaluations and item.evaluations[name].judge_model))
    return [*seen] if seen else [None]
