"""The project's experiments as data: name, file, dataset size, evaluators and gates, per file found."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from .._errors import CobaltError
from ..config._config import Config
from ..experiments._discovery import discover_files, load_file
from ..experiments._experiment import Experiment
from ..gates._assertions import experiment_gates


class EvaluatorInfo(BaseModel):
    name: str
    type: str
    #: The pass mark: a score at or above it passes.
    threshold: float


class ExperimentInfo(BaseModel):
    """One declared experiment, as `cobalt://experiments` lists it."""

    name: str
    file: str
    line: int | None = None
    dataset_size: int
    runs: int
    tags: list[str] = Field(default_factory=list)
    evaluators: list[EvaluatorInfo] = Field(default_factory=list)
    #: Every gate a run applies: the experiment's own, `[ci] thresholds` that apply, `evaluators scored`.
    gates: list[str] = Field(default_factory=list)


class BrokenFile(BaseModel):
    """An experiment file that failed to load, and why."""

    file: str
    error: str


class ExperimentCatalog(BaseModel):
    experiments: list[ExperimentInfo] = Field(default_factory=list)
    broken: list[BrokenFile] = Field(default_factory=list)


def describe_experiments(config: Config, files: list[str] | None = None) -> ExperimentCatalog:
    """Every experiment declared in `files` (default: the discovered ones); a file that fails to load is
    listed under `broken` with its error rather than hiding the others."""
    catalog = ExperimentCatalog()
    refused: list[str] = []
    paths = discover_files(config, refused) if files is None else [
        Path(f) if Path(f).is_absolute() else config.root / f for f in files]
    catalog.broken += [BrokenFile(file=line.split(" is a link to ", 1)[0], error=line) for line in refused]
    for path in paths:
        try:
            declared = load_file(path)
        except CobaltError as exc:
            catalog.broken.append(BrokenFile(file=_relative(config, path), error=str(exc)))
            continue
        catalog.experiments.extend(experiment_info(config, exp) for exp in declared)
    return catalog


def experiment_info(config: Config, exp: Experiment) -> ExperimentInfo:
    gates = experiment_gates(config, exp.assertions, (e.name for e in exp.evaluators),
                             max_error_rate=exp.max_error_rate)
    return ExperimentInfo(
        name=exp.name, file=_relative(config, Path(exp.source_file or "")), line=exp.source_line,
        dataset_size=len(exp.dataset), runs=exp.runs, tags=list(exp.tags),
        evaluators=[EvaluatorInfo(name=e.name, type=e.type, threshold=e.threshold) for e in exp.evaluators],
        gates=[g.name for g in gates])


def _relative(config: Config, path: Path) -> str:
    try:
        return path.resolve().relative_to(config.root.resolve()).as_posix()
    except ValueError:
        return str(path)
