"""A grader's versions, as its grading runs stored them, and the export of one version with its samples.

A version is one content hash of a grader (its rubric); versions are numbered by their first
grading, v1 the oldest, and each shows the figures of its latest grading. `cobalt grader versions`
and the studio print them side by side ("v2: 90% exact, within one 100%, MAE 0.10; v1: ...").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from .._errors import ConfigError
from .._files import write_atomically
from ..config._config import Config
from .calibration._stored import StoredCalibration, stored_calibrations
from .graders._deck import Grader
from .graders._draft import file_stem
from .graders._files import load_grader
from .graders._samples import Sample, load_samples
from .graders._source import grader_source


class VersionFigures(BaseModel):
    """One model's agreement with the labels in a version's latest grading (rates 0..1)."""

    model: str
    labelled: int = 0
    exact_match_rate: float | None = None
    within_one_rate: float | None = None
    mean_absolute_error: float | None = None
    weighted_kappa: float | None = None
    band: str | None = None


class GraderVersion(BaseModel):
    """One rubric of a grader: its number, hash, latest grading run and that run's figures per model."""

    number: int
    grader: str
    grader_hash: str
    run_id: str
    started_at: str
    source: str | None = None
    input: str | None = None
    gradings: int = 1
    models: dict[str, VersionFigures] = Field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"v{self.number}"


def _figures(stored: StoredCalibration) -> dict[str, VersionFigures]:
    cal = stored.calibration
    rows = [*cal.models.values(), *([cal.panel] if cal.panel else [])]
    return {c.model: VersionFigures(model=c.model, labelled=c.labelled, exact_match_rate=c.exact_match_rate,
                                    within_one_rate=c.within_one_rate, mean_absolute_error=c.mean_absolute_error,
                                    weighted_kappa=c.weighted_kappa, band=c.verdict.band) for c in rows}


def grader_versions(config: Config, name: str, samples: Path | None = None) -> list[GraderVersion]:
    """The versions of grader `name` graded in this project (only on the samples file `samples`, when
    given), oldest first."""
    from ..store._store import Store

    wanted = str(samples.resolve()) if samples is not None else None
    runs = [c for c in stored_calibrations(Store.for_config(config), grader=name) if wanted in (None, c.input)]
    versions: dict[str, GraderVersion] = {}
    for stored in reversed(runs):  # oldest first: a version's number is its first grading
        known = versions.get(stored.grader_hash)
        gradings = known.gradings + 1 if known else 1
        versions[stored.grader_hash] = GraderVersion(
            number=known.number if known else len(versions) + 1, grader=stored.grader,
            grader_hash=stored.grader_hash, run_id=stored.run_id, started_at=stored.started_at,
            source=stored.grader_source, input=stored.input, gradings=gradings, models=_figures(stored))
    return sorted(versions.values(), key=lambda v: v.number)


def pick_version(config: Config, name: str, number: int | None = None, samples: Path | None = None) -> GraderVersion:
    """Version `number` of grader `name` (the newest when None); a ConfigError lists the ones there are."""
    versions = grader_versions(config, name, samples)
    where = f" on {samples}" if samples is not None else ""
    if not versions:
        raise ConfigError(f"Grader {name!r} has no grading run{where} in this project; grade it first: "
                          "cobalt grade --input SAMPLES.jsonl --grader FILE --model PROVIDER/NAME.")
    if number is None:
        return versions[-1]
    for version in versions:
        if version.number == number:
            return version
    raise ConfigError(f"Grader {name!r} has versions v1 to v{len(versions)}{where}; there is no v{number}.")


def version_grader(config: Config, version: GraderVersion) -> Grader:
    """The grader of a stored version: from the file it was graded from while that still holds it, else
    rebuilt from the rubric its grading run stored; checked against the version's hash either way."""
    from ..store._store import Store
    from .graders._source import deck_from_payload

    if version.source and Path(version.source).is_file():
        loaded = load_grader(version.source)
        if loaded.hash == version.grader_hash:
            return loaded
    run = Store.for_config(config).get_run(version.run_id) or {}
    deck = ((run.get("config") or {}).get("grading") or {}).get("deck")
    rebuilt = deck_from_payload(deck) if isinstance(deck, dict) else None
    if rebuilt is None or rebuilt.hash != version.grader_hash:
        raise ConfigError(f"{version.label} of grader {version.grader!r} cannot be rebuilt: {version.source} holds "
                          f"another rubric now and grading run {version.run_id} did not store its own; export "
                          "another version, or grade that rubric again.")
    return rebuilt


