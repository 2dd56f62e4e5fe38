"""`calibrated(grader, min_kappa=0.7)`: a grader that gates a deploy must itself have been measured.

The gate passes only when the latest grading run of a grader with the same content hash, for the
model the experiment grades with, reached `min_kappa` (quadratic weighted kappa against the human
labels) with `min_within_one` of its grades at most one step off (90%), over `min_labels` labelled
samples (50). A changed rubric has a new hash, hence no calibration: the gate fails and says which
`cobalt grade` command to run.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import ConfigError, MissingApiKeyError
from .._numbers import percent, score, threshold
from ..config._config import Config
from ..gates._assertions import Assertion
from ..results._report import AssertionResult, ExperimentReport
from .calibration._verdict import GATING_KAPPA, GATING_WITHIN_ONE, MIN_RELIABLE_SAMPLES
from .graders._deck import Grader

if TYPE_CHECKING:
    from ..store._store import Store
    from ._calibrated_judge import Described
    from .calibration._stored import StoredCalibration


class Calibrated(Assertion):
    def __init__(self, grader: str | Path | Grader, min_kappa: float = GATING_KAPPA, *, model: str | None = None,
                 min_within_one: float = GATING_WITHIN_ONE, min_labels: int = MIN_RELIABLE_SAMPLES) -> None:
        check_options(min_kappa, min_within_one, min_labels)
        if not isinstance(grader, str | Path | Grader):
            raise ConfigError(f"calibrated() takes a grader(...) deck or the path of a grader file, got {grader!r}.")
        self.grader = grader
        self.min_kappa = float(min_kappa)
        self.min_within_one = float(min_within_one)
        self.min_labels = min_labels
        self.model = model
        label = grader.name if isinstance(grader, Grader) else Path(grader).name
        self.name = f"calibrated {label} kappa >= {threshold(self.min_kappa)}"

    def describe(self) -> dict[str, Any]:
        source = self.grader.source or self.grader.name if isinstance(self.grader, Grader) else str(self.grader)
        return {"name": self.name, "type": "calibrated", "grader": source, "min_kappa": self.min_kappa,
                "min_within_one": self.min_within_one, "min_labels": self.min_labels, "model": self.model}

    def _load(self, config: Config) -> Grader:
        if isinstance(self.grader, Grader):
            return self.grader
        from .graders._files import load_grader

        return load_grader(self.grader, config.root)

    def evaluate(self, report: ExperimentReport, config: Config) -> list[AssertionResult]:
        from ..store._store import Store
        from .calibration._stored import stored_calibrations

        grader = self._load(config)
        models = [self.model] if self.model else experiment_models(report, config, grader.hash)
        if not models:
            return [self._fail(f"the experiment has no grader evaluator using {grader.name!r} as it is now "
                               f"(#{grader.short_hash}); use it as Evaluator(type='grader', grader=...) or pass "
                               "model= to calibrated(...)")]
        store = Store.for_config(config)
        stored = stored_calibrations(store)
        return [self._check(grader, model, stored, store) for model in models]

    def _check(self, grader: Grader, model: str, stored: list[StoredCalibration], store: Store) -> AssertionResult:
        same = [(run, run.for_model(model)) for run in stored if run.grader_hash == grader.hash]
        found = next(((run, cal) for run, cal in same if cal is not None), None)
        if found is None:
            labelled = self._from_labels(grader, model, store)
            return labelled if labelled is not None else self._fail(self._missing(grader, model, stored))
        run, cal = found
        kappa = cal.weighted_kappa
        if kappa is None:
            return self._fail(f"grader {grader.name!r} #{grader.short_hash} for {model}: the weighted kappa of "
                              f"grading run {run.run_id} is undefined ({cal.verdict.text})")
        within = cal.within_one_rate or 0.0
        short = [f"kappa {score(kappa)} < {threshold(self.min_kappa)}"] if kappa < self.min_kappa - 1e-9 else []
        if within < self.min_within_one - 1e-9:
            short.append(f"{percent(within)} within one step < {percent(self.min_within_one)}")
        if cal.labelled < self.min_labels:
            short.append(f"{cal.labelled} labelled samples < {self.min_labels} (label more, or pass min_labels=)")
        head = f"grader {grader.name!r} #{grader.short_hash} for {model}, grading run {run.run_id}: "
        figures = (f"kappa {score(kappa)} >= {threshold(self.min_kappa)}, {percent(within)} within one step >= "
                   f"{percent(self.min_within_one)}, {cal.labelled} labelled samples >= {self.min_labels}")
        return AssertionResult(name=self.name, passed=not short, actual=kappa, expected=self.min_kappa,
                               message=head + ("; ".join(short) if short else figures)
                               + f" (verdict: {cal.verdict.text})")

    def _from_labels(self, grader: Grader, model: str, store: Store) -> AssertionResult | None:
        """Without a grading run of this rubric: its calibration against the labels people set on the items of
        an experiment using it (`cobalt calibrate`, keyed by the same content hash), if one is stored."""
        from ._calibrated_judge import CalibratedJudge, stored_calibration

        cal = stored_calibration(store, grader.hash, model)
        if cal is None:
            return None
        judge = CalibratedJudge(grader.name, self.min_kappa, model=model, min_within_one=self.min_within_one,
                                min_labels=self.min_labels)
        judge.name = self.name
        return judge.verdict(f"grader {grader.name!r} #{grader.short_hash} for {model}", cal)

    def _missing(self, grader: Grader, model: str, stored: list[StoredCalibration]) -> str:
        """Which command would calibrate it, with the samples of the grader's last calibration if any."""
        earlier = [run for run in stored if run.grader == grader.name and run.for_model(model) is not None]
        samples = earlier[0].input if earlier and earlier[0].input else "samples.jsonl"
        source = grader.source or "path/to/grader.py"
        command = f"cobalt grade --input {samples} --grader {source} --model {model}"
        if earlier:
            return (f"grader {grader.name!r} changed since its last calibration for {model} (grading run "
                    f"{earlier[0].run_id} graded #{earlier[0].grader_hash[:12]}, the rubric is now "
                    f"#{grader.short_hash}); calibrate it again: {command}")
        return f"grader {grader.name!r} #{grader.short_hash} has never been calibrated for {model}; run: {command}"

    def _fail(self, message: str) -> AssertionResult:
        return AssertionResult(name=self.name, passed=False, expected=self.min_kappa, message=message)


