"""What the runs list, the run page and the item detail show, read through the ops layer and the
store's short read-only connections (a page never holds the store while a run writes to it)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from pydantic import BaseModel

from ..config._config import Config
from ..grading._labels import output_hash
from ..links import dagster_asset_url, dagster_check_names, dagster_check_result_url, dagster_url, pages_url
from ..ops._history import history_entry, run_duration_ms
from ..ops._journal import waiting_note
from ..ops._refs import resolve_ref
from ..results._repeats import item_label, stored_flaky
from ..results._report import ItemResult, Summary
from ..results._rows import item_from_rows
from ..results._spans import SpanRecord
from ..store._store import Store
from ..store._store_history import RunSelection

#: Runs per page of the runs list.
RUNS_PER_PAGE = 100
#: Items per page of the item table (never the whole run in the DOM).
ITEMS_PER_PAGE = 50
#: Bins of each evaluator's score histogram (scores are 0..1).
BINS = 10
SORTS = ("index", "status", "latency", "tokens", "cost")
ONLY = ("failures", "eval-errors")


class RunFilters(BaseModel):
    """The runs list's filters, as its form sends them (empty strings are no filter)."""

    experiment: str = ""
    tag: str = ""
    status: str = ""
    #: `passed` or `failed`: runs whose gates all passed, or whose gates did not (a failed run's included).
    gates: str = ""
    since: str = ""
    until: str = ""
    offset: int = 0


class ItemQuery(BaseModel):
    """One page of the item table: the sort, the filters and the search, as the table's controls send them."""

    offset: int = 0
    limit: int = ITEMS_PER_PAGE
    sort: str = "index"
    desc: bool = False
    q: str = ""
    only: str = ""


def _selection(f: RunFilters) -> RunSelection:
    return RunSelection(experiment=f.experiment or None, tag=f.tag or None, status=f.status or None,
                        since=f.since or None, until=f.until or None, gates=f.gates or None)


def runs_list(config: Config, filters: RunFilters) -> dict[str, Any]:
    """One page of the stored runs matching `filters`, newest first, with means, pass rates, gates and each
    evaluator's change against the run before it; a run group's variants are one row. Each figure comes from
    SQL over the page's runs: the list costs its page, not every stored run."""
    store = Store.for_config(config)
    with store.reading():  # the page's dozen reads share one connection
        return _runs_rows(config, store, filters)


def _runs_rows(config: Config, store: Store, filters: RunFilters) -> dict[str, Any]:
    selection = _selection(filters)
    shown = store.row_page(selection, offset=filters.offset, limit=RUNS_PER_PAGE)
    members = [r for row in shown for r in row]
    ids = [r["run_id"] for r in members]
    before = store.previous_runs(ids)
    held = store.dagster_runs_of(ids)
    stats = _evaluator_stats(store.rows_of("aggregates", list(dict.fromkeys(
        [*ids, *(before[i] for i in ids if i in before)]))))
    gates: dict[str, list[bool]] = {}
    for verdict in store.rows_of("verdicts", ids):
        gates.setdefault(verdict["run_id"], []).append(bool(verdict["passed"]))
    rows = []
    for row in shown:
        if len(row) > 1:
            rows.append(_group_row(row, stats, gates))
            continue
        run = row[0]
        run_stats = stats.get(run["run_id"], {})
        previous = before.get(run["run_id"])
        earlier = stats.get(previous, {}) if previous else {}
        entry = history_entry(run, {name: s["mean"] for name, s in run_stats.items()})
        passed = gates.get(run["run_id"], [])
        rows.append({"entry": entry, "stats": run_stats, "gates_passed": passed.count(True),
                     "gates_failed": passed.count(False), "previous": previous,
                     "deltas": {name: _change(s.get("mean"), (earlier.get(name) or {}).get("mean"))
                                for name, s in run_stats.items()},
                     "dagster": dagster_run_page(config, held[run["run_id"]]) if run["run_id"] in held else None,
                     # a run in progress has no aggregates yet: what it has done so far instead
                     "live": store.live_counts(run["run_id"]) if run["status"] == "running" else None})
    return {
        "rows": rows, "total": store.row_count(selection), "stored": store.row_count(), "filters": filters,
        "per_page": RUNS_PER_PAGE, "experiments": store.experiment_names(), "tags": store.tag_names(),
        "statuses": ["completed", "failed-gates", "running", "incomplete", "failed"],
        "running": any(r["status"] == "running" for r in members), "dagster_url": dagster_url(config),
    }


def _change(now: Any, before: Any) -> float | None:
    return None if now is None or before is None else float(now) - float(before)


