"""The resources every cobalt asset uses: where the project lives (`cobalt`), and its DuckDB store
(`cobalt_store`, a `dagster_duckdb.DuckDBResource`)."""

from collections.abc import Coroutine, Mapping
from pathlib import Path
from typing import Any, TypeVar

import dagster as dg
from dagster_duckdb import DuckDBResource
from pydantic import Field

from cobalt_lib import Config, ConfigError, Experiment, Store, load_config
from cobalt_lib.links import cobalt_tags, judge_batch_of, variant_of
from cobalt_lib.run import PartitionRun, RunPlan, prepare, run_coroutine

T = TypeVar("T")

#: The resource key of the store: a `DuckDBResource` on the project's `cobalt.duckdb`.
STORE_KEY = "cobalt_store"


class CobaltResource(dg.ConfigurableResource):
    """The cobalt project: its configuration (and, through it, its experiments' settings)."""

    project_dir: str = Field(description="Directory holding cobalt.toml (or cobalt.config.py).")

    def config(self) -> Config:
        return load_config(Path(self.project_dir))

    def store(self) -> Store:
        return Store.for_config(self.config())

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


def store_resource(config: Config) -> DuckDBResource:
    """The `cobalt_store` resource: Dagster's DuckDB resource on the project's results store."""
    return DuckDBResource(database=str(Store.for_config(config).path))


def checked_store(cobalt: CobaltResource, duckdb: DuckDBResource) -> Store:
    """cobalt's store module on the file `duckdb` names: it stays the one writer (short connections,
    retried while another process holds the file), so a step never holds the file for long."""
    expected = cobalt.store()
    if Path(duckdb.database).expanduser().resolve() != expected.path.resolve():
        raise ConfigError(f"The {STORE_KEY} resource names {duckdb.database!r}, but the project at "
                          f"{cobalt.project_dir} stores its runs in {expected.path}; point {STORE_KEY} there "
                          "(cobalt_dagster.store_resource(config)) or leave it to build_definitions.")
    return expected


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run a stage coroutine from a (synchronous) Dagster op."""
    return run_coroutine(coro)
