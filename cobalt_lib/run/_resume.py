"""Resuming a stored run: which run, and whether it can be finished where it stopped."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._errors import ConfigError
from ..config._config import Config
from ..results._report import ItemResult
from ..store._history import resolve_run, stored_items
from ..store._journal import replay_left
from ..store._store import Store, held_message
from ._agent import input_hash
from ._requests import FailedItemsRun, ResumeRun

if TYPE_CHECKING:
    from ..experiments._experiment import Experiment


def resume_request(experiment: Experiment, config: Config, ref: str, **options: Any) -> ResumeRun:
    """The request that finishes run `ref` of `experiment` (its id, a prefix, `latest` or `previous`).

    The run must be this experiment's, stopped (neither completed nor still running) and made with
    the same dataset; its stored rows say which agent calls and scores are done. `options` are
    ResumeRun's `concurrency`, `timeout`, `runs` and `tags`.
    """
    store = Store.for_config(config)
    replay_left(store)  # rows a run left on disk while the store was held: they are finished items
    run_id = resolve_run(store, ref, experiment=experiment.name)
    run = store.require_run(run_id)
    if run["status"] == "completed":
        raise ConfigError(f"Run {run_id} of {experiment.name!r} is already completed; there is nothing to resume.")
    if run["status"] == "running":
        raise _still_running(run_id, experiment.name, run)
    items = stored_items(store, run_id)
    _refuse_changed_dataset(experiment, run_id, run, items)
    stored = run.get("config") or {}
    indices = stored.get("indices")  # a run of some items (--only-failed) resumes those
    if stored.get("judge_batch") and options.get("judge_batch") is None:
        options = {**options, "judge_batch": True}  # a run started judging in batches finishes that way
    return ResumeRun(run_id=run_id, timestamp=run["started_at"].isoformat(), items=items,
                     indices=None if indices is None else tuple(indices), variant=run.get("variant"),
                     group_id=run.get("group_id"), **options)


def failed_request(experiment: Experiment, config: Config, ref: str, **options: Any) -> FailedItemsRun:
    """The request that runs again, as a new run, the items that failed in run `ref` of `experiment`:
    a failed or timed-out agent call, an eval-error, or a score below its pass mark.

    The run must not be running, must have such items and must have been made with the same dataset.
    `options` are FailedItemsRun's `concurrency`, `timeout`, `runs` and `tags`.
    """
    store = Store.for_config(config)
    run_id = resolve_run(store, ref, experiment=experiment.name)
    run = store.require_run(run_id)
    if run["status"] == "running":
        raise _still_running(run_id, experiment.name, run)
    items = stored_items(store, run_id)
    _refuse_changed_dataset(experiment, run_id, run, items, doing="re-running its failed items")
    failed = sorted({item.index for item in items if _failed(item)})
    if not failed:
        raise ConfigError(f"Run {run_id} of {experiment.name!r} has no failed items (agent errors, timeouts, "
                          "eval-errors or scores below a pass mark); there is nothing to re-run.")
    return FailedItemsRun(parent_run_id=run_id, indices=tuple(failed), variant=run.get("variant"), **options)


def _still_running(run_id: str, name: str, run: Mapping[str, Any]) -> ConfigError:
    return ConfigError(held_message({**run, "run_id": run_id, "experiment": name}))


def _failed(item: ItemResult) -> bool:
    return item.status != "ok" or any(ev.status != "ok" or ev.passed is False for ev in item.evaluations.values())


def _refuse_changed_dataset(exp: Experiment, run_id: str, run: Mapping[str, Any], items: list[ItemResult], *,
                            doing: str = "resuming") -> None:
    """Resuming adds the missing items to the stored ones (and a run of the failed items pairs with
    them): both must come from the same dataset."""
    config = run.get("config") or {}
    size = (config.get("dataset") or {}).get("size") if isinstance(config, dict) else None
    now = len(exp.dataset)
    changed = next((item.index for item in items
                    if item.index >= now or input_hash(exp.dataset[item.index]) != item.input_hash), None)
    if (size is not None and int(size) != now) or changed is not None:
        what = f"{size} items then, {now} now" if size is not None and int(size) != now else f"item {changed} changed"
        raise ConfigError(f"Run {run_id} of {exp.name!r} was made with another dataset ({what}); {doing} would "
                          f"mix the two: start a new run instead.")
