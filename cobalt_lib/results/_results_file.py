"""The results directory: one JSON file per run, written atomically."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

from .._files import write_atomically
from ._report import ExperimentReport


def results_filename(report: ExperimentReport) -> str:
    """`<timestamp>_<experiment>_<run id>.json`, safe on every file system."""
    stamp = datetime.fromisoformat(report.timestamp).strftime("%Y%m%dT%H%M%SZ")
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", report.name).strip("_") or "experiment"
    return f"{stamp}_{name}_{report.id}.json"


def write_results(report: ExperimentReport, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / results_filename(report)
    report.results_path = str(target)
    write_atomically(target, report.model_dump_json(indent=2))
    return target


def read_results(path: str | Path) -> ExperimentReport:
    return ExperimentReport.model_validate_json(Path(path).read_text(encoding="utf-8"))
