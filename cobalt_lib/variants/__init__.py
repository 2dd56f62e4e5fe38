"""The variants wing: a run group's grid (every variant against the baseline variant, as the terminal, the
pages, the report and MCP show it), its renderers, the group's terminal reporter and its page's view. The
`cobalt compare --group` command, the group pages and the `cobalt_variants` MCP tool are thin adapters over
the names here.

    grid = variant_grid(config, "latest")        # VariantGrid (also `cobalt_lib.results.VariantGrid`): rows, cells
    print(grid_markdown(grid))                    # the grid as the CI summary shows it
    view = group_view(config, "latest")           # the group page's grid and items side by side

`_figures` is the grid's figures (also `cobalt_lib.results.VariantGrid`, `build_grid`). A variant's declaration
and its run belong to the engine, which every run goes through: `experiments._variants` (`variants=`,
`variant_plans`), `run._variant`, `run._group` (a group's runs at once), `store._store_variants`,
`links._variant_tags`. Each name here loads its module on first use: a run of an experiment without variants
loads none of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from ._figures import GridCell, GridRow, VariantGrid, build_grid
    from ._grid import variant_grid
    from ._page import GROUP_ITEMS_PER_PAGE, group_view, side_by_side
    from ._render import (
        cell_text,
        frontier_text,
        gates_text,
        grid_console,
        grid_markdown,
        grid_notes,
        grid_summary,
        grid_table,
        group_markdowns,
    )
    from ._reporter import GroupReporter

#: Where each name lives; `__getattr__` imports its module on first use.
_EXPORTS: dict[str, str] = {name: module for module, names in {
    "._figures": "GridCell GridRow VariantGrid build_grid",
    "._grid": "variant_grid",
    "._page": "GROUP_ITEMS_PER_PAGE group_view side_by_side",
    "._render": "cell_text frontier_text gates_text grid_console grid_markdown grid_notes grid_summary grid_table "
        "group_markdowns",
    "._reporter": "GroupReporter",
}.items() for name in names.split()}

__all__ = [
    "GROUP_ITEMS_PER_PAGE",
    "GridCell",
    "GridRow",
    "GroupReporter",
    "VariantGrid",
    "build_grid",
    "cell_text",
    "frontier_text",
    "gates_text",
    "grid_console",
    "grid_markdown",
    "grid_notes",
    "grid_summary",
    "grid_table",
    "group_markdowns",
    "group_view",
    "side_by_side",
    "variant_grid",
]


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS, __all__, globals())
