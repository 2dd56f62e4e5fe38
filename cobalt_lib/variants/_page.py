"""What the run-group page shows: the variant grid (as `cobalt compare --group`), and every variant's output for
each item side by side, items paired by identity as `compare` pairs them. The page's routes are the pages'
(`pages/_groups.py`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..results._report import ExperimentReport, ItemResult
from ..store._history import load_report
from ..store._store import Store
from ._figures import VariantGrid
from ._grid import variant_grid

if TYPE_CHECKING:
    from ..config._config import Config

#: Items per page of the side-by-side list (a report file holds up to `pages._groups.REPORT_ITEMS`).
GROUP_ITEMS_PER_PAGE = 25


def group_view(config: Config, ref: str, *, offset: int = 0, limit: int = GROUP_ITEMS_PER_PAGE,
               item: int | None = None) -> dict[str, Any]:
    """The grid, and `limit` items from `offset` (or the one item at dataset index `item`), each with every
    variant's outputs and scores."""
    grid = variant_grid(config, ref)
    store = Store.for_config(config)
    reports = {row.run_id: load_report(store, row.run_id) for row in grid.rows}
    rows = side_by_side(grid, reports)
    if item is not None:
        rows = [r for r in rows if r["index"] == item]
        if not rows:
            from .._errors import ConfigError

            raise ConfigError(f"Run group {grid.group_id} has no item {item}.")
    total = len(rows)
    offset = max(0, min(offset, max(total - 1, 0)))
    return {"grid": grid, "items": rows[offset:offset + limit], "total": total, "offset": offset, "limit": limit,
            "single": item is not None}


def side_by_side(grid: VariantGrid, reports: dict[str, ExperimentReport]) -> list[dict[str, Any]]:
    """One row per item of the baseline variant (by dataset index), with each variant's repeats of that item
    (matched by the item's identity); `differs`: the variants' outputs or scores are not all alike."""
    by_variant = [(row.variant, _by_identity(reports[row.run_id].items)) for row in grid.rows]
    base = reports[grid.rows[0].run_id]
    seen: set[str] = set()
    rows = []
    for first in base.items:
        key = first.item_id or str(first.index)
        if key in seen:
            continue
        seen.add(key)
        cells = [{"variant": name, "repeats": items.get(key, [])} for name, items in by_variant]
        signatures = {_signature(items.get(key, [])) for _, items in by_variant}
        rows.append({"index": first.index, "item_id": first.item_id, "input": first.input, "item": first.item,
                     "cells": cells, "differs": len(signatures) > 1})
    return rows


def _signature(repeats: list[ItemResult]) -> str:
    """What an item's repeats in one variant answered and scored: equal across variants, the item does not differ."""
    return repr([(i.status, i.output, sorted((n, e.score) for n, e in i.evaluations.items())) for i in repeats])


def _by_identity(items: Any) -> dict[str, list[ItemResult]]:
    found: dict[str, list[ItemResult]] = {}
    for item in items:
        found.setdefault(item.item_id or str(item.index), []).append(item)
    return found
