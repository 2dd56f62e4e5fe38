"""A judge's calibration against human labels, for people: the terminal tables of `cobalt calibrate`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..render._units import decimal, interval, percent, signed
from .calibration._judge import Figure, JudgeCalibration

if TYPE_CHECKING:
    from rich.console import Console

#: Disagreements listed in the terminal.
SHOWN_DISAGREEMENTS = 10


def figure_text(f: Figure) -> str:
    """`71% [52%, 85%]`, `0.64 [0.41, 0.80]`, `bias +0.20 [...]`; without a value, why not."""
    if f.value is None and f.why:
        return f"– ({f.why})"
    if f.kind == "rate":
        return f"{percent(f.value)} {interval(f.low, f.high, rate=True)}".rstrip()
    value = signed(f.value) if f.name == "bias" else decimal(f.value)
    return f"{value} {interval(f.low, f.high)}".rstrip()


def headline(cal: JudgeCalibration) -> str:
    """`helpful (llm-judge, 0..1) #1a2b3c4d5e6f on openai/gpt-4o-mini, run r-1: 23 labelled items`."""
    model = f" on {cal.model}" if cal.model else ""
    return (f"{cal.evaluator} ({cal.evaluator_type}, scale {cal.scale}) #{cal.prompt_hash[:12]}{model}, run "
            f"{cal.run_id}: {cal.labelled} labelled of {cal.items} scored items ({cal.pairs} verdicts)")


def print_judge_calibration(console: Console, cal: JudgeCalibration, previous: str | None = None) -> None:
    from rich import box
    from rich.table import Table

    console.print(f"Calibration of {headline(cal)}")
    figures = Table("figure", "value [95% interval]", "interval", box=box.SIMPLE_HEAD, show_edge=False)
    for f in cal.figures:
        figures.add_row(f.title, figure_text(f), f.how)
    console.print(figures)
    console.print(f"  verdict: {cal.verdict.text}")
    if cal.needed:
        console.print(f"  progress: {cal.labelled} of {cal.labelled + cal.needed} labels a reliable calibration "
                      f"needs ({cal.needed} more)")
    if previous:
        console.print(f"  {previous}")
    if cal.human is not None:
        from .calibration._people import ceiling_lines

        console.print("Human ceiling (agreement between the people who labelled):")
        for line in ceiling_lines(cal.human):
            console.print(f"  {line}")
    if cal.pairs:
        matrix = Table("label \\ verdict", *cal.categories, box=box.SIMPLE_HEAD, show_edge=False,
                       title="Confusion: label x verdict", title_justify="left")
        for name, row in zip(cal.categories, cal.confusion, strict=True):
            matrix.add_row(name, *(str(n) if n else "·" for n in row))
        console.print(matrix)
    if cal.disagreements:
        shown = min(len(cal.disagreements), SHOWN_DISAGREEMENTS)
        table = Table("item", "label", "verdict", "judge's reason", "note", box=box.SIMPLE_HEAD, show_edge=False,
                      title=f"Disagreements ({shown} of {len(cal.disagreements)}, largest first)",
                      title_justify="left")
        table.columns[3].overflow = table.columns[4].overflow = "fold"
        for d in cal.disagreements[:SHOWN_DISAGREEMENTS]:
            item = f"#{d.item_index}" + (f":{d.run_index}" if d.run_index else "") + f" {d.item_id}"
            table.add_row(item, d.label, d.judged, d.reason, d.note)
        console.print(table)
