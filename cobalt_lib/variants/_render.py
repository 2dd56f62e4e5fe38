"""The variant grid as text: a rich table for the terminal and Markdown for summaries and reports."""

from __future__ import annotations

from collections.abc import Sequence

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..render._console import plain_console
from ..render._units import delta, delta_interval, duration, money, percent, score
from ..results._report import ExperimentReport
from ._figures import GridCell, GridRow, VariantGrid, build_grid

#: The style of each verdict word in a terminal cell.
_STYLES = {"improved": "green", "regressed": "red", "no significant change": "", "not comparable": "dim",
           "baseline": "bold"}


def cell_text(cell: GridCell, *, lines: bool = False) -> str:
    """`0.850 (baseline)`, or `0.900 better  +0.050 [+0.010, +0.090]` (`lines`: the difference on a second line)."""
    if cell.verdict == "baseline":
        return f"{score(cell.mean)} (baseline)"
    interval = "" if cell.ci_low is None else f" {delta_interval(cell.ci_low, cell.ci_high)}"
    return f"{score(cell.mean)} {cell.word}{chr(10) if lines else '  '}{delta(cell.delta)}{interval}"


def grid_console(console: Console, *, ci: bool = False) -> Console:
    """Where a grid prints: `console` in a terminal (it wraps to fit); elsewhere (a log, a pipe) the same file
    at a width that keeps each row on its lines, as a log has no width to fit."""
    if console.is_terminal:
        return console
    return plain_console(file=console.file, width=max(console.width, 240), no_color=ci, soft_wrap=False)


def frontier_text(row: GridRow) -> str:
    return "◆ frontier" if row.frontier else "cost unknown" if row.frontier is None else ""


def gates_text(row: GridRow) -> str:
    if row.status != "completed":
        return row.status
    return "pass" if row.passed else f"FAIL: {', '.join(row.failed_gates)}"


def grid_table(grid: VariantGrid, *, ci: bool = False) -> Table:
    """Variants down, evaluators across, then cost, latency, the frontier mark and the gates."""
    table = Table(box=box.ASCII if ci else box.SIMPLE_HEAD, show_edge=False, pad_edge=False, show_lines=True,
                  title=f"{grid.experiment}: {len(grid.rows)} variants against {grid.baseline} (group {grid.group_id})",
                  title_justify="left")
    table.add_column("variant")
    for name in grid.evaluators:
        table.add_column(name, justify="right")
    for column in ("cost/item", "latency p50", "p95", "frontier", "gates"):
        table.add_column(column, justify="left" if column in ("frontier", "gates") else "right")
    for row in grid.rows:
        cells = [Text(cell_text(c, lines=True), style=_STYLES.get(c.verdict, "")) for c in row.cells]
        table.add_row(row.variant, *cells, money(row.cost_per_item), duration(row.latency_p50_ms),
                      duration(row.latency_p95_ms), frontier_text(row), gates_text(row))
    return table


def grid_notes(grid: VariantGrid) -> list[str]:
    """What the grid's numbers mean, under it."""
    return [f"each cell: the variant's mean, then variant - {grid.baseline} over paired items with its "
            f"{percent(grid.confidence)} paired bootstrap interval and verdict (as `cobalt compare`)",
            f"{grid.frontier_rule}; quality: {grid.quality}"]


def group_markdowns(reports: Sequence[ExperimentReport]) -> list[str]:
    """The grid of each run group among `reports` (all of a group's runs being there), as Markdown."""
    groups: dict[str, list[ExperimentReport]] = {}
    for report in reports:
        if report.group_id is not None:
            groups.setdefault(report.group_id, []).append(report)
    return [grid_markdown(build_grid(group_id, members)) for group_id, members in groups.items()]


def grid_markdown(grid: VariantGrid) -> str:
    """The grid as a Markdown table (GitHub summaries, the Markdown export)."""
    head = ["variant", *grid.evaluators, "cost/item", "latency p50", "p95", "frontier", "gates"]
    lines = [f"### {grid.experiment}: variants against {grid.baseline}", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in grid.rows:
        cells = [cell_text(c).replace("|", "\\|") for c in row.cells]
        values = [row.variant, *cells, money(row.cost_per_item), duration(row.latency_p50_ms),
                  duration(row.latency_p95_ms), frontier_text(row), gates_text(row)]
        lines.append("| " + " | ".join(values) + " |")
    return "\n".join([*lines, "", *(f"_{note}_" for note in grid_notes(grid))]) + "\n"


def grid_summary(grid: VariantGrid) -> str:
    """One line per variant: each evaluator's cell, cost, frontier and gates."""
    lines = [f"{grid.experiment}: {len(grid.rows)} variants against {grid.baseline} (group {grid.group_id})"]
    for row in grid.rows:
        cells = "; ".join(f"{c.evaluator} {cell_text(c)}" for c in row.cells)
        extra = ", ".join(x for x in (frontier_text(row), gates_text(row)) if x)
        lines.append(f"{row.variant} (run {row.run_id}): {cells}; cost/item {money(row.cost_per_item)}; {extra}")
    return "\n".join(lines)
