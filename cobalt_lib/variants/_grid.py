"""A run group's grid: every variant against the baseline variant, as the terminal, the pages, the report and
MCP show it.

`cobalt run` of an experiment with variants plans every variant (`experiments._variants.variant_plans`: those
`--variant` keeps, and always the baseline), runs them together (`run._group.run_group`: one agent limit, one
judge and cache) and stores one run per variant under a run group; `variant_grid` reads the group back.
"""

from __future__ import annotations

from ..config._config import Config
from ..ops._refs import store_with_runs
from ..store._history import load_report
from ._figures import VariantGrid, build_grid


def variant_grid(config: Config, ref: str = "latest", *, experiment: str | None = None,
                 quality: str | None = None) -> VariantGrid:
    """The grid of the run group `ref` (its id, a prefix, `latest`, or the id of one of its runs)."""
    store = store_with_runs(config, "run groups")
    group_id = store.resolve_group(ref, experiment)
    reports = [load_report(store, row["run_id"], run=row) for row in store.group_runs(group_id)]
    return build_grid(group_id, reports, quality=quality)
