"""Calibrations as stored with their grading runs (the run's config, key `grading`), newest first."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from ._models import Calibration, ModelCalibration

if TYPE_CHECKING:
    from ...store._store import Store

#: Grading runs are stored as runs of the experiment `grade:<grader name>`.
EXPERIMENT_PREFIX = "grade:"


class StoredCalibration(BaseModel):
    """One grading run's calibration, and what it graded with."""

    run_id: str
    started_at: str
    grader: str
    grader_hash: str
    grader_source: str | None = None
    input: str | None = None
    #: The `--model` as given -> the endpoint it resolved to (`openrouter/openai/gpt-4o`, `openai/gpt-4o`).
    models: dict[str, str] = Field(default_factory=dict)
    calibration: Calibration

    def for_model(self, model: str) -> ModelCalibration | None:
        """This run's figures for `model`, given as the `--model` or as an endpoint label."""
        from ..graders._samples import canonical_model

        wanted = canonical_model(model)
        for given, label in self.models.items():
            if wanted in (canonical_model(given), canonical_model(label)):
                return self.calibration.models.get(given)
        return None


def grading_config(run_config: dict[str, Any]) -> dict[str, Any] | None:
    grading = run_config.get("grading") if isinstance(run_config, dict) else None
    return grading if isinstance(grading, dict) and "calibration" in grading else None


def stored_calibrations(store: Store, *, grader_hash: str | None = None,
                        grader: str | None = None) -> list[StoredCalibration]:
    """Completed grading runs holding a calibration, newest first; optionally only one content hash
    or one grader name."""
    found = []
    for run in store.runs(missing_ok=True):
        if not str(run.get("experiment", "")).startswith(EXPERIMENT_PREFIX) or run.get("status") != "completed":
            continue
        grading = grading_config(run.get("config") or {})
        if grading is None:
            continue
        info = grading.get("grader") or {}
        if grader_hash is not None and info.get("hash") != grader_hash:
            continue
        if grader is not None and info.get("name") != grader:
            continue
        found.append(StoredCalibration(
            run_id=str(run["run_id"]), started_at=str(run.get("started_at")), grader=str(info.get("name")),
            grader_hash=str(info.get("hash")), grader_source=info.get("source"), input=grading.get("input"),
            models={m: str(v.get("judge_model", m)) for m, v in (grading.get("models") or {}).items()},
            calibration=Calibration.model_validate(grading["calibration"])))
    return found
