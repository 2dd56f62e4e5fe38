"""One run as an Inspect AI eval log (the `.json` log format, version 2): `inspect view` opens it and
`inspect_ai.log.read_eval_log` reads it. Each item is a sample, each evaluator a scorer."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from ..results._report import ExperimentReport, ItemResult
from ._every_eval_ever import model_info

#: A cobalt run's status as the log's.
_STATUS = {"completed": "success", "failed": "error", "incomplete": "error", "running": "started"}


def to_inspect_log(report: ExperimentReport) -> str:
    """The run as an Inspect eval log, JSON text."""
    model = _model(report)
    items = list(report.items)
    log = {
        "version": 2,
        "status": _STATUS.get(report.status, "error"),
        "eval": {"eval_id": report.id, "run_id": report.id, "created": report.timestamp, "task": report.name,
                 "task_id": report.name, "task_version": 0,
                 "dataset": {"name": report.name, "samples": len(items),
                             "sample_ids": [_sample_id(item) for item in items]},
                 "model": model, "config": {},
                 "metadata": {"cobalt_run_id": report.id, **({"variant": report.variant} if report.variant else {})},
                 "tags": list(report.tags)},
        "plan": {"name": "plan", "steps": [{"solver": "cobalt_agent", "params": {}}]},
        "results": {"total_samples": len(items), "completed_samples": sum(i.status == "ok" for i in items),
                    "scores": [_score(name, stats.avg, stats.pass_rate) for name, stats in report.summary.scores.items()
                               if stats.avg is not None]},
        "stats": {"started_at": report.timestamp, "completed_at": report.timestamp,
                  "model_usage": {model: _usage(items)}},
        "samples": [_sample(item, model) for item in items],
    }
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def _score(name: str, mean: float | None, pass_rate: float | None) -> dict[str, Any]:
    metrics: dict[str, dict[str, Any]] = {"mean": {"name": "mean", "value": mean, "params": {}}}
    if pass_rate is not None:
        metrics["pass_rate"] = {"name": "pass_rate", "value": pass_rate, "params": {}}
    return {"name": name, "scorer": name, "params": {}, "metrics": metrics}


def _sample(item: ItemResult, model: str) -> dict[str, Any]:
    target = item.item.get("expected_output")
    output = item.output if isinstance(item.output, str) else json.dumps(item.output, ensure_ascii=False)
    sample: dict[str, Any] = {
        "id": _sample_id(item), "epoch": item.run_index + 1, "input": _text(item.input if item.input is not None
                                                                            else item.item),
        "target": _text(target) if target is not None else "",
        "output": {"model": model, "choices": [{"message": {"role": "assistant", "content": output or "",
                                                            "source": "generate"}, "stop_reason": "stop"}]},
        "scores": {name: {"value": ev.score, "explanation": ev.reason,
                          "metadata": {"passed": ev.passed, "status": ev.status}}
                   for name, ev in item.evaluations.items() if ev.score is not None},
        "metadata": {"cobalt_status": item.status, **({"error": item.error} if item.error else {})},
    }
    if item.latency_ms is not None:
        sample["total_time"] = item.latency_ms / 1000
    return sample


def _sample_id(item: ItemResult) -> str | int:
    """The item's own id when it has one, else its 1-based position (Inspect numbers samples from 1)."""
    return item.item_id if item.item.get("id") not in (None, "") else item.index + 1


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _usage(items: list[ItemResult]) -> dict[str, int]:
    tokens_in = sum(int(i.metadata.get("input_tokens") or 0) for i in items)
    tokens_out = sum(int(i.metadata.get("output_tokens") or 0) for i in items)
    return {"input_tokens": tokens_in, "output_tokens": tokens_out, "total_tokens": tokens_in + tokens_out}


def _model(report: ExperimentReport) -> str:
    """`developer/model` of the model most of the agent's calls named, else `cobalt/<experiment>`."""
    models = Counter(str(item.metadata["model"]) for item in report.items if item.metadata.get("model"))
    if not models:
        return f"cobalt/{report.name}"
    info = model_info(models.most_common(1)[0][0])
    return str(info["id"])
