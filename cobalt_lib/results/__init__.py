"""A run's record and its analysis: the report models, statistics, results files, pairing and comparison.

The persistence of runs (the store, its journal, the exchange of Dagster's shards) is `cobalt_lib.store`."""

from __future__ import annotations

from ._compare import Comparison, EvaluatorDelta, compare_reports
from ._evaluation_identity import EvaluationIdentity, IdentityChange, identity_changes
from ._grid import GridCell, GridRow, VariantGrid, build_grid
from ._identity import content_hash, duplicate_ids, item_identity
from ._pairing import ItemPair, Unpaired, pair_items
from ._repeats import flaky_text, item_label, repeat_passed
from ._report import AssertionResult, EvalResult, Evaluation, ExperimentReport, ItemResult, ItemSpread, Stats, Summary
from ._results_file import read_results, results_filename, write_results
from ._rows import aggregate_rows, item_from_rows, output_row, run_row, score_rows, stats_from_row, verdict_rows
from ._spans import SpanRecord
from ._summary import run_summary

__all__ = [
    "AssertionResult",
    "Comparison",
    "EvalResult",
    "Evaluation",
    "EvaluationIdentity",
    "EvaluatorDelta",
    "ExperimentReport",
    "GridCell",
    "GridRow",
    "IdentityChange",
    "ItemPair",
    "ItemResult",
    "ItemSpread",
    "SpanRecord",
    "Stats",
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
    "output_row",
    "pair_items",
    "read_results",
    "repeat_passed",
    "results_filename",
    "run_row",
    "run_summary",
    "score_rows",
    "stats_from_row",
    "verdict_rows",
    "write_results",
]
