"""`cobalt grade`: a grader over labelled samples across models and iterations, stored as a run, calibrated.

A grading run is an experiment run: the samples are the dataset (the "agent" hands back each
sample's assistant response), each `--model` is one `grader` evaluator, and `--iterations` are the
run's repetitions. So history, show, compare, export and the Dagster history see it as any run. Its
calibration is stored in the run's config under `grading`, where the `calibrated` gate reads it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from .._errors import ConfigError
from ..config._config import Config
from ..evaluators._evaluator import Evaluator
from ..experiments._dataset import Dataset
from ..experiments._experiment import Experiment
from ..ops._run import record_inline, recording, run_engine
from ..results._report import ExperimentReport, ItemResult
from ..run._execute import save
from ..run._plan import RunPlan, prepare
from ..run._requests import FreshRun
from ..run._session import Observer
from .calibration._calibrate import calibrate
from .calibration._models import Calibration, Grade
from .calibration._stored import EXPERIMENT_PREFIX, stored_calibrations
from .graders._deck import Grader
from .graders._files import load_grader
from .graders._samples import Sample, load_samples, route_model


class GradeOptions(BaseModel):
    """What `cobalt grade` grades, with which models, how often and how many at once."""

    input: Path
    grader: Path
    models: list[str] = Field(min_length=1)
    iterations: int = Field(default=1, ge=1)
    #: Gradings in flight (default: [judge] concurrency, else the project's concurrency).
    concurrency: int | None = Field(default=None, ge=1)
    #: The results JSONL (default: beside the run's results JSON, same name, `.jsonl`).
    output: Path | None = None
    #: Record the run in the project's Dagster history too.
    dagster: bool = True
    tags: list[str] = Field(default_factory=list)


class GradeOutput(BaseModel):
    score: int
    notes: str = ""


class GradeResult(BaseModel):
    """One grading: `score` -3..3, or None with `error` when the answer stayed unusable after the retry."""

    model: str
    id: str
    iteration: int
    score: int | None = None
    latency_ms: float | None = None
    raw_output: str | None = None
    output: GradeOutput | None = None
    sample_metadata: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    cached: bool = False


class PreviousCalibration(BaseModel):
    """The grader's grading run before this one: its kappas, and whether the rubric was the same."""

    run_id: str
    grader_hash: str
    same_rubric: bool
    weighted_kappa: dict[str, float | None] = Field(default_factory=dict)


class GradeOutcome(BaseModel):
    run_id: str
    status: str
    #: False when the grading run failed a gate: a model none of whose answers was usable (its run is FAILED).
    passed: bool = True
    #: The failed gates' messages.
    failures: list[str] = Field(default_factory=list)
    grader: str
    grader_hash: str
    results_path: str
    report_path: str | None = None
    results: list[GradeResult]
    calibration: Calibration
    previous: PreviousCalibration | None = None
    warnings: list[str] = Field(default_factory=list)

    def payload(self) -> dict[str, Any]:
        """What `cobalt grade --json` prints."""
        cal = self.calibration
        return {
            "run_id": self.run_id, "status": self.status, "passed": self.passed, "failures": self.failures,
            "grader": self.grader, "grader_hash": self.grader_hash,
            "results_path": self.results_path, "results": [r.model_dump(mode="json") for r in self.results],
            "calibration": {m: c.model_dump(mode="json") for m, c in cal.models.items()},
            "panel": cal.panel.model_dump(mode="json") if cal.panel else None,
            "agreement": cal.agreement.model_dump(mode="json") if cal.agreement else None,
            "samples": cal.samples, "labelled_samples": cal.labelled_samples, "iterations": cal.iterations,
            "previous": self.previous.model_dump(mode="json") if self.previous else None,
            "warnings": self.warnings,
        }


def grade(config: Config, options: GradeOptions, observer: Observer | None = None) -> GradeOutcome:
    """Grade every sample with every model, `iterations` times, store the run and its calibration."""
    samples = load_samples(options.input)
    grader = load_grader(options.grader, config.root)
    plan = prepare(grading_experiment(config, options, grader, samples), config,
                   FreshRun(concurrency=options.concurrency, tags=options.tags))
    mode = recording(plan, options.dagster)
    report = run_engine(plan, observer)
    results = grade_results(report, samples)
    calibration = calibrate(grades(report, samples), grader=grader.name, grader_hash=grader.hash,
                            iterations=options.iterations)
    jsonl = options.output or Path(str(report.results_path or plan.run_id)).with_suffix(".jsonl")
    _write_jsonl(jsonl, results)
    report.config["grading"] = {
        "grader": grader.describe(), "deck": _deck(grader), "input": str(options.input.resolve()),
        "iterations": options.iterations,
        "models": {m: {"judge_model": _label(plan, m)} for m in options.models},
        "results_jsonl": str(jsonl), "calibration": calibration.model_dump(mode="json"),
    }
    save(plan, report)
    warnings = _warnings(calibration)
    if mode == "inline":  # after the grading's own save: the recording shows the calibration too
        record_inline(config, [report.id], [plan.experiment])
    return GradeOutcome(run_id=report.id, status=report.status, passed=report.passed,
                        failures=[a.message for a in report.assertions if not a.passed],
                        grader=grader.name, grader_hash=grader.hash,
                        results_path=str(jsonl), report_path=report.results_path, results=results,
                        calibration=calibration, previous=previous_calibration(config, grader, report.id),
                        warnings=warnings)


