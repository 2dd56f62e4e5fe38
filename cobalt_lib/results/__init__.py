"""A run's record and its analysis: the report models, statistics, results files, pairing and comparison.
The persistence of runs (the store, its journal, the exchange of Dagster's shards) is `cobalt_lib.store`.

Each name is imported on first use (`__getattr__`): a run needs a few of these modules, and importing a
module of the package runs this file, which would otherwise build every model of every one of them
(variant grids, evaluation identities, comparisons...) in every process that runs anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from ..variants._figures import GridCell, GridRow, VariantGrid, build_grid
    from ._compare import Comparison, EvaluatorDelta, compare_reports
    from ._evaluation_identity import EvaluationIdentity, IdentityChange, identity_changes
    from ._identity import content_hash, duplicate_ids, item_identity
    from ._pairing import ItemPair, Unpaired, pair_items
    from ._repeats import flaky_text, item_label, repeat_passed
    from ._report import (
        AssertionResult,
        EvalResult,
        Evaluation,
        ExperimentReport,
        ItemResult,
        ItemSpread,
        Stats,
        Summary,
    )
    from ._results_file import read_results, results_filename, write_results
    from ._rows import aggregate_rows, item_from_rows, output_row, run_row, score_rows, stats_from_row, verdict_rows
    from ._spans import SpanRecord
    from ._summary import run_summary

#: Where each public name lives.
_EXPORTS: dict[str, str] = {name: module for module, names in {
    "._compare": "Comparison EvaluatorDelta compare_reports",
    "._evaluation_identity": "EvaluationIdentity IdentityChange identity_changes",
    # a run group's grid is the variants wing's; its names stay here too, as they always were
    "..variants._figures": "GridCell GridRow VariantGrid build_grid",
    "._identity": "content_hash duplicate_ids item_identity",
    "._pairing": "ItemPair Unpaired pair_items",
    "._repeats": "flaky_text item_label repeat_passed",
    "._report": "AssertionResult EvalResult Evaluation ExperimentReport ItemResult ItemSpread Stats Summary",
    "._results_file": "read_results results_filename write_results",
    "._rows": "aggregate_rows item_from_rows output_row run_row score_rows stats_from_row verdict_rows",
    "._spans": "SpanRecord",
    "._summary": "run_summary",
}.items() for name in names.split()}

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


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS, __all__, globals())
