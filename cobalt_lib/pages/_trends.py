"""The trends page: per experiment, each evaluator's mean and pass rate, the cost and the latency p95
over its finished runs (oldest first, in run order), a tag filter, each gate's threshold drawn on the
chart of its metric, and a run whose gate failed marked on that metric's chart only."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from ..config._config import Config
from ..links import dagster_asset_url
from ..ops._history import check_stored_experiment, history_entry
from ..store._store import Store
from ..store._store_history import RunSelection
from ._charts import line_chart

#: The newest runs a trend draws.
TREND_RUNS = 200


def trends_view(config: Config, experiment: str = "", tag: str = "") -> dict[str, Any]:
    """Charts of `experiment` (default: the newest run's) over its runs tagged `tag` (default: all)."""
    store = Store.for_config(config)
    with store.reading():  # the view's reads over one connection
        experiments = store.experiment_names()
        experiment = experiment or store.newest_experiment() or ""
        check_stored_experiment(store, experiment or None)
        tagged = RunSelection(experiment=experiment, tag=tag or None)
        # A run still going, stopped or failed has partial statistics: plotted, it would read as a dip.
        finished = replace(tagged, status="completed")
        runs = store.run_page(finished, limit=TREND_RUNS)[::-1]
        left_out = store.run_count(tagged) - store.run_count(finished)
        ids = [r["run_id"] for r in runs]
        aggregates = store.rows_of("aggregates", ids)
        verdicts = store.rows_of("verdicts", ids)
        tag_names = store.tag_names(experiment)
    failed = {v["run_id"] for v in verdicts if not v["passed"]}
    by_run: dict[str, dict[str, dict[str, Any]]] = {}
    for row in aggregates:
        by_run.setdefault(row["run_id"], {})[row["metric"]] = row
    entries = [history_entry(r, {}).model_dump() | {"failed": r["run_id"] in failed} for r in runs]
    evaluators = sorted({a["metric"] for a in aggregates if a["kind"] == "evaluator"})

    def values(metric: str, stat: str) -> list[float | None]:
        return [(by_run.get(r["run_id"], {}).get(metric) or {}).get(stat) for r in runs]

    def gates_on(metric: str, stats: tuple[str, ...]) -> tuple[list[dict[str, Any]], set[str]]:
        """The newest threshold of each gate on `metric` (a plotted statistic), and the runs where one failed."""
        marks: dict[str, dict[str, Any]] = {}
        failed_here: set[str] = set()
        for v in verdicts:
            head, stat = gate_metric(v["name"])
            if head != metric or stat not in stats:
                continue
            marks[v["name"]] = {"label": v["name"], "value": v["expected"]}  # verdicts come oldest run first
            if not v["passed"]:
                failed_here.add(v["run_id"])
        return list(marks.values()), failed_here

    # Every run with a failed gate, on a chart of its own: the summary's count is the red points drawn here
    # (a gate on no charted metric, such as `calibrated(...)` or the error rate, is marked nowhere else).
    failures = [sum(1 for v in verdicts if v["run_id"] == r["run_id"] and not v["passed"]) for r in runs]
    charts = [{"title": "failed gates", "unit": "count", "failed": len(failed), "chart": line_chart(
        [{"name": "failed gates", "values": [float(n) for n in failures]}], entries, unit="count",
        failed=failed)}] if verdicts else []
    for name in evaluators:
        marks, failed_here = gates_on(name, ("mean", "pass_rate", "avg"))
        charts.append({"title": name, "unit": "score", "failed": len(failed_here), "chart": line_chart(
            [{"name": "mean", "values": values(name, "mean")},
             {"name": "pass rate", "values": values(name, "pass_rate")}],
            entries, fixed=(0.0, 1.0), marks=marks, failed=failed_here)})
    if any(r.get("source") == "monitor" for r in runs):
        charts += control_charts(runs, entries, by_run, evaluators)
    costs = [_cost(e) for e in entries]
    marks, failed_here = gates_on("cost", ("mean", "avg", "total", "sum"))
    charts.append({"title": "cost (per run, agent + judge)", "unit": "usd", "unknown": costs.count(None),
                   "failed": len(failed_here), "chart": line_chart([{"name": "cost", "values": costs}], entries,
                                                                    unit="usd", marks=marks, failed=failed_here)})
    marks, failed_here = gates_on("latency", ("p95",))
    charts.append({"title": "latency p95", "unit": "ms", "failed": len(failed_here), "chart": line_chart(
        [{"name": "latency p95", "values": values("latency", "p95")}], entries, unit="ms", marks=marks,
        failed=failed_here)})
    return {"experiment": experiment, "experiments": experiments, "tag": tag, "runs": entries, "charts": charts,
            "left_out": left_out,
            "tags": tag_names, "failed": len(failed),
            "dagster": dagster_asset_url(config, experiment) if experiment else None}


_GATE = re.compile(r"^(?P<path>[\w.\-]+) (?:>=|<=|>|<) ")


def gate_metric(name: str) -> tuple[str, str]:
    """(metric, statistic) a gate named `exact >= 0.86` or `latency.p95 <= 2000` reads: (`exact`, `mean`),
    (`latency`, `p95`); ("", "") for a gate on no single metric (`error rate <= 5%`)."""
    match = _GATE.match(name)
    if match is None:
        return "", ""
    head, _, stat = match["path"].partition(".")
    return head, stat or "mean"


def _cost(entry: dict[str, Any]) -> float | None:
    """The run's estimated cost (agent + judge); None, no point, when either is unknown: a known judge cost
    alone (often $0) would pass for the run's, where the runs list and the run page say `unknown`."""
    return None if entry["cost"] is None else float(entry["cost"])


def control_charts(runs: list[dict[str, Any]], entries: list[dict[str, Any]],
                   by_run: dict[str, dict[str, dict[str, Any]]], evaluators: list[str]) -> list[dict[str, Any]]:
    """A monitor's windows: per evaluator, the drift chart (`monitor._drift`) over the windows in window
    order, its limit, and the windows it flagged marked (each links to its run, worst traces first)."""
    from ..monitor._drift import Window, control_chart
    from ..results._direction import lower_is_better

    keys = {r["run_id"]: next((t[7:] for t in r.get("tags") or [] if t.startswith("window:")), r["run_id"])
            for r in runs}
    baseline = next((int(t[9:]) for r in runs for t in r.get("tags") or [] if t.startswith("baseline:")), 14)
    charts = []
    for name in evaluators:
        windows = sorted((Window(keys[r["run_id"]], float(a["mean"]), float(a["stddev"] or 0.0) ** 2,
                                 int(a["count"] or 0)) for r in runs
                          if (a := by_run.get(r["run_id"], {}).get(name)) and a.get("mean") is not None),
                         key=lambda w: w.key)
        tests = control_chart(windows, baseline=baseline, lower_is_better=lower_is_better(name))
        read = [tests.get(keys[r["run_id"]]) for r in runs]
        flagged = {r["run_id"] for r, t in zip(runs, read, strict=True) if t is not None and t.flagged}
        means = [(by_run.get(r["run_id"], {}).get(name) or {}).get("mean") for r in runs]
        charts.append({"title": f"{name}: drift control chart", "unit": "score", "failed": 0, "flagged": len(flagged),
                       "chart": line_chart([
                           {"name": "window mean", "values": means},
                           {"name": "EWMA", "values": [None if t is None else t.ewma for t in read]},
                           {"name": "limit (1% false alarms)",
                            "values": [None if t is None else t.bound for t in read]}],
                           entries, fixed=(0.0, 1.0), failed=flagged)})
    return charts
