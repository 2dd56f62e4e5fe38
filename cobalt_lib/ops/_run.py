"""Running the selected experiments on the library engine, recording them in Dagster, and updating baselines.

Two steps, so a caller can show the plans' warnings before the runs start: `prepare_runs` checks
every experiment (a usage error means nothing runs), `execute_runs` runs them. `run_experiments`
does both. Ctrl-C keeps what finished and raises `RunInterrupted`, naming the run to resume.

A run is recorded in Dagster as `[dagster] record` says: by the daemon's record sensor (`daemon`, the
default: this process does no Dagster work), before the command ends (`inline`), or not at all (`off`,
or `--no-dagster` for one run, which the store notes so that no sensor records it later).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

from pydantic import BaseModel, Field

from .._aio import run_anywhere
from .._errors import CobaltError
from .._files import disk_full
from .._secrets import scrub
from .._testing import pause_point
from ..config._config import Config, RecordMode
from ..experiments._discovery import FilesDidNotLoad
from ..experiments._experiment import Experiment
from ..experiments._variants import check_variant_filter, variant_plans
from ..gates._assertions import NoRegression
from ..results._evaluation_identity import identity_changes, measurement_changes
from ..results._report import ExperimentReport
from ..run._execute import RunInterrupted, execute
from ..run._plan import RunPlan, prepare
from ..run._requests import FreshRun, ResumeRun
from ..run._session import Observer
from ._select import Selection, select_experiments, unused_thresholds


class RunOptions(BaseModel):
    """How the selected experiments run."""

    #: Agent calls in flight (default: the experiment's, else config's).
    concurrency: int | None = Field(default=None, ge=1)
    #: Tags added to each run.
    add_tags: list[str] = Field(default_factory=list)
    #: Recorded in Dagster as `[dagster] record` says (False: `--no-dagster`, this run is never recorded).
    dagster: bool = True
    #: Skip the no_regression gates and, when the other gates pass, write their baselines from the run.
    update_baselines: bool = False
    #: Judge through the provider's batch API (True), online (False), or as `[judge] batch` says (None).
    judge_batch: bool | None = None
    #: Only these variants (names or `key=value`) of experiments with variants, and their baseline; empty: all.
    variants: list[str] = Field(default_factory=list)
    #: A discovered file that does not load stops every run (`cobalt run --ci`) instead of being skipped with a
    #: warning: in CI a file skipped is an evaluation silently not run.
    strict_loading: bool = False


class BaselineUpdate(BaseModel):
    """One no_regression gate's baseline file after `update_baselines`: written, or why not."""

    experiment: str
    run_id: str
    path: str
    written: bool
    reason: str | None = None
    #: How the new baseline measures differently from the one it replaced (dataset, evaluators), said with it.
    changes: list[str] = Field(default_factory=list)

    @property
    def message(self) -> str:
        if self.written:
            changed = f"; it measures differently from the baseline it replaced: {'; '.join(self.changes)}" \
                if self.changes else ""
            return f"baseline {self.path} updated from run {self.run_id} ({self.experiment}){changed}"
        return f"baseline {self.path} not updated: run {self.run_id} of {self.experiment!r} {self.reason}."


class RunOutcome(BaseModel):
    """The runs' reports, baselines written (with `update_baselines`) and warnings."""

    reports: list[ExperimentReport]
    baselines: list[BaselineUpdate] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Every gate of every run passed."""
        return all(r.passed for r in self.reports)


@dataclass(frozen=True)
class PreparedRuns:
    """The selected experiments' validated plans, and warnings about them (a threshold gating nothing)."""

    config: Config
    plans: list[RunPlan]
    options: RunOptions
    warnings: list[str]


def prepare_runs(config: Config, selection: Selection, options: RunOptions) -> PreparedRuns:
    """Select and validate every experiment before running any: a usage error means nothing runs."""
    request = FreshRun(concurrency=options.concurrency, tags=options.add_tags,
                       update_baselines=options.update_baselines, judge_batch=options.judge_batch)
    config.dagster.record_mode()  # a bad COBALT_DAGSTER_RECORD is a usage error before anything runs
    config.judge.batch_mode()  # and so is a bad COBALT_JUDGE_BATCH
    problems: list[str] = []
    unloaded: list[str] = []
    experiments = select_experiments(config, selection, problems, unloaded if options.strict_loading else None)
    if unloaded:
        raise FilesDidNotLoad(unloaded)
    check_variant_filter(experiments, options.variants)
    plans = [plan for exp in experiments
             for plan in variant_plans(exp, request, options.variants, partial(prepare, exp, config))]
    return PreparedRuns(config, plans, options, problems + unused_thresholds(config, plans))


def execute_runs(prepared: PreparedRuns, observer: Observer | None = None) -> RunOutcome:
    """Run the plans one after another; with `update_baselines`, then write their baselines."""
    plans, options = prepared.plans, prepared.options
    reports = [report for group in _groups(plans) for report in run_plans(group, observer, record=options.dagster)]
    outcome = RunOutcome(reports=reports)
    if options.update_baselines:
        outcome.baselines = [update for plan, report in zip(plans, reports, strict=True)
                             for update in write_baselines(plan, report)]
        if not any(isinstance(g, NoRegression) for plan in plans for g in plan.experiment.assertions):
            outcome.warnings.append("--update-baselines: none of the experiments run has a no_regression gate, "
                                    "so no baseline was written.")
    return outcome


