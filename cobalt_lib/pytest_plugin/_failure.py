"""What a failed experiment test says: its failed gates, each evaluator's values and the worst items."""

from __future__ import annotations

import heapq
import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..render._export import pass_marks
from ..render._units import count, percent, score
from ..results._direction import lower_is_better
from ..results._repeats import item_label
from ..results._report import Evaluation, ExperimentReport, ItemResult, Stats

#: Items shown under "worst items", and how much of an input, output or reason each line shows.
WORST_ITEMS = 5
TEXT_LIMIT = 120


class ExperimentFailed(AssertionError):
    """An experiment's run did not pass (a gate failed, or the run did not complete)."""

    def __init__(self, report: ExperimentReport) -> None:
        self.report = report
        super().__init__(explain(report))


class ItemFailed(AssertionError):
    """One dataset item (items mode) failed: its agent call, an evaluator's error or a pass mark."""


def run_property(report: ExperimentReport) -> tuple[str, str]:
    """The user property a test notes its run with (the plugin lists the session's runs from them)."""
    verdict = "passed" if report.passed else ("failed" if report.status == "completed" else report.status)
    return "cobalt_run", "|".join([report.name, report.id, verdict, report.results_path or ""])


def explain(report: ExperimentReport, *, worst: int = WORST_ITEMS) -> str:
    """The failure message of a run: its verdict, the failed gates, the evaluators' values, the worst items."""
    failed = [a for a in report.assertions if not a.passed]
    lines = [_headline(report, len(failed))]
    if failed:
        lines.append("failed gates:")
        lines += [f"  {a.name}: {a.message}" if a.message else f"  {a.name}" for a in failed]
    if report.summary.scores:
        lines.append("evaluators:")
        lines += [f"  {name}: {_stats(stats)}" for name, stats in report.summary.scores.items()]
    shown = worst_items(report.items, worst)
    if shown:
        lines.append(f"worst items ({len(shown)} shown):")
        marks = pass_marks(report)
        repeats = 1 + max((i.run_index for i in shown), default=0)
        for item in shown:
            lines += _item_lines(item, marks, repeats)
    if report.results_path:
        lines.append(f"results: {report.results_path}")
    return "\n".join(lines)


def _headline(report: ExperimentReport, failed: int) -> str:
    run = f"run {report.id}"
    if report.status != "completed":
        return f"cobalt experiment {report.name!r}: {run} is {report.status}; it has not passed."
    return (f"cobalt experiment {report.name!r} failed {failed} of {count(len(report.assertions), 'gate')} "
            f"({run}, {count(report.summary.total_items, 'item')}).")


def _stats(stats: Stats) -> str:
    parts = [f"mean {score(stats.avg)}", f"min {score(stats.min)}", f"p50 {score(stats.p50)}",
             f"max {score(stats.max)}", f"{stats.count} scored"]
    if stats.pass_rate is not None:
        parts.append(f"pass rate {percent(stats.pass_rate)}")
    if stats.errors:
        parts.append(count(stats.errors, "eval-error"))
    return ", ".join(parts)


def worst_items(items: Iterable[ItemResult], limit: int = WORST_ITEMS) -> list[ItemResult]:
    """The `limit` worst items, worst first: failed agent calls, eval-errors, items below a pass mark, then the
    lowest mean score; an item that scored full marks on every evaluator is never among them."""
    shown = (item for item in items if _badness(item) < (3, 1.0))
    return heapq.nsmallest(limit, shown, key=_badness)


def _badness(item: ItemResult) -> tuple[int, float]:
    if item.status != "ok":
        return (0, 0.0)
    evaluations = item.evaluations.values()
    if any(ev.status != "ok" for ev in evaluations):
        return (1, 0.0)
    scores = [ev.score for ev in evaluations if ev.score is not None]
    mean = sum(scores) / len(scores) if scores else 0.0
    return (2 if any(ev.passed is False for ev in evaluations) else 3, mean)


def _item_lines(item: ItemResult, marks: Mapping[str, Any], repeats: int) -> list[str]:
    lines = [f"  #{item_label(item.index, item.run_index, repeats)} [{item.item_id}] input: {_text(item.input)}"]
    lines += ["    " + line for line in item_problems(item, marks, everything=True)]
    return lines


def item_problems(item: ItemResult, marks: Mapping[str, Any], *, everything: bool = False) -> list[str]:
    """One line per thing wrong with the item (its agent call, each evaluator that errored or fell below its
    pass mark); with `everything`, every evaluator's score too, and the output."""
    if item.status != "ok":
        return [f"the agent call {item.status}: {_text(item.error or 'no output')}"]
    lines = [f"output: {_text(item.output)}"] if everything else []
    for name, ev in item.evaluations.items():
        line = _evaluation(name, ev, marks.get(name))
        if line is not None and (everything or ev.status != "ok" or ev.passed is False):
            lines.append(line)
    return lines


def _evaluation(name: str, ev: Evaluation, mark: Any) -> str | None:
    if ev.status != "ok" or ev.score is None:
        return f"{name}: eval-error: {_text(ev.error or 'no score')}"
    side = "above" if lower_is_better(name) else "below"
    verdict = (f" ({side} its pass mark {score(mark)})" if ev.passed is False and isinstance(mark, int | float)
               else "")
    reason = f": {_text(ev.reason)}" if ev.reason else ""
    return f"{name} {score(ev.score)}{verdict}{reason}"


def _text(value: Any) -> str:
    """A value on one line, cut to `TEXT_LIMIT` characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= TEXT_LIMIT else text[:TEXT_LIMIT - 1] + "…"
