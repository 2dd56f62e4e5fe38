"""The resource every cobalt asset uses: where the project (config, store, experiments) lives."""

from collections.abc import Coroutine, Mapping
from pathlib import Path
from typing import Any, TypeVar

import dagster as dg
from pydantic import Field

from cobalt_lib import Config, Experiment, Store, load_config
from cobalt_lib.run import PartitionRun, RunPlan, prepare, run_coroutine

T = TypeVar("T")


class CobaltResource(dg.ConfigurableResource):
    """The cobalt project: its configuration and its DuckDB store under `output_dir`."""

    project_dir: str = Field(description="Directory holding cobalt.toml (or cobalt.config.py).")

    def config(self) -> Config:
        return load_config(Path(self.project_dir))

    def store(self) -> Store:
        return Store.for_config(self.config())

    def plan(self, experiment: Experiment, run_id: str, tags: Mapping[str, str]) -> RunPlan:
        """The same validated plan the library builds, for this partition (= cobalt run id)."""
        config = self.config()
        run = Store.for_config(config).get_run(run_id)
        started = run.get("started_at") if run else None
        concurrency = int(tags["cobalt/concurrency"]) if tags.get("cobalt/concurrency") else None
        extra_tags = [t for t in tags.get("cobalt/tags", "").split(",") if t]
        request = PartitionRun(run_id=run_id, timestamp=started.isoformat() if started is not None else None,
                               concurrency=concurrency, tags=extra_tags)
        return prepare(experiment, config, request)


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run a stage coroutine from a (synchronous) Dagster op."""
    return run_coroutine(coro)
