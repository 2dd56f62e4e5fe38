"""Declaring experiments: datasets, `experiment(...)`, and finding experiment files."""

from __future__ import annotations

from ._dataset import Dataset, StoredVersion, parse_ref
from ._discovery import discover_files, load_experiments, load_file
from ._experiment import REGISTRY, Experiment, experiment

__all__ = [
    "REGISTRY",
    "Dataset",
    "Experiment",
    "StoredVersion",
    "discover_files",
    "experiment",
    "load_experiments",
    "load_file",
    "parse_ref",
]
