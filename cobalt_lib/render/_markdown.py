"""Markdown renderings of runs (GitHub step summaries, `export --format markdown`, Dagster metadata)."""

from __future__ import annotations

from .._numbers import count, duration, money, score
from ..results._report import ExperimentReport

_num = score


def scores_table(report: ExperimentReport) -> str:
    lines = ["| evaluator | avg | min | max | p50 | p95 | n | errors |", "|---|---|---|---|---|---|---|---|"]
    for name, s in report.summary.scores.items():
        lines.append(f"| {name} | {_num(s.avg)} | {_num(s.min)} | {_num(s.max)} | {_num(s.p50)} | {_num(s.p95)} "
                     f"| {s.count} | {s.errors} |")
    return "\n".join(lines)


def gates_list(report: ExperimentReport) -> str:
    if not report.assertions:
        return "_no quality gates_"
    return "\n".join(f"- {'✅' if a.passed else '❌'} **{a.name}**: {a.message}" for a in report.assertions)


def report_markdown(report: ExperimentReport) -> str:
    """A summary of one run: status, scores table, totals and gates."""
    s = report.summary
    verdict = "passed" if report.passed else "FAILED" if report.status == "completed" else report.status.upper()
    cost = money(s.estimated_cost)
    return "\n\n".join([
        f"### cobalt: {report.name} — {verdict}",
        f"Run `{report.id}` ({report.status}) · {count(s.total_runs, 'item')} · {count(s.errors, 'error')} · "
        f"{count(s.timeouts, 'timeout')} · "
        f"{duration(s.total_duration_ms)} · cost {cost}",
        scores_table(report),
        gates_list(report),
    ]) + "\n"