def _group_row(runs: list[dict[str, Any]], stats: dict[str, dict[str, dict[str, Any]]],
               gates: dict[str, list[bool]]) -> dict[str, Any]:
    """A run group's row: its newest variant's date, each evaluator's lowest and highest mean over the
    variants, every variant's gates, the group's duration and cost summed, and the status of the worst."""
    entries = [history_entry(r, {n: s["mean"] for n, s in stats.get(r["run_id"], {}).items()}) for r in runs]
    names = list(dict.fromkeys(n for e in entries for n in e.scores))
    ranges = {n: [v for e in entries if (v := e.scores.get(n)) is not None] for n in names}
    verdicts = [g for r in runs for g in gates.get(r["run_id"], [])]
    order = ["failed", "incomplete", "running", "FAILED", "completed", "passed"]
    worst = min((e.verdict for e in entries), key=lambda v: order.index(v) if v in order else 0)
    costs = [e.cost for e in entries]
    return {"group": {"group_id": runs[0]["group_id"], "variants": len(runs), "verdict": worst,
                      "ranges": {n: (min(v), max(v)) if v else (None, None) for n, v in ranges.items()},
                      "duration_ms": sum(e.duration_ms or 0 for e in entries),
                      "cost": None if None in costs else sum(c or 0 for c in costs)},
            "entry": entries[0], "gates_passed": verdicts.count(True), "gates_failed": verdicts.count(False),
            "live": None, "dagster": None}


