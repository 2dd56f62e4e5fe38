"""Each experiment's assets, checks and job, and the resources they use: what both the full
Definitions (`build_definitions`) and an inline recording (`record_runs`) are built from."""

from __future__ import annotations

from collections.abc import Sequence

from cobalt_lib import Config, Experiment
from cobalt_lib.gates import experiment_gates

from ._assets import ExperimentDefs, experiment_defs
from ._names import check_unique
from ._pools import judge_pool
from ._resource import CobaltResource
from ._translator import CobaltTranslator


def build_experiment_defs(experiments: Sequence[Experiment], config: Config,
                          translator: CobaltTranslator | None = None, *,
                          fork_steps: bool = False) -> list[ExperimentDefs]:
    """`fork_steps`: the jobs run on Dagster's default executor, their steps forked (`_step_processes`)."""
    check_unique(e.name for e in experiments)
    return [experiment_defs(e, experiment_gates(config, e.assertions, (v.name for v in e.evaluators),
                                                max_error_rate=e.max_error_rate),
                            judge_pool(e, config), translator, fork_steps=fork_steps) for e in experiments]


def resources(config: Config) -> dict[str, object]:
    """`cobalt`: the project, and through it its results store (`CobaltResource.store`)."""
    return {"cobalt": CobaltResource(project_dir=str(config.root))}
