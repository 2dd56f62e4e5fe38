"""What the CLI, the MCP server and Dagster call: plain functions over the project, each returning
pydantic models (or report models) and raising `CobaltError`s. Nothing here prints; warnings are data.

    selection = Selection(name_filter="qa")
    prepared = prepare_runs(config, selection, RunOptions(dagster=False))   # every check, before any run
    outcome = execute_runs(prepared, observer)                              # RunOutcome: reports, warnings
    entries = run_history(config, experiment="qa")                          # list[HistoryEntry]
    result = compare_runs(config, "previous", "latest")                     # CompareOutcome
    shown = show_run(config, "latest", "3", failures=True)                  # ShownRun: one item's records
    rows = run_query(config, "SELECT * FROM runs", limit=20)                # QueryResult (read-only snapshot)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from ..links import (
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
    from ._clean import Cleanup, clean_up, plan_cleanup
    from ._compare import CompareOutcome, compare_runs, regression_reasons
    from ._details import ChangedItem, ComparedRuns, RunDetails, compare_with_reasons, report_details, run_details
    from ._evaluate import Evaluated, evaluate_output
    from ._experiments import ExperimentCatalog, ExperimentInfo, describe_experiments
    from ._export import Export, export_format, export_run
    from ._fresh import in_fresh_process
    from ._generate import Generated, generate_experiment, project_path
    from ._history import HistoryEntry, check_stored_experiment, history_entry, run_duration_ms, run_history
    from ._project import RunRequested, config_warnings, request_experiment
    from ._query import QueryResult, TableInfo, check_select, run_query, store_schema
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

#: Where each name lives; `__getattr__` imports its module on first use, so a command loads the use cases
#: it calls and no others. Grading's use cases are the grading wing's (`cobalt_lib.grading`), a run group's
#: grid the variants wing's (`cobalt_lib.variants`).
_EXPORTS: dict[str, str] = {name: module for module, names in {
    "..links": "compare_page_url dagster_asset_url dagster_check_name dagster_check_names dagster_check_url "
        "dagster_name dagster_run_url dagster_url pages_url run_page_url trends_page_url",
    "._clean": "Cleanup clean_up plan_cleanup",
    "._compare": "CompareOutcome compare_runs regression_reasons",
    "._details": "ChangedItem ComparedRuns RunDetails compare_with_reasons report_details run_details",
    "._evaluate": "Evaluated evaluate_output",
    "._experiments": "ExperimentCatalog ExperimentInfo describe_experiments",
    "._export": "Export export_format export_run",
    "._fresh": "in_fresh_process",
    "._generate": "Generated generate_experiment project_path",
    "._history": "HistoryEntry check_stored_experiment history_entry run_duration_ms run_history",
    "._project": "RunRequested config_warnings request_experiment",
    "._query": "QueryResult TableInfo check_select run_query store_schema",
    "._refs": "RunPair RunRef resolve_pair resolve_ref store_with_runs",
    "._resume": "Rescored rerun_failed rescore_run resume_run",
    "._run": "BaselineUpdate PreparedRuns RunOptions RunOutcome execute_runs prepare_runs run_experiments "
        "run_plan write_baselines",
    "._select": "Selection resume_scope select_experiments unused_thresholds",
    "._show": "ShownRun is_failure show_run",
}.items() for name in names.split()}

__all__ = [
    "BaselineUpdate",
    "ChangedItem",
    "Cleanup",
    "CompareOutcome",
    "ComparedRuns",
    "Evaluated",
    "ExperimentCatalog",
    "ExperimentInfo",
    "Export",
    "Generated",
    "HistoryEntry",
    "PreparedRuns",
    "QueryResult",
    "Rescored",
    "RunDetails",
    "RunOptions",
    "RunOutcome",
    "RunPair",
    "RunRef",
    "RunRequested",
    "Selection",
    "ShownRun",
    "TableInfo",
    "check_select",
    "check_stored_experiment",
    "clean_up",
    "compare_page_url",
    "compare_runs",
    "compare_with_reasons",
    "config_warnings",
    "dagster_asset_url",
    "dagster_check_name",
    "dagster_check_names",
    "dagster_check_url",
    "dagster_name",
    "dagster_run_url",
    "dagster_url",
    "describe_experiments",
    "evaluate_output",
    "execute_runs",
    "export_format",
    "export_run",
    "generate_experiment",
    "history_entry",
    "in_fresh_process",
    "is_failure",
    "pages_url",
    "plan_cleanup",
    "prepare_runs",
    "project_path",
    "regression_reasons",
    "report_details",
    "request_experiment",
    "rerun_failed",
    "rescore_run",
    "resolve_pair",
    "resolve_ref",
    "resume_run",
    "resume_scope",
    "run_details",
    "run_duration_ms",
    "run_experiments",
    "run_history",
    "run_page_url",
    "run_plan",
    "run_query",
    "select_experiments",
    "show_run",
    "store_schema",
    "store_with_runs",
    "trends_page_url",
    "unused_thresholds",
    "write_baselines",
]


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS, __all__, globals())