def _evaluator_stats(rows: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """`{run_id: {evaluator: aggregates row}}`, evaluators in name order."""
    stats: dict[str, dict[str, dict[str, Any]]] = {}
    for row in sorted(rows, key=lambda r: r["metric"]):
        if row["kind"] == "evaluator":
            stats.setdefault(row["run_id"], {})[row["metric"]] = row
    return stats


def dagster_run_page(config: Config, dagster_run_id: str) -> str:
    """The Dagster UI's page of one Dagster run (a cobalt run Dagster executed or recorded)."""
    return f"{dagster_url(config)}/runs/{quote(dagster_run_id, safe='')}"


def run_detail(config: Config, ref: str) -> dict[str, Any]:
    """The run page's summary: totals, cost, latency percentiles, gates (actual vs expected, each with
    its Dagster check), per evaluator its histogram and statistics; live counts while it runs."""
    store = Store.for_config(config)
    # A full id (every link the pages make) is one lookup; a prefix or `latest` is resolved over the runs.
    run = store.get_run(ref) or store.require_run(resolve_ref(config, ref).run_id)
    run_id = run["run_id"]
    aggregates = store.rows("aggregates", run_id)
    metrics = {a["metric"]: a for a in aggregates if a["kind"] == "metric"}
    stats = {a["metric"]: a for a in aggregates if a["kind"] == "evaluator"}
    declared = [e for e in (run.get("config") or {}).get("evaluators") or [] if isinstance(e, dict)]
    marks = {e["name"]: e.get("threshold") for e in declared if isinstance(e.get("name"), str)}
    histograms = _histograms(store.score_bins(run_id, BINS))
    names = list(dict.fromkeys([*marks, *stats, *histograms]))
    entry = history_entry(run, {n: (stats.get(n) or {}).get("mean") for n in names})
    experiment = run["experiment"]
    # Only a run Dagster holds (executed or recorded) has a Dagster run, partitions and check results.
    dagster_run = store.dagster_runs_of([run_id]).get(run_id)
    return {
        "run": run, "entry": entry, "summary": Summary.model_validate(run.get("summary") or {}),
        "finished": bool(run.get("summary")), "metrics": metrics, "stats": stats,
        "evaluators": names, "pass_marks": marks, "histograms": histograms, "counts": store.live_counts(run_id),
        "planned": _planned(run), "gates": _gates(config, run, store.rows("verdicts", run_id), dagster_run),
        "previous": store.previous_completed_run(experiment, run_id),
        "duration_ms": run_duration_ms(run), "dagster_links": _run_links(config, run, dagster_run),
        "waiting_note": waiting_note(run.get("waiting"), f"cobalt run --resume {run_id}"),
    }


def _planned(run: dict[str, Any]) -> int | None:
    """Agent calls the run will make (items x runs), for `12 of 40 done` while it runs."""
    config = run.get("config") or {}
    size = (config.get("dataset") or {}).get("size")
    return int(size) * int(config.get("runs") or 1) if isinstance(size, int) else None


def _histograms(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per evaluator: counts per bin, eval-errors (bin -1 of `score_bins`), how many scored."""
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        h = found.setdefault(row["evaluator"], {"bins": [0] * BINS, "errors": 0, "scored": 0})
        if row["bin"] < 0:
            h["errors"] = int(row["n"])
        else:
            h["bins"][row["bin"]] = int(row["n"])
            h["scored"] += int(row["n"])
    return found


def _gates(config: Config, run: dict[str, Any], verdicts: list[dict[str, Any]],
           dagster_run: str | None) -> list[dict[str, Any]]:
    """Each verdict with a link to this run's result of its Dagster check, when Dagster holds the run: the
    Dagster run's log filtered to that check's evaluation (a gate yielding several verdicts, such as
    no_regression's one per metric, to every check evaluation of the run)."""
    if dagster_run is None:
        return [{**v, "dagster": None} for v in verdicts]
    declared = [g["name"] for g in (run.get("config") or {}).get("assertions") or [] if isinstance(g, dict)]
    checks = dict(zip(declared, dagster_check_names(declared), strict=True))
    return [{**v, "dagster": dagster_check_result_url(config, dagster_run, checks.get(v["name"]))} for v in verdicts]


def _run_links(config: Config, run: dict[str, Any], dagster_run: str | None) -> dict[str, str | None]:
    """Links into Dagster for a run it holds; for one it does not (yet), only the UI's home."""
    experiment, run_id = run["experiment"], run["run_id"]
    if dagster_run is None:
        return {"dagster_run": None, "dagster": dagster_url(config), "aggregates": None, "scores": None,
                "pages": pages_url(config)}
    return {"dagster_run": dagster_run_page(config, dagster_run), "dagster": dagster_url(config),
            "aggregates": dagster_asset_url(config, experiment, "aggregates", run_id),
            "scores": dagster_asset_url(config, experiment, "scores", run_id), "pages": pages_url(config)}


def item_json(item: ItemResult) -> dict[str, Any]:
    """An item as the table and the detail panel draw it: the results file's record plus its
    `expected_output` (the page's script renders every string as text, never as HTML)."""
    data = item.model_dump(mode="json")
    data["expected"] = item.item.get("expected_output")
    return data


def _item(row: dict[str, Any]) -> dict[str, Any]:
    return item_json(item_from_rows(row, row["scores"]))


def item_page(config: Config, run_id: str, query: ItemQuery) -> dict[str, Any]:
    """One page of the run's item table (sorted, filtered and searched in the store), each item with its
    label (`3:1` with repeats) and, when it passed in some repeats only, `flaky` (`2 of 3 passed`).
    An unknown run is an error (404), not an empty page."""
    sort = query.sort if query.sort in SORTS or query.sort.startswith("score:") else "index"
    store = Store.for_config(config)
    repeats = _repeats(store.require_run(run_id))
    total, rows = store.item_page(run_id, offset=max(query.offset, 0), limit=min(max(query.limit, 1), 500),
                                  sort=sort, descending=query.desc, search=query.q.strip(),
                                  only=query.only if query.only in ONLY else None)
    flaky = stored_flaky(store, run_id, [r["item_index"] for r in rows]) if repeats > 1 else {}
    items = [_item(r) | {"label": item_label(r["item_index"], r["run_index"], repeats),
                         "flaky": flaky.get(r["item_index"])} for r in rows]
    return {"total": total, "offset": query.offset, "repeats": repeats, "items": items}


def item_detail(config: Config, run_id: str, index: int) -> list[dict[str, Any]]:
    """Every repeat of item `index` (one per run index), complete; an unknown run is an error (404)."""
    store = Store.for_config(config)
    repeats = _repeats(store.require_run(run_id))
    records = store.item_records(run_id, index)
    spans = store.spans_of(run_id, [(index, r["run_index"]) for r in records])
    # `output_hash`: what a label set on this answer records, so the page tells a label set on another answer
    return [_item(r) | {"label": item_label(index, r["run_index"], repeats),
                        "output_hash": output_hash(r.get("output")),
                        "trace": trace_json(spans.get((index, r["run_index"]), []))} for r in records]


def trace_json(spans: list[SpanRecord]) -> list[dict[str, Any]]:
    """An item's spans as the detail panel's trace draws them (`trace.js`), in the order they ended."""
    return [span.model_dump(mode="json") for span in spans]


def _repeats(run: dict[str, Any]) -> int:
    return int((run.get("config") or {}).get("runs") or 1)


def live_status(config: Config, run_id: str) -> dict[str, Any]:
    """What a page in progress polls: the run's status and its counts so far (404 for an unknown run)."""
    store = Store.for_config(config)
    store.require_run(run_id)
    return {"status": store.run_status(run_id), **store.live_counts(run_id)}
