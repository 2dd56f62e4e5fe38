"""Runs another tool already ran, into history: their reports written to the store as completed runs."""

from __future__ import annotations

from .._errors import CobaltError
from ..config._config import Config
from ..results._report import ExperimentReport, ItemResult, Stats, Summary
from ..results._rows import aggregate_rows, output_row, run_row, score_rows
from ..results._stats import describe


def summary_of(items: list[ItemResult]) -> Summary:
    """Per-evaluator statistics (mean, spread, pass rate) and the latency and token metrics of `items`."""
    summary = Summary(total_items=len({i.item_id for i in items}), total_runs=len(items),
                      ok=sum(i.status == "ok" for i in items), errors=sum(i.status == "error" for i in items))
    names = dict.fromkeys(name for item in items for name in item.evaluations)
    for name in names:
        evaluations = [item.evaluations[name] for item in items if name in item.evaluations]
        scores = [e.score for e in evaluations if e.score is not None]
        stats = Stats.model_validate(describe(scores))
        stats.errors = len(evaluations) - len(scores)
        stats.pass_rate = sum(bool(e.passed) for e in evaluations) / len(items) if items else None
        summary.scores[name] = stats
    latencies = [i.latency_ms for i in items if i.latency_ms is not None]
    summary.metrics = {"latency": Stats.model_validate(describe(latencies)),
                       "tokens": Stats.model_validate(describe([float(i.tokens or 0) for i in items]))}
    summary.agent_tokens = summary.total_tokens = sum(i.tokens or 0 for i in items)
    return summary


def check_new(config: Config, reports: list[ExperimentReport]) -> None:
    """Refuse a run imported before (its id is in the store): nothing is written then."""
    from ..store import Store

    store = Store.for_config(config)
    for report in reports:
        if store.get_run(report.id) is not None:
            raise CobaltError(f"{report.config['log']} was imported before, as run {report.id}; nothing written.")


def record(config: Config, reports: list[ExperimentReport]) -> None:
    """Each report as a completed run: its results file, then its rows in the store."""
    from ..results._results_file import write_results
    from ..store import Store

    check_new(config, reports)
    store = Store.for_config(config)
    for report in reports:
        write_results(report, config.output_path / "results")
        row = run_row(report, finished=True)
        row["finished_at"] = report.config.get("completed_at") or row["finished_at"]  # when the source ended
        store.write({"runs": [row], "outputs": [output_row(report.id, item) for item in report.items],
                     "scores": [row for item in report.items for row in score_rows(report.id, item)],
                     "aggregates": aggregate_rows(report)})