def run_experiments(config: Config, selection: Selection, options: RunOptions,
                    observer: Observer | None = None) -> RunOutcome:
    """`prepare_runs` then `execute_runs`, their warnings together."""
    prepared = prepare_runs(config, selection, options)
    outcome = execute_runs(prepared, observer)
    outcome.warnings[:0] = prepared.warnings
    return outcome


def run_plan(plan: RunPlan, observer: Observer | None = None, *, record: bool = True) -> ExperimentReport:
    """One plan on the library engine, then recorded in Dagster as `[dagster] record` says (`record=False`:
    never, and the store notes it so that no record sensor does it later)."""
    mode = recording(plan, record)
    try:
        pause_point("before-run")  # tests: an interrupt after the checks, before the run's first row
    except KeyboardInterrupt:
        raise RunInterrupted(plan.run_id, "not started") from None
    report = run_engine(plan, observer)
    if mode == "inline":
        record_inline(plan.config, [report.id], [plan.experiment])
    return report


def run_plans(plans: list[RunPlan], observer: Observer | None = None, *, record: bool = True) -> list[ExperimentReport]:
    """`run_plan` for one plan; the plans of a run group (every variant) run at once, then are recorded."""
    if len(plans) == 1 and plans[0].group_id is None:
        return [run_plan(plans[0], observer, record=record)]
    modes = [recording(plan, record) for plan in plans]
    try:
        pause_point("before-run")
    except KeyboardInterrupt:
        raise RunInterrupted(plans[0].run_id, "not started") from None
    from ..run._group import run_group  # on use: a run without variants loads no run group

    reports = run_group(plans, observer)
    if "inline" in modes:
        record_inline(plans[0].config, [r.id for r in reports], [plans[0].experiment])
    return reports


def _groups(plans: list[RunPlan]) -> list[list[RunPlan]]:
    """Consecutive plans of one run group together; every other plan alone."""
    groups: list[list[RunPlan]] = []
    for plan in plans:
        if groups and plan.group_id is not None and groups[-1][0].group_id == plan.group_id:
            groups[-1].append(plan)
        else:
            groups.append([plan])
    return groups


def recording(plan: RunPlan, record: bool) -> RecordMode:
    """How the run of `plan` will be recorded in Dagster (`record=False`: `off`), noted in the store
    before it starts: an unrecorded run stays so, a resumed one is recorded again once finished."""
    mode: RecordMode = plan.config.dagster.record_mode() if record else "off"
    if mode == "off":
        plan.store.mark_in_dagster(plan.run_id, None, "skipped")
    elif isinstance(plan.request, ResumeRun):
        plan.store.forget_in_dagster(plan.run_id)
    return mode


def run_engine(plan: RunPlan, observer: Observer | None = None) -> ExperimentReport:
    """The library engine on one plan; Ctrl-C is a `RunInterrupted` naming the run."""
    try:
        return run_anywhere(execute(plan, observer))
    except KeyboardInterrupt as exc:
        # Ctrl-C may land after the run was stored completed (while it is reported): say it completed, not
        # that it waits for a --resume that would be refused
        if _stored_status(plan) == "completed":
            raise RunInterrupted(plan.run_id, "completed") from exc
        raise exc if isinstance(exc, RunInterrupted) else RunInterrupted(plan.run_id) from exc


def _stored_status(plan: RunPlan) -> str | None:
    try:
        return plan.store.run_status(plan.run_id)
    except CobaltError:  # the store's trouble is said elsewhere; the run reads as interrupted
        return None


def record_inline(config: Config, run_ids: list[str], experiments: list[Experiment]) -> None:
    """Record finished runs in the project's Dagster instance now (`[dagster] record = "inline"`); a
    failure is said on stderr and loses nothing: the runs stay for the record sensor."""
    from cobalt_dagster import print_unrecorded, record_runs

    try:
        record_runs(run_ids, config=config, experiments=experiments)
    except Exception as exc:
        print_unrecorded(_unrecorded_because(config, exc), run_ids)


def _unrecorded_because(config: Config, exc: Exception) -> str:
    """Why a recording failed, in one line: Dagster's storage errors carry whole SQL statements and their
    parameters, and SQLite says `disk I/O error` where the disk under it is full."""
    import shutil

    home = config.output_path / "dagster"
    first = (str(exc).strip().splitlines() or [""])[0][:200] or type(exc).__name__
    try:
        low = "disk I/O error" in first and shutil.disk_usage(home).free < 2**20
    except OSError:
        low = False
    return f"the disk is full at {home}" if disk_full(exc) is not None or low else scrub(first)


def write_baselines(plan: RunPlan, report: ExperimentReport) -> list[BaselineUpdate]:
    """Each no_regression gate's baseline file from this run, unless it failed a gate or did not complete
    (a baseline is never blessed by accident); a written one says how it measures differently from the
    one it replaced (fewer items, another judge prompt)."""
    gates = [g for g in plan.experiment.assertions if isinstance(g, NoRegression)]
    config, name = plan.config, plan.experiment.name
    if not report.passed or report.status != "completed":
        why = "it failed a gate" if report.status == "completed" else f"it is {report.status}"
        return [BaselineUpdate(experiment=name, run_id=report.id, path=str(g.path(config)), written=False,
                               reason=why) for g in gates]
    updates = []
    for gate in gates:
        before = gate.measured_with(config)
        changes = [] if before is None or report.identity is None else [
            c.text for c in measurement_changes(identity_changes(before, report.identity))]
        updates.append(BaselineUpdate(experiment=name, run_id=report.id, path=str(gate.update(report, config)),
                                      written=True, changes=changes))
    return updates