def check_options(min_kappa: float, min_within_one: float, min_labels: int) -> None:
    """One ConfigError for a `calibrated(...)` option out of its range."""
    if isinstance(min_kappa, bool) or not isinstance(min_kappa, int | float) or not -1 <= min_kappa <= 1:
        raise ConfigError(f"calibrated(min_kappa={min_kappa!r}) must be a number within -1..1 (0.7 is the usual "
                          "bar for gating releases).")
    if isinstance(min_within_one, bool) or not isinstance(min_within_one, int | float) or not (
            0 <= min_within_one <= 1):
        raise ConfigError(f"calibrated(min_within_one={min_within_one!r}) must be a share within 0..1 (0.9: nine "
                          "grades in ten at most one step from the human's label).")
    if isinstance(min_labels, bool) or not isinstance(min_labels, int) or min_labels < 1:
        raise ConfigError(f"calibrated(min_labels={min_labels!r}) must be a positive whole number (50 by default: "
                          "fewer labels leave the figures unreliable).")


def experiment_models(report: ExperimentReport, config: Config, grader_hash: str) -> list[str]:
    """The models the run's grader evaluators with this content hash graded with (as endpoint labels)."""
    evaluators = [e for e in report.config.get("evaluators") or []
                  if isinstance(e, dict) and e.get("type") == "grader" and e.get("grader_hash") == grader_hash]
    models: list[str] = []
    for described in evaluators:
        seen = (item.evaluations[described["name"]].judge_model for item in report.items
                if described["name"] in item.evaluations)  # lazy: stops at the first item that names it
        label = next((m for m in seen if m), None) or _configured_label(config, described)
        if label not in models:
            models.append(label)
    return models


def _configured_label(config: Config, described: dict[str, Any]) -> str:
    from ..llm._providers import DEFAULT_MODELS, resolve_judge

    try:
        return resolve_judge(config.judge, provider=described.get("provider"), model=described.get("model")).label
    except (MissingApiKeyError, ConfigError):
        provider = described.get("provider") or config.judge.provider
        same = provider == config.judge.provider
        model = described.get("model") or (config.judge.model if same else None) or DEFAULT_MODELS.get(provider, "?")
        return f"{provider}/{model}"


def calibrated(grader: str | Path | Grader | Described, min_kappa: float = GATING_KAPPA, *, model: str | None = None,
               min_within_one: float = GATING_WITHIN_ONE, min_labels: int = MIN_RELIABLE_SAMPLES) -> Assertion:
    """Pass only when the evaluator behind a gate was measured against human labels and agreed well enough.

    - A grader (a `grader(...)` deck, or the path of a grader file, `*.py`): its latest grading run
      (`cobalt grade`) for its current rubric and the model the experiment grades with (or `model`).
    - Any evaluator (its name in the experiment, or the `Evaluator`): its latest calibration against the
      labels (`cobalt calibrate`) for its current prompt and model.

    Either reached `min_kappa` (with `min_within_one` of its grades at most one step from the human's, on
    the -3..3 scale) over at least `min_labels` labelled items. A relative path is under the project root."""
    from ._calibrated_judge import CalibratedJudge

    check_options(min_kappa, min_within_one, min_labels)
    if isinstance(grader, Grader | Path) or (isinstance(grader, str) and grader.endswith(".py")):
        return Calibrated(grader, min_kappa, model=model, min_within_one=min_within_one, min_labels=min_labels)
    if isinstance(grader, str) or (callable(getattr(grader, "describe", None)) and isinstance(
            getattr(grader, "name", None), str)):
        return CalibratedJudge(grader, float(min_kappa), model=model, min_within_one=float(min_within_one),
                               min_labels=min_labels)
    raise ConfigError(f"calibrated() takes an evaluator's name, an Evaluator, a grader(...) deck or the path of a "
                      f"grader file (*.py), got {grader!r}.")
