"""Runs of stored runs: finishing an interrupted one, running its failed items again, and scoring
its outputs again, the last two as new runs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import BaseModel

from .._aio import run_anywhere
from .._errors import ConfigError
from ..config._config import Config
from ..experiments._discovery import load_experiments
from ..results._report import ExperimentReport
from ..run._execute import execute
from ..run._group import is_group_id
from ..run._plan import prepare
from ..run._requests import RescoreRun
from ..run._resume import failed_request, resume_request
from ..run._session import Observer
from ..store._history import load_report, resolve_run
from ..store._store import Store
from ._refs import store_with_runs
from ._run import RunOutcome, run_plan, run_plans
from ._select import Selection, resume_scope

if TYPE_CHECKING:
    from ..experiments._experiment import Experiment


def resume_run(config: Config, ref: str, selection: Selection | None = None, *, concurrency: int | None = None,
               record: bool = False, observer: Observer | None = None, judge_batch: bool | None = None) -> RunOutcome:
    """Finish stored run `ref` on the library path: its rows say which agent calls and scores are done.

    `selection` gives the experiment files and, when its name filter or tags pick one experiment, the
    one whose runs `latest`/`previous` mean. `record`: then into the Dagster history as a recorded run.
    """
    problems: list[str] = []
    if is_group_id(ref):
        return RunOutcome(reports=resume_group(config, ref, selection, concurrency=concurrency, record=record,
                                               observer=observer, problems=problems), warnings=problems)
    experiment, run_id = _stored_run(config, ref, selection, "resume it", problems)
    plan = prepare(experiment, config, resume_request(experiment, config, run_id, concurrency=concurrency,
                                                      judge_batch=judge_batch))
    return RunOutcome(reports=[run_plan(plan, observer, record=record)], warnings=problems)


def resume_group(config: Config, ref: str, selection: Selection | None, *, concurrency: int | None,
                 record: bool, observer: Observer | None, problems: list[str]) -> list[ExperimentReport]:
    """Finish every run of run group `ref` that is not completed, at once, as the group ran."""
    store = store_with_runs(config)
    group = store.resolve_group(ref)
    unfinished = [row for row in store.group_runs(group) if row["status"] != "completed"]
    if not unfinished:
        raise ConfigError(f"Every run of group {group} is completed; there is nothing to resume.")
    plans = []
    for row in unfinished:
        experiment, run_id = _stored_run(config, row["run_id"], selection, "resume it", problems)
        plans.append(prepare(experiment, config, resume_request(experiment, config, run_id, concurrency=concurrency)))
    return run_plans(plans, observer, record=record)


def rerun_failed(config: Config, ref: str, selection: Selection | None = None, *, concurrency: int | None = None,
                 add_tags: Sequence[str] = (), record: bool = False, observer: Observer | None = None,
                 judge_batch: bool | None = None) -> RunOutcome:
    """Run again, as a new run linked by `parent_run_id`, the items that failed in stored run `ref`
    (agent error or timeout, eval-error, score below its pass mark), with their dataset indices.

    It runs on the library path; `record`: then into the Dagster history as a recorded run.
    `selection` is read as by `resume_run`.
    """
    problems: list[str] = []
    experiment, run_id = _stored_run(config, ref, selection, "re-run its failed items", problems)
    request = failed_request(experiment, config, run_id, concurrency=concurrency, tags=add_tags,
                             judge_batch=judge_batch)
    return RunOutcome(reports=[run_plan(prepare(experiment, config, request), observer, record=record)],
                      warnings=problems)


def _stored_run(config: Config, ref: str, selection: Selection | None, why: str,
                problems: list[str]) -> tuple[Experiment, str]:
    """The run `ref` names (`latest` of the experiment the selection picks) and its declared experiment;
    discovered files that did not load go to `problems`."""
    candidates, scope = resume_scope(config, selection or Selection(), problems)
    store = Store.for_config(config)
    run_id = resolve_run(store, ref, scope)
    name = store.experiment_of(run_id)
    found = [e for e in candidates if e.name == name]
    if not found:
        raise ConfigError(f"Run {run_id} belongs to experiment {name!r}, which no experiment file under "
                          f"{config.test_dir}/ declares; pass its file to {why}.")
    return found[-1], run_id


class Rescored(BaseModel):
    """A stored run's outputs scored again: the new run's report."""

    parent_run_id: str
    report: ExperimentReport


def rescore_run(config: Config, ref: str, *, evaluators: Sequence[str] = (), experiment: str | None = None,
                observer: Observer | None = None) -> Rescored:
    """Re-run the evaluators (those named, else all) over run `ref`'s outputs, without calling the
    agent, as a new run; `latest`/`previous` are looked up among `experiment`'s runs (default: all)."""
    store = store_with_runs(config)
    old_id = resolve_run(store, ref, experiment=experiment)
    stored = load_report(store, old_id)
    found = [e for e in load_experiments(config, problems=[]) if e.name == stored.name]
    if not found:
        raise ConfigError(f"Run {old_id} belongs to experiment {stored.name!r}, which no experiment file under "
                          f"{config.test_dir}/ declares any more; restore it to rescore this run.")
    request = RescoreRun(parent_run_id=old_id, outputs=stored.items, evaluators=evaluators, variant=stored.variant)
    report = run_anywhere(execute(prepare(found[-1], config, request), observer))
    return Rescored(parent_run_id=old_id, report=report)
