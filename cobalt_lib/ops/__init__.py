"""What the CLI, the MCP server and Dagster call: plain functions over the project, each returning
pydantic models (or report models) and raising `CobaltError`s. Nothing here prints; warnings are data.

    selection = Selection(name_filter="qa")
    prepared = prepare_runs(config, selection, RunOptions(dagster=False))   # every check, before any run
    outcome = execute_runs(prepared, observer)                              # RunOutcome: reports, warnings
    entries = run_history(config, experiment="qa")                          # list[HistoryEntry]
    result = compare_runs(config, "previous", "latest")                     # CompareOutcome
    shown = show_run(config, "latest", "3", failures=True)                  # ShownRun: one item's records
    graded = grade(config, GradeOptions(input=..., grader=..., models=[...]))  # GradeOutcome: results, calibration
"""

from __future__ import annotations

from ._clean import Cleanup, clean_up, plan_cleanup
from ._compare import CompareOutcome, compare_runs, regression_reasons
from ._export import Export, export_format, export_run
from ._grade import GradeOptions, GradeOutcome, GradeResult, grade
from ._history import HistoryEntry, check_stored_experiment, history_entry, run_duration_ms, run_history
from ._links import (
    compare_page_url,
    dagster_asset_url,
    dagster_check_name,
    dagster_check_names,
    dagster_check_url,
    dagster_name,
    dagster_run_url,
    dagster_url,
    pages_url,
    run_page_url,
    trends_page_url,
)
from ._project import RunRequested, config_warnings, request_experiment
from ._refs import RunPair, RunRef, resolve_pair, resolve_ref, store_with_runs
from ._resume import Rescored, rerun_failed, rescore_run, resume_run
from ._run import (
    BaselineUpdate,
    PreparedRuns,
    RunOptions,
    RunOutcome,
    execute_runs,
    prepare_runs,
    run_experiments,
    run_plan,
    write_baselines,
)
from ._select import Selection, resume_scope, select_experiments, unused_thresholds
from ._show import ShownRun, is_failure, show_run

__all__ = [
    "BaselineUpdate",
    "Cleanup",
    "CompareOutcome",
    "Export",
    "GradeOptions",
    "GradeOutcome",
    "GradeResult",
    "HistoryEntry",
    "PreparedRuns",
    "Rescored",
    "RunOptions",
    "RunOutcome",
    "RunPair",
    "RunRef",
    "RunRequested",
    "Selection",
    "ShownRun",
    "check_stored_experiment",
    "clean_up",
    "compare_page_url",
    "compare_runs",
    "config_warnings",
    "dagster_asset_url",
    "dagster_check_name",
    "dagster_check_names",
    "dagster_check_url",
    "dagster_name",
    "dagster_run_url",
    "dagster_url",
    "execute_runs",
    "export_format",
    "export_run",
    "grade",
    "history_entry",
    "is_failure",
    "pages_url",
    "plan_cleanup",
    "prepare_runs",
    "regression_reasons",
    "request_experiment",
    "rerun_failed",
    "rescore_run",
    "resolve_pair",
    "resolve_ref",
    "resume_run",
    "resume_scope",
    "run_duration_ms",
    "run_experiments",
    "run_history",
    "run_page_url",
    "run_plan",
    "select_experiments",
    "show_run",
    "store_with_runs",
    "trends_page_url",
    "unused_thresholds",
    "write_baselines",
]
