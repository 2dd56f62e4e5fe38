"""Report records as store rows, and store rows back as report records."""

from __future__ import annotations

from typing import Any

from .._secrets import Scrubber, scrub, scrubber
from ._report import Evaluation, ExperimentReport, ItemResult, Stats
from ._spans import span_row


def output_row(run_id: str, item: ItemResult) -> dict[str, Any]:
    clean = scrubber()
    return {
        "run_id": run_id, "item_index": item.index, "run_index": item.run_index, "input": item.item,
        "output": item.output, "metadata": item.metadata, "status": item.status, "error": _text(clean, item.error),
        "traceback": _text(clean, item.traceback), "latency_ms": item.latency_ms, "tokens": item.tokens,
        "cost_usd": item.cost_usd, "input_hash": item.input_hash, "item_id": item.item_id,
    }


def span_rows(run_id: str, item: ItemResult) -> list[dict[str, Any]]:
    """The `spans` rows of the spans the item's agent call emitted."""
    return [span_row(run_id, item.index, item.run_index, seq, span) for seq, span in enumerate(item.spans)]


def score_rows(run_id: str, item: ItemResult) -> list[dict[str, Any]]:
    """The `scores` rows of `item`; a reason, error or raw answer never carries a secret the process knows
    (a judge or a proxy may echo the key, a password or a token into it)."""
    clean = scrubber()
    return [
        {
            "run_id": run_id, "item_index": item.index, "run_index": item.run_index, "evaluator": name,
            "score": ev.score, "raw_score": ev.raw_score, "reason": _text(clean, ev.reason),
            "status": ev.status, "passed": ev.passed, "error": _text(clean, ev.error),
            "raw_response": _text(clean, ev.raw_response), "cached": ev.cached,
            "judge_model": ev.judge_model, "latency_ms": ev.latency_ms, "tokens": ev.tokens,
            "cost_usd": ev.cost_usd, "judge_calls": ev.judge_calls,
            "turns": None if ev.turns is None else [t.model_dump(mode="json") for t in ev.turns],
        }
        for name, ev in item.evaluations.items()
    ]


def aggregate_rows(report: ExperimentReport) -> list[dict[str, Any]]:
    rows = []
    for kind, table in (("evaluator", report.summary.scores), ("metric", report.summary.metrics)):
        for metric, s in table.items():
            rows.append({
                "run_id": report.id, "metric": metric, "kind": kind, "mean": s.avg, "median": s.median,
                "p95": s.p95, "p99": s.p99, "min": s.min, "max": s.max, "stddev": s.stddev,
                "count": s.count, "errors": s.errors, "coverage": s.coverage, "pass_rate": s.pass_rate,
            })
    return rows


def verdict_rows(report: ExperimentReport) -> list[dict[str, Any]]:
    return [
        {"run_id": report.id, "name": a.name, "passed": a.passed, "message": scrub(a.message),
         "actual": a.actual, "expected": a.expected, "gate": a.gate}
        for a in report.assertions
    ]


def run_row(report: ExperimentReport, *, finished: bool) -> dict[str, Any]:
    return {
        "run_id": report.id, "experiment": report.name, "status": report.status,
        "started_at": report.timestamp, "finished_at": _now_iso() if finished else None,
        "tags": report.tags, "config": report.config, "source": report.source,
        "parent_run_id": report.parent_run_id, "results_path": report.results_path,
        "summary": report.summary.model_dump(mode="json", exclude={"per_item"}) if finished else None,
        "passed": report.passed if finished else None, "group_id": report.group_id, "variant": report.variant,
    }


def item_from_rows(output: dict[str, Any], scores: list[dict[str, Any]]) -> ItemResult:
    """Rebuild an ItemResult from its `outputs` row and `scores` rows."""
    item = output.get("input") or {}
    return ItemResult(
        index=output["item_index"], run_index=output["run_index"],
        input=item.get("input", item) if isinstance(item, dict) else item,
        item=item if isinstance(item, dict) else {}, input_hash=output.get("input_hash") or "",
        item_id=output.get("item_id") or "",
        output=output.get("output"), metadata=output.get("metadata") or {},
        latency_ms=output.get("latency_ms"), status=output["status"], error=output.get("error"),
        traceback=output.get("traceback"), tokens=output.get("tokens"), cost_usd=output.get("cost_usd"),
        evaluations={
            row["evaluator"]: Evaluation(
                score=row["score"], raw_score=row["raw_score"], reason=row["reason"], status=row["status"],
                passed=row["passed"], error=row["error"], raw_response=row["raw_response"],
                cached=bool(row["cached"]), judge_model=row["judge_model"], latency_ms=row["latency_ms"],
                cost_usd=row["cost_usd"], input_tokens=int(row["tokens"] or 0),
                judge_calls=int(row.get("judge_calls") or 0), turns=row.get("turns"))
            for row in scores
        },
    )


def stats_from_row(row: dict[str, Any]) -> Stats:
    return Stats(avg=row["mean"], median=row["median"], p50=row["median"], p95=row["p95"], p99=row["p99"],
                 min=row["min"], max=row["max"], stddev=row["stddev"], count=row["count"] or 0,
                 errors=row["errors"] or 0, coverage=row["coverage"], pass_rate=row["pass_rate"])


def _now_iso() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat()


def _text(clean: Scrubber, text: str | None) -> str | None:
    return None if text is None else clean(text)
