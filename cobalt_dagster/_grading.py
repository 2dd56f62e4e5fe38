"""The grading runs (`cobalt grade`) in Dagster: recorded like any run, under one experiment of their own.

A grading run is stored as a run of the experiment `grade:<grader>`, made on the fly from the samples
and models `cobalt grade` was given: no project file defines it, so no job of the project's holds it.
Its recordings are partitions of one `cobalt-grading` experiment (run ids are unique across
experiments), whose assets and checks are in the Definitions once the store holds a grading run
(`cobalt serve` reloads them when the first one appears). Its checks are the two every run has (error
rate, every evaluator scored); its assets only record: materialising one from the UI fails, saying to
run `cobalt grade`.
"""

from __future__ import annotations

from typing import Any

from cobalt_lib import Config, Dataset, Experiment, Store
from cobalt_lib.grading.calibration import EXPERIMENT_PREFIX

#: The experiment whose partitions the grading runs are recorded as (`cobalt_grading/...` assets).
GRADING_EXPERIMENT = "cobalt-grading"


def _never(ctx: Any) -> None:
    """Its "agent": never called (a grading run is recorded, never executed, here)."""


def grading_experiment() -> Experiment:
    # A grading run's own gates: an error rate up to 100% (unusable answers are its coverage) and every
    # evaluator scored, as `cobalt grade` makes them.
    return Experiment(GRADING_EXPERIMENT, Dataset([]), _never, evaluators=[], tags=["grade"], max_error_rate=1.0,
                      description="The grading runs of `cobalt grade`, recorded (each a partition).")


def has_gradings(config: Config) -> bool:
    """Whether the project's store holds a grading run (the grading assets are in the Definitions)."""
    return Store.for_config(config).has_runs_named(EXPERIMENT_PREFIX)


def is_grading(name: str) -> bool:
    """Whether the stored run of experiment `name` is a grading run."""
    return name.startswith(EXPERIMENT_PREFIX)
