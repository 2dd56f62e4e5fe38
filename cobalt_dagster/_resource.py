"""The resource every cobalt asset uses: where the project (config, store, experiments) lives."""

from collections.abc import Coroutine, Mapping
from pathlib import Path
from typing import Any, TypeVar

import dagster as dg
from pydantic import Field

from cobalt_lib import Config, Experiment, Store, load_config
from cobalt_lib.run import RunPlan, prepare, run_coroutine

T = TypeVar("T")


class CobaltResource(dg.ConfigurableResource):
    """The cobalt project: its configuration and its DuckDB store under `output_dir`."""

    project_dir: str = Field(description="Directory holding cobalt.toml (or cobalt.config.py).")

    def config(self) -> Config:
        return load_config(Path(self.project_dir))

    def store(self) -> Store:
        return Store(self.config().output_path / "cobalt.duckdb")

    def plan(self, experiment: Experiment, run_id: str, tags: Mapping[str, str]) -> RunPlan:
        """The same validated plan the library builds, for this partition (= cobalt run id)."""
        config = self.config()
        store = Store(config.output_path / "cobalt.duckdb")
        timestamp = None
        if store.path.exists():
            rows = store.query("SELECT started_at FROM runs WHERE run_id = ?", [run_id])
            if rows and rows[0]["started_at"] is not None:
                timestamp = rows[0]["started_at"].isoformat()
        concurrency = int(tags["cobalt/concurrency"]) if tags.get("cobalt/concurrency") else None
        extra_tags = [t for t in tags.get("cobalt/tags", "").split(",") if t]
        return prepare(experiment, config, run_id=run_id, source="dagster", concurrency=concurrency,
                       tags=extra_tags, timestamp=timestamp)


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run a stage coroutine from a (synchronous) Dagster op."""
    return run_coroutine(coro)
