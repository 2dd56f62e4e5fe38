"""The resource every cobalt asset uses, `cobalt`: where the project lives, and what each stage does
(`materialize`, `check`: an asset's body is one line over it)."""

from collections.abc import Coroutine, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import dagster as dg
from pydantic import Field

from cobalt_lib import Config, Experiment, Store, load_config
from cobalt_lib.gates import Assertion
from cobalt_lib.links import cobalt_tags, judge_batch_of, variant_of
from cobalt_lib.run import PartitionRun, RunPlan, prepare, run_coroutine

from . import _stages

T = TypeVar("T")


class CobaltResource(dg.ConfigurableResource):
    """The cobalt project: its configuration (and, through it, its experiments' settings)."""

    project_dir: str = Field(description="Directory holding cobalt.toml (or cobalt.config.py).")

    def config(self) -> Config:
        return load_config(Path(self.project_dir))

    def store(self) -> Store:
        """The project's results store (`.cobalt/cobalt.duckdb`): your own assets read cobalt's tables
        through it (`cobalt.store().query(sql)`), in short connections, as cobalt's runs write there."""
        return Store.for_config(self.config())

    def materialize(self, context: dg.AssetExecutionContext, experiment: Experiment,
                    stage: str) -> Iterator[dg.MaterializeResult]:
        """The materialisation of `stage` (`dataset`, `aggregates`) for the partition's cobalt run: the
        stage's work, or in a recording (`cobalt/record`) the stored run's metadata."""
        yield _stages.materialize(self, context, experiment, stage)

    def check(self, context: dg.AssetCheckExecutionContext, gate: Assertion) -> Iterator[dg.AssetCheckResult]:
        """The stored verdict of `gate` for the partition's cobalt run; a failed gate then fails the step."""
        yield from _stages.check(self, context, gate)

    def plan(self, experiment: Experiment, run_id: str, tags: Mapping[str, str]) -> RunPlan:
        """The same validated plan the library builds, for this partition (= cobalt run id)."""
        config = self.config()
        return self.plan_for_run(experiment, run_id, tags, Store.for_config(config).get_run(run_id), config)

    def plan_for_run(self, experiment: Experiment, run_id: str, tags: Mapping[str, str],
                     run: Mapping[str, Any] | None, config: Config | None = None) -> RunPlan:
        """`plan`, from the run's stored row (`Store.get_run`; None: not stored yet) that the step has
        already read with its other reads."""
        config = config or self.config()
        started = run.get("started_at") if run else None
        concurrency = int(tags["cobalt/concurrency"]) if tags.get("cobalt/concurrency") else None
        # The variant a partition runs: its run's tag (a schedule or request tags each variant's partition),
        # else the stored run's (a partition materialised again), else the experiment's baseline.
        variant, group = variant_of(tags)
        if variant is None and run:
            variant, group = run.get("variant"), run.get("group_id")
        request = PartitionRun(run_id=run_id, timestamp=started.isoformat() if started is not None else None,
                               concurrency=concurrency, tags=cobalt_tags(tags), judge_batch=judge_batch_of(tags),
                               variant=variant, group_id=group)
        return prepare(experiment, config, request)


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run a stage coroutine from a (synchronous) Dagster op."""
    return run_coroutine(coro)
