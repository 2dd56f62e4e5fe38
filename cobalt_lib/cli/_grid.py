"""`cobalt compare --group`: a run group's variants x evaluators grid against its baseline variant."""

from __future__ import annotations

import sys

import typer

from .._errors import ConfigError
from ._common import print_json, project_config


def compare_group(group: str | None, runs: tuple[str | None, str | None], *, experiment: str | None,
                  quality: str | None, json_output: bool, markdown: bool, fail_on_regression: bool) -> None:
    """Print the grid of run group `group`; with `fail_on_regression`, exit 1 when a variant's cell is worse."""
    from ..render._console import plain_console
    from ..variants import grid_console, grid_markdown, grid_notes, grid_table, variant_grid

    if group is None:
        raise ConfigError("--quality ranks the variants of a run group: give the group with --group GROUP.")
    if any(runs):
        raise ConfigError("--group compares the variants of one run group: give either --group or runs A and B.")
    grid = variant_grid(project_config(), group, experiment=experiment, quality=quality)
    if json_output:
        print_json(grid.model_dump(mode="json"))
    elif markdown:
        typer.echo(grid_markdown(grid), nl=False)
    else:
        console = grid_console(plain_console(soft_wrap=True))
        console.print(grid_table(grid))
        for note in grid_notes(grid):
            console.print(note, style="dim")
    worse = [f"{row.variant}: {cell.evaluator} worse than {grid.baseline}" for row in grid.rows
             for cell in row.cells if cell.verdict == "regressed"]
    if fail_on_regression and worse:
        print(f"{'; '.join(worse)} (--fail-on-regression)", file=sys.stderr)
        raise typer.Exit(1)
