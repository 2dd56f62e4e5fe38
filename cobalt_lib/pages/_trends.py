"""The trends page: per experiment, each evaluator's mean and pass rate, the cost and the latency p95
over its runs (oldest first), a tag filter, and the runs whose gates failed marked."""

from __future__ import annotations

from typing import Any

from ..config._config import Config
from ..links import dagster_asset_url
from ..ops._history import check_stored_experiment, history_entry
from ..results._store import Store
from ._charts import line_chart

#: The newest runs a trend draws.
TREND_RUNS = 200


def trends_view(config: Config, experiment: str = "", tag: str = "") -> dict[str, Any]:
    """Charts of `experiment` (default: the newest run's) over its runs tagged `tag` (default: all)."""
    store = Store.for_config(config)
    stored = store.runs(missing_ok=True)
    experiments = sorted({r["experiment"] for r in stored})
    experiment = experiment or (stored[0]["experiment"] if stored else "")
    check_stored_experiment(store, experiment or None)
    own = [r for r in stored if r["experiment"] == experiment]
    runs = [r for r in own if not tag or tag in (r.get("tags") or [])][:TREND_RUNS][::-1]
    ids = [r["run_id"] for r in runs]
    aggregates = store.rows_of("aggregates", ids)
    failed = {v["run_id"] for v in store.rows_of("verdicts", ids) if not v["passed"]}
    by_run: dict[str, dict[str, dict[str, Any]]] = {}
    for row in aggregates:
        by_run.setdefault(row["run_id"], {})[row["metric"]] = row
    entries = [history_entry(r, {}).model_dump() | {"failed": r["run_id"] in failed} for r in runs]
    evaluators = sorted({a["metric"] for a in aggregates if a["kind"] == "evaluator"})

    def values(metric: str, stat: str) -> list[float | None]:
        return [(by_run.get(r["run_id"], {}).get(metric) or {}).get(stat) for r in runs]

    charts = [{"title": name, "unit": "score", "chart": line_chart(
        [{"name": "mean", "values": values(name, "mean")}, {"name": "pass rate", "values": values(name, "pass_rate")}],
        entries, fixed=(0.0, 1.0))} for name in evaluators]
    costs = [_cost(e) for e in entries]
    charts.append({"title": "cost (US$ per run, agent + judge)", "unit": "usd", "unknown": costs.count(None),
                   "chart": line_chart([{"name": "cost", "values": costs}], entries)})
    charts.append({"title": "latency p95 (ms)", "unit": "ms", "chart": line_chart(
        [{"name": "latency p95", "values": values("latency", "p95")}], entries)})
    return {"experiment": experiment, "experiments": experiments, "tag": tag, "runs": entries, "charts": charts,
            "tags": sorted({t for r in own for t in r.get("tags") or []}), "failed": len(failed),
            "dagster": dagster_asset_url(config, experiment) if experiment else None}


def _cost(entry: dict[str, Any]) -> float | None:
    """The run's estimated cost (agent + judge); None, no point, when either is unknown: a known judge cost
    alone (often $0) would pass for the run's, where the runs list and the run page say `unknown`."""
    return None if entry["cost"] is None else float(entry["cost"])
