"""Cleaning up: cached judge answers, results files and stored runs (with their shard files and side
files), older than an age or all."""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, Field

from ..config._config import Config, parse_duration
from ..store._exchange import Exchange
from ..store._store import Store
from ..store._values import VALUES_DIR, orphans

#: A temporary file younger than this may belong to a write in progress: leave it.
TMP_GRACE_SECONDS = 3600.0


class Cleanup(BaseModel):
    """What a clean deletes (or deleted): cache files, results files and the runs' rows."""

    cache_files: list[Path] = Field(default_factory=list)
    result_files: list[Path] = Field(default_factory=list)
    run_ids: list[str] = Field(default_factory=list)
    #: The experiment of each run in `run_ids`, to find its partition in the Dagster instance.
    experiments: dict[str, str] = Field(default_factory=dict)
    #: Old runs kept because they are still running (their rows are never pulled from under them).
    skipped_live: int = 0
    cache_bytes: int = 0
    result_bytes: int = 0

    def empty(self) -> bool:
        return not (self.cache_files or self.result_files or self.run_ids)


def plan_cleanup(config: Config, *, cache: bool, results: bool, older_than: str | None = None) -> Cleanup:
    """What `clean_up` would delete: cache entries and/or runs with their results files, each only when
    older than `older_than` (`30d`, `12h`) if given."""
    cutoff = time.time() - parse_duration(older_than, field="--older-than") if older_than else float("inf")
    plan = Cleanup()
    if cache:
        cache_dir = config.output_path / "cache"
        plan.cache_files = sorted(p for p in cache_dir.rglob("*") if p.is_file() and _older(p, cutoff))
        plan.cache_bytes = _size(plan.cache_files)
    if results:
        _plan_results(config, Store.for_config(config), cutoff, plan)
        plan.result_bytes = _size(plan.result_files)
    return plan


def clean_up(config: Config, plan: Cleanup) -> Cleanup:
    """Delete what `plan` lists: the runs' rows first (in one transaction), then the files; the runs
    also leave the project's Dagster instance (their runs and partitions), when it exists."""
    Store.for_config(config).delete_runs(plan.run_ids)
    if plan.run_ids and (config.output_path / "dagster").is_dir():
        from cobalt_dagster import forget_runs  # dagster loads only for a project that uses it

        forget_runs(config, {run_id: plan.experiments[run_id] for run_id in plan.run_ids
                             if run_id in plan.experiments})
    for path in [*plan.result_files, *plan.cache_files]:
        path.unlink(missing_ok=True)
    if plan.cache_files:
        _remove_empty_dirs(config.output_path / "cache")
    if plan.run_ids:
        _forget_files(config, plan.run_ids)
    return plan


def _forget_files(config: Config, run_ids: list[str]) -> None:
    """What deleted runs leave besides their rows: their shards' files in the exchange (when Dagster
    launched them) and the side files of values too long for a row that no remaining run points to."""
    exchange = Exchange.for_config(config)
    if not exchange.remote:  # object storage expires its files by its own lifecycle rule (docs/dagster.md)
        for run_id in run_ids:
            exchange.clear(run_id)
    for path in orphans(Store.for_config(config), config.output_path / VALUES_DIR):
        path.unlink(missing_ok=True)


def _plan_results(config: Config, store: Store, cutoff: float, plan: Cleanup) -> None:
    """Runs started before `cutoff` and results files modified before it, each with the other."""
    files = {p.resolve() for p in (config.output_path / "results").glob("*.json") if _older(p, cutoff)}
    chosen: set[str] = set()
    for run in store.runs(missing_ok=True):
        path = Path(run["results_path"]).resolve() if run.get("results_path") else None
        started = run.get("started_at")
        old = (path in files) or (isinstance(started, datetime) and started.timestamp() < cutoff)
        if not old:
            continue
        if run["status"] == "running":  # still alive (dead ones read as incomplete): never pull its rows
            plan.skipped_live += 1
        else:
            chosen.add(run["run_id"])
            plan.experiments[run["run_id"]] = run["experiment"]
            if path is not None and path.is_file():
                files.add(path)
    plan.result_files = sorted(files)
    plan.run_ids = sorted(chosen)


def _older(path: Path, cutoff: float) -> bool:
    if path.name.startswith(".tmp-"):
        cutoff = min(cutoff, time.time() - TMP_GRACE_SECONDS)
    try:
        return path.stat().st_mtime < cutoff
    except FileNotFoundError:
        return False


def _size(paths: list[Path]) -> int:
    return sum(p.stat().st_size for p in paths if p.exists())


def _remove_empty_dirs(directory: Path) -> None:
    for sub in sorted((p for p in directory.rglob("*") if p.is_dir()), reverse=True):
        if not any(sub.iterdir()):
            sub.rmdir()