def grading_experiment(config: Config, options: GradeOptions, grader: Grader, samples: list[Sample]) -> Experiment:
    """The grading run as an experiment: samples as items, one grader evaluator per model."""
    duplicates = sorted({m for m in options.models if options.models.count(m) > 1})
    if duplicates:
        raise ConfigError(f"--model {duplicates[0]} is given twice; give each model once (use --iterations "
                          "to grade several times).")
    evaluators = []
    for spec in options.models:
        provider, model = route_model(spec, config.judge.provider)
        evaluators.append(Evaluator(spec, type="grader", grader=grader, provider=provider, model=model))
    items = [{"id": s.id, "input": s.user_message, "assistant_response": s.assistant_response,
              **({"expected_output": s.expected_output} if s.expected_output is not None else {}),
              "truth": s.score, "metadata": s.metadata} for s in samples]
    limit = options.concurrency or config.judge_concurrency or config.concurrency
    return Experiment(f"{EXPERIMENT_PREFIX}{grader.name}", Dataset(items, source=str(options.input)), _respond,
                      evaluators=evaluators, runs=options.iterations, concurrency=limit, judge_concurrency=limit,
                      tags=["grade"], description=f"grading run of grader {grader.name!r}",
                      # unusable answers are the calibration's coverage, reported and left out of every rate;
                      # the run fails when a model gave none that was usable ("every evaluator scored")
                      max_error_rate=1.0)


async def _respond(ctx: Any) -> Any:
    """The grading run's "agent": the sample's assistant response, as recorded."""
    return ctx.item["assistant_response"]


def _graded(report: ExperimentReport) -> list[tuple[ItemResult, str, Any]]:
    return [(item, model, ev) for item in report.items for model, ev in item.evaluations.items()]


def grade_results(report: ExperimentReport, samples: list[Sample]) -> list[GradeResult]:
    """One result per sample x model x iteration, ordered by model, then sample, then iteration."""
    results = []
    for item, model, ev in _graded(report):
        sample = samples[item.index]
        usable = ev.status == "ok" and ev.raw_score is not None
        results.append(GradeResult(
            model=model, id=sample.id, iteration=item.run_index + 1,
            score=int(ev.raw_score) if usable else None, latency_ms=ev.latency_ms, raw_output=ev.raw_response,
            output=GradeOutput(score=int(ev.raw_score), notes=ev.reason or "") if usable else None,
            sample_metadata=sample.metadata, error=None if usable else ev.error, cached=ev.cached))
    order = {m: i for i, m in enumerate(dict.fromkeys(r.model for r in results))}
    position = {s.id: i for i, s in enumerate(samples)}
    return sorted(results, key=lambda r: (order[r.model], position[r.id], r.iteration))


def grades(report: ExperimentReport, samples: list[Sample]) -> list[Grade]:
    """The run's gradings as calibration inputs (an unusable answer has score None)."""
    return [Grade(model=model, id=samples[item.index].id, iteration=item.run_index + 1,
                  score=int(ev.raw_score) if ev.status == "ok" and ev.raw_score is not None else None,
                  notes=ev.reason or "", truth=samples[item.index].score)
            for item, model, ev in _graded(report)]


def _deck(grader: Grader) -> dict[str, Any] | None:
    """The rubric itself, so any graded version can be rebuilt (None when a context value is not JSON)."""
    from .graders._source import deck_payload

    payload = deck_payload(grader)
    try:
        json.dumps(payload)
    except (TypeError, ValueError):
        return None
    return payload


def _label(plan: RunPlan, model: str) -> str:
    endpoint = plan.endpoints.get(model)
    return endpoint.label if endpoint is not None else model


def _write_jsonl(path: Path, results: list[GradeResult]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for result in results:
            fh.write(json.dumps(result.model_dump(mode="json"), ensure_ascii=False) + "\n")


def _warnings(calibration: Calibration) -> list[str]:
    warnings = []
    if calibration.labelled_samples == 0:
        warnings.append("no sample carries a ground-truth score, so there is no calibration against the truth; "
                        "add \"score\": -3..3 to the samples you have labelled.")
    for model, cal in calibration.models.items():
        if cal.coverage.errors:
            warnings.append(f"{model}: {cal.coverage.errors} of {cal.coverage.attempted} answers were unusable "
                            "after a stricter retry; they are left out of every rate.")
    return warnings


def previous_calibration(config: Config, grader: Grader, run_id: str) -> PreviousCalibration | None:
    """The newest earlier grading run of a grader of the same name (same rubric or not)."""
    from ..store._store import Store

    earlier = [c for c in stored_calibrations(Store.for_config(config), grader=grader.name) if c.run_id != run_id]
    if not earlier:
        return None
    last = earlier[0]
    return PreviousCalibration(run_id=last.run_id, grader_hash=last.grader_hash,
                               same_rubric=last.grader_hash == grader.hash,
                               weighted_kappa={m: c.weighted_kappa for m, c in last.calibration.models.items()})
