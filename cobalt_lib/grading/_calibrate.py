"""`cobalt calibrate EXPERIMENT --evaluator NAME [--run RUN]`: any evaluator of a run against the labels.

The run (default: the experiment's newest completed run holding the evaluator) gives the verdicts; the
labels of the experiment and evaluator (`cobalt labels`, the pages) give the truth, paired by item
identity. A grading run's samples carry their own ground truth (`score`), used for items without a
label. The calibration is stored, keyed by the evaluator's prompt hash and model, where `calibrated()`
finds it.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from .._errors import ConfigError
from ..config._config import Config
from ..store._history import resolve_run
from ..store._store import Store
from ._labels import Label, current_labels, identity_of, output_hash
from .calibration._judge import JudgeCalibration, Observation, calibrate_judge, prompt_hash
from .calibration._people import HumanCeiling, consensus, human_ceiling
from .calibration._scales import judged_value, label_value, scale_of
from .calibration._stored import EXPERIMENT_PREFIX


class PreviousJudge(BaseModel):
    """The calibration stored before this one for the same experiment and evaluator."""

    run_id: str
    prompt_hash: str
    same_prompt: bool
    kappa: float | None = None
    created_at: str = ""


class CalibrateOutcome(BaseModel):
    calibration: JudgeCalibration
    previous: PreviousJudge | None = None
    warnings: list[str] = Field(default_factory=list)


def calibrate_evaluator(config: Config, experiment: str, evaluator: str, *, run: str | None = None,
                        save: bool = True, resamples: int = 1000) -> CalibrateOutcome:
    """Calibrate `evaluator` of a run of `experiment` against its labels; store it unless `save` is False."""
    store = Store.for_config(config)
    if not store.runs(experiment, missing_ok=True):
        known = sorted({r["experiment"] for r in store.runs(missing_ok=True)})
        raise ConfigError(f"No stored run of experiment {experiment!r} (experiments: {', '.join(known) or 'none'}).")
    row = store.require_run(resolve_run(store, run, experiment)) if run else _newest_with(store, experiment, evaluator)
    if row["experiment"] != experiment:
        raise ConfigError(f"Run {row['run_id']} is of experiment {row['experiment']!r}, not {experiment!r}.")
    described = _described(row, evaluator)
    scale = scale_of(described)
    with store.reading():  # one connection for the reads
        observations, scored, models, stale = _observations(config, store, row, evaluator, scale)
        current = {label.item_id for label in current_labels(config, experiment, evaluator)}
        held = set(store.item_identities(row["run_id"]).values())
        labels = len(current)
    cal = calibrate_judge(scale, observations, resamples=resamples, experiment=experiment, evaluator=evaluator,
                          evaluator_type=str(described.get("type")), run_id=row["run_id"],
                          prompt_hash=prompt_hash(described), model=models.most_common(1)[0][0] if models else None,
                          items=scored, labels=labels, created_at=datetime.now(UTC).isoformat())
    cal.stale_labels = stale
    cal.unmatched_labels = len(current - held)
    cal.human = _ceiling(config, experiment, evaluator, scale, observations, resamples)
    previous = _previous(store, cal)
    warnings = _warnings(cal)
    if save and cal.labelled:
        store.save_calibration(calibration_row(cal))
    return CalibrateOutcome(calibration=cal, previous=previous, warnings=warnings)


def _newest_with(store: Store, experiment: str, evaluator: str) -> dict[str, Any]:
    runs = store.runs(experiment, missing_ok=True)
    for run in runs:
        if run["status"] == "completed" and any(isinstance(e, dict) and e.get("name") == evaluator
                                                for e in (run.get("config") or {}).get("evaluators") or []):
            return run
    names = sorted({e["name"] for r in runs for e in (r.get("config") or {}).get("evaluators") or []
                    if isinstance(e, dict) and isinstance(e.get("name"), str)})
    raise ConfigError(f"No completed run of {experiment!r} has evaluator {evaluator!r} (its evaluators: "
                      f"{', '.join(names) or 'none'}); pass --run RUN to calibrate an unfinished run.")


def _described(run: dict[str, Any], evaluator: str) -> dict[str, Any]:
    declared = [e for e in (run.get("config") or {}).get("evaluators") or [] if isinstance(e, dict)]
    found = next((e for e in declared if e.get("name") == evaluator), None)
    if found is None:
        raise ConfigError(f"Run {run['run_id']} has no evaluator {evaluator!r} (its evaluators: "
                          f"{', '.join(str(e.get('name')) for e in declared) or 'none'}).")
    return found


def _observations(config: Config, store: Store, run: dict[str, Any], evaluator: str,
                  scale: Any) -> tuple[list[Observation], int, Counter[str], int]:
    """(label, verdict) of every usable score of a labelled item; how many items were scored usably; the
    judge models seen. Only the labelled items' values are read (a grading run's: every item's, as each
    sample carries its truth)."""
    # Each person's label of an item (the newest per person); the verdict is measured against their consensus.
    labels: dict[str, list[Label]] = {}
    for each in current_labels(config, run["experiment"], evaluator):
        labels.setdefault(each.item_id, []).append(each)
    keys = {(k["item_index"], k["run_index"]): k for k in store.output_keys(run["run_id"])}
    scores = [s for s in store.evaluator_rows(run["run_id"], evaluator)
              if keys.get((s["item_index"], s["run_index"]), {}).get("status") == "ok"
              and judged_value(scale, s.get("score"), s.get("raw_score"), s.get("passed")) is not None]
    grading = str(run["experiment"]).startswith(EXPERIMENT_PREFIX)
    wanted = [s["item_index"] for s in scores
              if grading or str(keys[(s["item_index"], s["run_index"])]["ident"]) in labels]
    outputs = {(o["item_index"], o["run_index"]): o for o in store.outputs_of(run["run_id"], wanted)}
    found, models, stale = [], Counter[str](), set()
    for score in scores:
        if score.get("judge_model"):
            models[str(score["judge_model"])] += 1
        output = outputs.get((score["item_index"], score["run_index"]))
        if output is None:
            continue
        ident = identity_of(output)
        by = labels.get(ident, [])
        label = by[-1] if by else None
        truth = consensus(scale, [b.value for b in by]) if by else _sample_truth(scale, output.get("input"))
        judged = judged_value(scale, score.get("score"), score.get("raw_score"), score.get("passed"))
        if truth is None or judged is None:
            continue
        if any(b.output_hash and b.output_hash != output_hash(output.get("output")) for b in by):
            stale.add(ident)
        found.append(Observation(item_id=ident, item_index=score["item_index"], run_index=score["run_index"],
                                 label=truth, judged=judged, score=score.get("score"),
                                 reason=score.get("reason") or "",
                                 note=_notes(by) if label else "from the samples file",
                                 who=", ".join(b.who for b in by), input=output.get("input"),
                                 output=output.get("output")))
    scored = {str(keys[(s["item_index"], s["run_index"])]["ident"]) for s in scores}
    return found, len(scored), models, len(stale)


def _notes(labels: list[Label]) -> str:
    """One person's note as it is; several people's each with who wrote it."""
    if len(labels) == 1:
        return labels[0].note
    return "; ".join(f"{b.who or '?'}: {b.note}" for b in labels if b.note)


def _ceiling(config: Config, experiment: str, evaluator: str, scale: Any, observations: list[Observation],
             resamples: int) -> HumanCeiling | None:
    """The human ceiling over the items the run scored: each person's label beside the first repeat's verdict."""
    people: dict[str, dict[str, float]] = {}
    for label in current_labels(config, experiment, evaluator):
        people.setdefault(label.item_id, {})[label.who or "?"] = label.value
    judged = {o.item_id: o.judged for o in observations if o.run_index == 0}
    return human_ceiling(scale, {item: by for item, by in people.items() if item in judged}, judged,
                         resamples=resamples)


def _sample_truth(scale: Any, item: Any) -> float | None:
    """A grading run's item carries the sample's human score as `truth`."""
    truth = item.get("truth") if isinstance(item, dict) else None
    return None if truth is None else label_value(scale, truth)


def calibration_row(cal: JudgeCalibration) -> dict[str, Any]:
    """The `calibrations` row: keyed by the run, evaluator, prompt hash and model."""
    key = "\0".join([cal.run_id, cal.evaluator, cal.prompt_hash, cal.model or ""])
    return {"calibration_id": hashlib.sha256(key.encode()).hexdigest()[:16], "experiment": cal.experiment,
            "evaluator": cal.evaluator, "run_id": cal.run_id, "prompt_hash": cal.prompt_hash, "model": cal.model,
            "scale": cal.scale, "labelled": cal.labelled, "kappa": cal.kappa, "created_at": cal.created_at,
            "figures": cal.model_dump(mode="json")}


def stored_judge_calibrations(config: Config, **where: str) -> list[JudgeCalibration]:
    """Stored calibrations (of `experiment`, `evaluator` or `prompt_hash`), newest first."""
    rows = Store.for_config(config).calibrations(**where)
    return [JudgeCalibration.model_validate(r["figures"]) for r in rows]


def _previous(store: Store, cal: JudgeCalibration) -> PreviousJudge | None:
    for row in store.calibrations(experiment=cal.experiment, evaluator=cal.evaluator):
        if row["run_id"] != cal.run_id:
            at = row.get("created_at")
            return PreviousJudge(run_id=row["run_id"], prompt_hash=row["prompt_hash"],
                                 same_prompt=row["prompt_hash"] == cal.prompt_hash, kappa=row.get("kappa"),
                                 created_at=at.isoformat() if isinstance(at, datetime) else str(at or ""))
    return None


def _warnings(cal: JudgeCalibration) -> list[str]:
    return _unmatched(cal) + _labelled_warnings(cal)


def _unmatched(cal: JudgeCalibration) -> list[str]:
    if not cal.unmatched_labels:
        return []
    n = cal.unmatched_labels
    on = "is on an item id" if n == 1 else "are on item ids"
    return [f"{n} of the {cal.labels} labels of {cal.evaluator!r} {on} run "
            f"{cal.run_id} does not hold, so {'it calibrates' if n == 1 else 'they calibrate'} nothing here: a typo "
            f"in an id, or items of another dataset (`cobalt labels export {cal.experiment}` lists the labels' ids)."]


def _labelled_warnings(cal: JudgeCalibration) -> list[str]:
    if cal.stale_labels:
        return [f"{cal.stale_labels} of the {cal.labelled} labelled items were labelled on another answer than run "
                f"{cal.run_id}'s (the agent answered differently since): those labels judged the earlier answer; "
                "re-check them on this run's page."]
    if cal.labelled == 0:
        return [f"no item of run {cal.run_id} scored by {cal.evaluator!r} has a label: label some in the pages "
                f"(`cobalt serve`, the run's page) or import them (`cobalt labels import FILE`); nothing was stored."]
    return []
