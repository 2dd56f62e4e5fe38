"""A calibration for people: the same tables in the terminal (rich) and in Markdown (`export`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._numbers import UNKNOWN, fixed, interval, percent
from .calibration._metrics import SCALE
from .calibration._models import Calibration, ModelCalibration

if TYPE_CHECKING:
    from rich.console import Console

Table = tuple[list[str], list[list[str]]]

#: Disagreements listed per model in the terminal (Markdown lists up to `MARKDOWN_DISAGREEMENTS`).
TERMINAL_DISAGREEMENTS = 10
MARKDOWN_DISAGREEMENTS = 25


def _rate(value: float | None) -> str:
    return percent(value)


def _num(value: float | None, digits: int = 2, *, signed: bool = False) -> str:
    return fixed(value, digits, sign=signed)


def _kappa(c: ModelCalibration) -> str:
    if c.weighted_kappa is None:
        return UNKNOWN
    ci = f" {interval(c.kappa_ci_low, c.kappa_ci_high)}" if c.kappa_ci_low is not None else ""
    return f"{fixed(c.weighted_kappa, 2)}{ci}"


def _rows(cal: Calibration) -> list[ModelCalibration]:
    return [*cal.models.values(), *([cal.panel] if cal.panel else [])]


def summary_table(cal: Calibration) -> Table:
    """One row per model, then the panel."""
    header = ["model", "graded", "exact", "within ±1", "MAE", "bias", "kappa [95% CI]", "top label", "Spearman",
              "consistent", "verdict"]
    rows = []
    for c in _rows(cal):
        top = "–" if c.majority_share is None else f"{c.majority_label:+d}: {percent(c.majority_share)}"
        consistent = "–" if c.self_consistency is None else (
            f"{percent(c.self_consistency)} (sd {fixed(c.mean_stddev, 2)})")
        graded = f"{c.coverage.graded}/{c.coverage.attempted}" + (f" ({c.coverage.errors} errors)"
                                                                   if c.coverage.errors else "")
        band = c.verdict.band or "–"
        rows.append([c.model, graded, _rate(c.exact_match_rate), _rate(c.within_one_rate),
                     _num(c.mean_absolute_error), _num(c.signed_bias, signed=True), _kappa(c), top,
                     _num(c.spearman), consistent, band + ("" if c.verdict.reliable or not c.verdict.band else "*")])
    return header, rows


def confusion_table(c: ModelCalibration) -> Table:
    """Rows the truth, columns the grade."""
    header = ["truth \\ grade", *(f"{label:+d}" for label in SCALE)]
    matrix = c.confusion or [[0] * len(SCALE) for _ in SCALE]
    rows = [[f"{label:+d}", *(str(n) if n else "·" for n in row)] for label, row in zip(SCALE, matrix, strict=True)]
    return header, rows


def disagreement_table(c: ModelCalibration, limit: int) -> Table:
    header = ["id", "iteration", "truth", "grade", "diff", "notes"]
    rows = [[d.id, str(d.iteration), f"{d.truth:+d}", f"{d.grade:+d}", f"{d.difference:+d}", d.notes]
            for d in c.disagreements[:limit]]
    return header, rows


def agreement_table(cal: Calibration) -> Table:
    header = ["models", "gradings", "exact", "within ±1", "kappa"]
    pairs = cal.agreement.pairs if cal.agreement else []
    return header, [[f"{p.model_a} vs {p.model_b}", str(p.units), _rate(p.exact_rate), _rate(p.within_one_rate),
                     _num(p.weighted_kappa)] for p in pairs]


def verdict_lines(cal: Calibration) -> list[str]:
    lines = [f"{c.model}: {c.verdict.text}" for c in _rows(cal)]
    if cal.agreement is not None:
        alpha = _num(cal.agreement.krippendorff_alpha)
        lines.append(f"Krippendorff's alpha (ordinal) across the models: {alpha} over {cal.agreement.units} gradings")
    return lines


# ------------------------------------------------------------------------------------------- Markdown


def _md_cell(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split()).replace("|", "\\|")
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def markdown_table(table: Table) -> str:
    header, rows = table
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_md_cell(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def calibration_markdown(cal: Calibration, *, title: str | None = None) -> str:
    """Every table of a calibration, as GitHub-flavoured Markdown."""
    head = title or f"Calibration of grader {cal.grader} #{cal.grader_hash[:12]}"
    parts = [f"#### {head}",
             f"{cal.samples} samples, {cal.labelled_samples} with a ground-truth score, {cal.iterations} "
             f"iteration{'s' if cal.iterations != 1 else ''} per model. Rates are over the usable gradings of "
             "labelled samples; * marks a verdict on fewer than 50 labelled samples.",
             markdown_table(summary_table(cal)), "\n".join(f"- {line}" for line in verdict_lines(cal))]
    if cal.agreement is not None:
        parts += ["##### Agreement between models", markdown_table(agreement_table(cal))]
    for c in _rows(cal):
        if c.pairs:
            parts += [f"##### {c.model}: confusion matrix", markdown_table(confusion_table(c))]
        if c.disagreements:
            shown = min(len(c.disagreements), MARKDOWN_DISAGREEMENTS)
            parts += [f"##### {c.model}: disagreements ({shown} of {len(c.disagreements)}, largest first)",
                      markdown_table(disagreement_table(c, MARKDOWN_DISAGREEMENTS))]
    return "\n\n".join(parts) + "\n"


# ------------------------------------------------------------------------------------------- terminal


def rich_table(table: Table, title: str | None = None, *, notes_column: bool = False) -> Any:
    from rich import box
    from rich.table import Table as RichTable

    header, rows = table
    out = RichTable(*header, title=title, box=box.SIMPLE_HEAD, title_justify="left", show_edge=False)
    if notes_column:
        out.columns[-1].overflow = "fold"
    for row in rows:
        out.add_row(*row)
    return out


def print_calibration(console: Console, cal: Calibration, *, previous: Sequence[str] = ()) -> None:
    """The summary table, verdicts, agreement, and per model the confusion matrix and top disagreements."""
    console.print(rich_table(summary_table(cal), f"Calibration of {cal.grader} #{cal.grader_hash[:12]} "
                                                 f"({cal.labelled_samples} labelled of {cal.samples} samples)"))
    for line in [*verdict_lines(cal), *previous]:
        console.print(f"  {line}")
    if cal.agreement is not None and cal.agreement.pairs:
        console.print(rich_table(agreement_table(cal), "Agreement between models"))
    for c in _rows(cal):
        if c.pairs:
            console.print(rich_table(confusion_table(c), f"{c.model}: confusion, truth (rows) x grade"))
        if c.disagreements:
            shown = min(len(c.disagreements), TERMINAL_DISAGREEMENTS)
            console.print(rich_table(disagreement_table(c, TERMINAL_DISAGREEMENTS),
                                     f"{c.model}: disagreements ({shown} of {len(c.disagreements)}, largest first)",
                                     notes_column=True))
