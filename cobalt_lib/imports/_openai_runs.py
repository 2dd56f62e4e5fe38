"""An Evals API run's results (`GET /v1/evals/{id}/runs/{run_id}/output_items`, saved beside runs.json as
`RUN_ID.output_items.json`) as a completed run in history: the baseline survives the move."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..results._identity import content_hash, item_identity
from ..results._report import Evaluation, ExperimentReport, ItemResult
from ._history import summary_of
from ._source import Findings, load_json

_SUFFIX = re.compile(r"-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def run_report(folder: Path, run: dict[str, Any], name: str, graders: list[str], variant: str | None,
               findings: Findings) -> ExperimentReport | None:
    """The run's report from its saved output items; None when they were not saved."""
    file = folder / f"{run.get('id')}.output_items.json"
    if not file.is_file():
        return None
    doc = load_json(file)
    rows = doc.data.get("data") if isinstance(doc.data, dict) else None
    if not isinstance(rows, list):
        findings.error(doc.where(()), "is not a list of output items; save "
                                      "GET /v1/evals/{id}/runs/{run_id}/output_items")
        return None
    rows = sorted((r for r in rows if isinstance(r, dict)), key=lambda r: r.get("datasource_item_id", 0))
    items = [_item(i, row, graders) for i, row in enumerate(rows)]
    created = datetime.fromtimestamp(int(run.get("created_at") or 0), UTC).isoformat()
    report = ExperimentReport(id="openai-" + re.sub(r"\W", "", str(run.get("id")).removeprefix("evalrun_")),
                              name=name,
                              timestamp=created, status="completed" if run.get("status") == "completed" else "failed",
                              tags=["openai-evals", "imported"], variant=variant, items=items,
                              config={"source": "openai-evals", "model": run.get("model"), "log": file.name,
                                      "completed_at": None})
    report.summary = summary_of(items)
    return report


def _item(index: int, row: dict[str, Any], graders: list[str]) -> ItemResult:
    item = dict(row.get("datasource_item") or {})
    sample = row.get("sample") or {}
    output = next((str(m.get("content", "")) for m in reversed(sample.get("output") or [])
                   if isinstance(m, dict) and m.get("role") == "assistant"), "")
    usage = sample.get("usage") or {}
    error = (sample.get("error") or {}).get("message") if sample.get("error") else None
    evaluations = {}
    for result in row.get("results") or []:
        name = _grader(str(result.get("name", "")), graders)
        score = result.get("score")
        evaluations[name] = Evaluation(score=float(score) if isinstance(score, int | float) else None,
                                       passed=result.get("passed"), status="ok" if score is not None else "eval-error",
                                       reason="passed" if result.get("passed") else "failed")
    return ItemResult(index=index, input=item.get("input"), item=item, input_hash=content_hash(item),
                      item_id=item_identity(item), output=output, status="error" if error else "ok", error=error,
                      metadata={"model": sample.get("model"), "input_tokens": usage.get("prompt_tokens", 0),
                                "output_tokens": usage.get("completion_tokens", 0)},
                      tokens=usage.get("total_tokens"), evaluations=evaluations)


def _grader(name: str, graders: list[str]) -> str:
    """A result's grader: the API names it `NAME-<uuid>`; cobalt's evaluator is NAME."""
    bare = _SUFFIX.sub("", name)
    return bare if bare in graders or not graders else name