class Exported(BaseModel):
    """Where the grader and its samples were written, and how to use them."""

    grader: str
    grader_hash: str
    grader_path: str
    samples_path: str | None = None
    samples: int = 0
    #: The samples carrying a human score (`calibrated()` asks for 50 by default).
    labelled: int = 0
    #: The models this rubric has a stored calibration for (what `calibrated()` can gate on).
    calibrated_models: list[str] = Field(default_factory=list)


def _write(path: Path, text: str, overwrite: bool, what: str) -> None:
    if path.exists() and path.read_text(encoding="utf-8", errors="replace") != text and not overwrite:
        raise ConfigError(f"{path} already exists and holds something else; pass --overwrite to replace it, or "
                          f"choose another path for the {what}.")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, text)


def sample_row(sample: Sample) -> dict[str, Any]:
    """A sample in Bolt Foundry's shape: userMessage, assistantResponse, score (and id, expectedOutput, metadata)."""
    row: dict[str, Any] = {"id": sample.id, "userMessage": sample.user_message,
                           "assistantResponse": sample.assistant_response}
    if sample.expected_output is not None:
        row["expectedOutput"] = sample.expected_output
    if sample.score is not None:
        row["score"] = sample.score
    if sample.metadata:
        row["metadata"] = sample.metadata
    return row


def export_grader(config: Config, grader: Grader, samples: list[Sample] | None, *, output: Path | None = None,
                  samples_output: Path | None = None, overwrite: bool = False) -> Exported:
    """Write the grader as a builder file (default `graders/<name>.py` in the project) and the samples as
    JSONL beside it (`<name>.samples.jsonl`); an existing different file needs `overwrite`."""
    target = (output or config.root / "graders" / f"{file_stem(grader.name)}.py").resolve()
    if target.suffix != ".py":
        raise ConfigError(f"The grader file {target} must end in .py (a grader is a Python module).")
    _write(target, grader_source(grader), overwrite, "grader")
    written = None
    if samples:
        written = (samples_output or target.with_name(f"{file_stem(grader.name)}.samples.jsonl")).resolve()
        text = "".join(json.dumps(sample_row(s), ensure_ascii=False) + "\n" for s in samples)
        _write(written, text, overwrite, "samples")
    return Exported(grader=grader.name, grader_hash=grader.hash, grader_path=str(target),
                    samples_path=str(written) if written else None, samples=len(samples or []),
                    labelled=sum(s.score is not None for s in samples or []),
                    calibrated_models=calibrated_models(config, grader))


def calibrated_models(config: Config, grader: Grader) -> list[str]:
    from ..store._store import Store

    found: dict[str, None] = {}
    for stored in stored_calibrations(Store.for_config(config), grader_hash=grader.hash):
        found.update(dict.fromkeys(stored.models))
    return list(found)


def export_version(config: Config, name: str, number: int | None = None, *, samples: Path | None = None,
                   output: Path | None = None, samples_output: Path | None = None,
                   overwrite: bool = False) -> Exported:
    """`cobalt grader export`: a stored version's grader and the samples it was graded on."""
    version = pick_version(config, name, number, samples)
    grader = version_grader(config, version)
    rows = load_samples(version.input) if version.input and Path(version.input).is_file() else None
    return export_grader(config, grader, rows, output=output, samples_output=samples_output, overwrite=overwrite)


def comparison(versions: list[GraderVersion], model: str) -> str:
    """`v2: 90% exact, within one 100%, MAE 0.10; v1: 60%, 70%, 0.70`, newest first, for one model."""
    from ..render._units import decimal, percent

    parts: list[str] = []
    for version in reversed(versions):
        fig = version.models.get(model)
        if fig is None:
            continue
        exact, within, mae = percent(fig.exact_match_rate), percent(fig.within_one_rate), \
            decimal(fig.mean_absolute_error)
        parts.append(f"{version.label}: {exact} exact, within one {within}, MAE {mae}" if not parts
                     else f"{version.label}: {exact}, {within}, {mae}")
    return "; ".join(parts)
