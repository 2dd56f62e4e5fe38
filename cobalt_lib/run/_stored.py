"""Finishing a run from what its stages stored: the items streamed from the store, never all in memory."""

from __future__ import annotations

from typing import Literal

from ..results._report import ExperimentReport, ItemResult
from ..store._history import CHUNK_ITEMS, stored_item_batches
from ._execute import finish
from ._lease import lease
from ._plan import RunPlan
from ._stages import FinishedItems


def finish_from_store(plan: RunPlan, status: Literal["completed", "incomplete"], *, worked_ms: float | None = None,
                      chunk: int = CHUNK_ITEMS) -> ExperimentReport:
    """Stages 3 and 4 of run `plan.run_id` over the outputs and scores stored for it, then `finish` as
    the library path does (aggregates, verdicts, results JSON, run row).

    The rows are read `chunk` items at a time into a `FinishedItems` spill on disk, so memory stays flat
    in the run's size, and the run's lease is renewed meanwhile. Each item's evaluations are in the
    plan's evaluator order, as the library path stores them in its results JSON.
    """
    with lease(plan.store, plan.run_id):
        items = FinishedItems(plan.config.output_path / "results")
        order = [e.name for e in plan.evaluators]
        for batch in stored_item_batches(plan.store, plan.run_id, chunk):
            for item in batch:
                items.append(_in_order(item, order))
        return finish(plan, items, status, worked_ms=worked_ms)


def _in_order(item: ItemResult, order: list[str]) -> ItemResult:
    """The item with its evaluations in `order` (the store gives them by name); others after, as stored."""
    stored = item.evaluations
    ordered = {name: stored[name] for name in order if name in stored}
    item.evaluations = ordered | {name: ev for name, ev in stored.items() if name not in ordered}
    return item
