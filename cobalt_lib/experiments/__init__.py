"""Declaring experiments: datasets, `experiment(...)`, and finding experiment files."""

from __future__ import annotations

from ._dataset import Dataset
from ._discovery import discover_files, load_experiments, load_file
from ._experiment import REGISTRY, Experiment, experiment

__all__ = [
    "REGISTRY",
    "Dataset",
    "Experiment",
    "discover_files",
    "experiment",
    "load_experiments",
    "load_file",
]
