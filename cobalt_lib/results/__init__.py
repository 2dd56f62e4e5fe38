"""A run's data: the report models, statistics, the DuckDB store, results files, history and comparison."""

from __future__ import annotations

from ._compare import Comparison, EvaluatorDelta, compare_reports
from ._evaluation_identity import EvaluationIdentity, IdentityChange, identity_changes
from ._exchange import Exchange
from ._grid import GridCell, GridRow, VariantGrid, build_grid
from ._history import load_report, resolve_run, stored_item_batches, stored_items
from ._identity import content_hash, duplicate_ids, item_identity
from ._pairing import ItemPair, Unpaired, pair_items
from ._repeats import flaky_text, item_label, repeat_passed
from ._report import AssertionResult, EvalResult, Evaluation, ExperimentReport, ItemResult, ItemSpread, Stats, Summary
from ._results_file import read_results, results_filename, write_results
from ._rows import aggregate_rows, item_from_rows, output_row, run_row, score_rows, stats_from_row, verdict_rows
from ._spans import SpanRecord
from ._store import TABLES, Store
from ._summary import run_summary
from ._writer import BatchWriter

__all__ = [
    "TABLES",
    "AssertionResult",
    "BatchWriter",
    "Comparison",
    "EvalResult",
    "Evaluation",
    "EvaluationIdentity",
    "EvaluatorDelta",
    "Exchange",
    "ExperimentReport",
    "GridCell",
    "GridRow",
    "IdentityChange",
    "ItemPair",
    "ItemResult",
    "ItemSpread",
    "SpanRecord",
    "Stats",
    "Store",
    "Summary",
    "Unpaired",
    "VariantGrid",
    "aggregate_rows",
    "build_grid",
    "compare_reports",
    "content_hash",
    "duplicate_ids",
    "flaky_text",
    "identity_changes",
    "item_from_rows",
    "item_identity",
    "item_label",
    "load_report",
    "output_row",
    "pair_items",
    "read_results",
    "repeat_passed",
    "resolve_run",
    "results_filename",
    "run_row",
    "run_summary",
    "score_rows",
    "stats_from_row",
    "stored_item_batches",
    "stored_items",
    "verdict_rows",
    "write_results",
]
