"""Materialisation metadata: numbers Dagster plots as trends, Markdown tables of worst items and diffs."""

from __future__ import annotations

from typing import Any

import dagster as dg

from cobalt_lib import ExperimentReport, ItemResult, Store


def _clip(value: Any, width: int = 60) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= width else text[: width - 1] + "…"


def dataset_metadata(run_id: str, size: int, source: str | None, evaluators: list[str]) -> dict[str, Any]:
    return {
        "items": dg.MetadataValue.int(size),
        "source": dg.MetadataValue.text(source or "inline"),
        "evaluators": dg.MetadataValue.text(", ".join(evaluators)),
        "cobalt_run_id": dg.MetadataValue.text(run_id),
    }


def outputs_metadata(items: list[ItemResult]) -> dict[str, Any]:
    latencies = sorted(i.latency_ms for i in items if i.status == "ok" and i.latency_ms is not None)
    p95 = latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))] if latencies else None
    return {
        "items": dg.MetadataValue.int(len(items)),
        "ok": dg.MetadataValue.int(sum(i.status == "ok" for i in items)),
        "errors": dg.MetadataValue.int(sum(i.status == "error" for i in items)),
        "timeouts": dg.MetadataValue.int(sum(i.status == "timeout" for i in items)),
        **({"latency_p95_ms": dg.MetadataValue.float(float(p95))} if p95 is not None else {}),
    }


def scores_metadata(items: list[ItemResult]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    names = sorted({name for item in items for name in item.evaluations})
    for name in names:
        scores = [i.evaluations[name].score for i in items if name in i.evaluations
                  and i.evaluations[name].status == "ok" and i.evaluations[name].score is not None]
        if scores:
            data[f"{name}_mean"] = dg.MetadataValue.float(sum(scores) / len(scores))  # type: ignore[arg-type]
        data[f"{name}_eval_errors"] = dg.MetadataValue.int(
            sum(1 for i in items if name in i.evaluations and i.evaluations[name].status != "ok"))
    data["judge_calls"] = dg.MetadataValue.int(sum(ev.judge_calls for i in items for ev in i.evaluations.values()))
    data["cached_scores"] = dg.MetadataValue.int(sum(ev.cached for i in items for ev in i.evaluations.values()))
    return data


def aggregates_metadata(report: ExperimentReport, store: Store) -> dict[str, Any]:
    s = report.summary
    data: dict[str, Any] = {}
    for name, stats in s.scores.items():
        if stats.avg is not None:
            data[f"{name}_mean"] = dg.MetadataValue.float(stats.avg)
        if stats.pass_rate is not None:
            data[f"{name}_pass_rate"] = dg.MetadataValue.float(stats.pass_rate)
    latency = s.metrics.get("latency")
    if latency and latency.p95 is not None:
        data["latency_p95_ms"] = dg.MetadataValue.float(latency.p95)
    if s.estimated_cost is not None:
        data["cost_usd"] = dg.MetadataValue.float(s.estimated_cost)
    if s.judge_cost is not None:
        data["judge_cost_usd"] = dg.MetadataValue.float(s.judge_cost)
    passed = sum(a.passed for a in report.assertions)
    data["gates_passed"] = dg.MetadataValue.int(passed)
    data["gates_failed"] = dg.MetadataValue.int(len(report.assertions) - passed)
    data["errors"] = dg.MetadataValue.int(s.errors + s.timeouts)
    data["cobalt_run_id"] = dg.MetadataValue.text(report.id)
    if report.results_path:
        data["results_path"] = dg.MetadataValue.path(report.results_path)
    data["worst_items"] = dg.MetadataValue.md(worst_items_table(report))
    data["diff_with_previous"] = dg.MetadataValue.md(diff_table(report, store))
    return data


def worst_items_table(report: ExperimentReport, limit: int = 10) -> str:
    def badness(item: ItemResult) -> float:
        if item.status != "ok":
            return -1.0
        scores = [ev.score for ev in item.evaluations.values() if ev.score is not None]
        return sum(scores) / len(scores) if scores else -0.5

    worst = sorted(report.items, key=badness)[:limit]
    names = list(report.summary.scores)
    lines = ["| item | status | " + " | ".join(names) + " | output |", "|---|---|" + "---|" * len(names) + "---|"]
    for item in worst:
        cells = []
        for name in names:
            ev = item.evaluations.get(name)
            cells.append("–" if ev is None else ("ERR" if ev.status != "ok" else f"{ev.score:.2f}"))
        output = item.error if item.status != "ok" else item.output
        lines.append(f"| #{item.index}.{item.run_index} | {item.status} | " + " | ".join(cells)
                     + f" | {_clip(output)} |")
    return "\n".join(lines)


def diff_table(report: ExperimentReport, store: Store) -> str:
    """Per-evaluator mean now against the experiment's previous completed run."""
    previous = store.previous_completed_run(report.name, report.id)
    if previous is None:
        return "_first run of this experiment: nothing to compare with_"
    before = {r["metric"]: r["mean"] for r in store.rows("aggregates", previous)}
    lines = [f"Compared with run `{previous}`", "", "| metric | previous | now | change |", "|---|---|---|---|"]
    for name, stats in {**report.summary.scores, **report.summary.metrics}.items():
        old, new = before.get(name), stats.avg
        change = "–" if old is None or new is None else f"{new - old:+.3f}"
        fmt = (lambda v: "–" if v is None else f"{v:.3f}")  # noqa: E731
        lines.append(f"| {name} | {fmt(old)} | {fmt(new)} | {change} |")
    return "\n".join(lines)
