"""Materialisation metadata a person can read: rounded numbers with their unit in the key, the items as
Dagster's own table, the worst items with what went wrong, and the change against the previous run.

Every statistic comes from the run's summary (`cobalt_lib.run.summarise`), so a number shown on two
assets is the same number; this module only rounds and lays it out.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dagster as dg

from cobalt_lib import Config, ExperimentReport, ItemResult, Store, Summary
from cobalt_lib.links import run_page_url
from cobalt_lib.render import UNKNOWN, delta, metric, score
from cobalt_lib.results import item_label

#: Rows of the `items` table on `scores` (Dagster keeps metadata in its event log: keep it bounded).
TABLE_ROWS = 500
#: Rows of `worst_items` on `aggregates`, and how much of each text cell it shows.
WORST_ROWS = 10
CELL_CHARS = 300

PAGES_NOTE = ("cobalt's run pages are served by `cobalt serve` (beside this UI). When they are not served, "
              "`cobalt report {run_id} -o report.html` writes this run's page as one HTML file.")


def num(value: float, digits: int) -> float:
    """`value` rounded, never `-0.0` (a change of -0.00001 reads as 0, not as a negative zero)."""
    rounded = round(float(value), digits)
    return rounded + 0.0 if rounded else 0.0


def _float(value: float, digits: int) -> dg.MetadataValue:
    return dg.MetadataValue.float(num(value, digits))


def _text(value: Any, width: int = CELL_CHARS) -> str:
    text = value if isinstance(value, str) else ("" if value is None else repr(value))
    return text if len(text) <= width else text[: width - 1] + "…"


def _cell(value: Any) -> str:
    """A Markdown table cell: pipes escaped, line breaks kept as <br>."""
    return _text(value).replace("\\", "\\\\").replace("|", "\\|").replace("\r", "").replace("\n", "<br>")


def dataset_metadata(run_id: str, size: int, source: str | None, evaluators: list[str],
                     version: str | None = None) -> dict[str, Any]:
    """`version`: the stored dataset version the run read (`qa@3`), when it read one."""
    return {
        "items": dg.MetadataValue.int(size),
        "source": dg.MetadataValue.text(source or "inline"),
        "evaluators": dg.MetadataValue.text(", ".join(evaluators)),
        "cobalt_run_id": dg.MetadataValue.text(run_id),
        **({"dataset_version": dg.MetadataValue.text(version)} if version else {}),
    }


def outputs_counts(total: int, statuses: Mapping[str, int]) -> dict[str, Any]:
    """What `outputs` reports: its items per status (counted in SQL: `Store.merged_counts`)."""
    return {
        "items": dg.MetadataValue.int(total),
        "ok": dg.MetadataValue.int(statuses.get("ok", 0)),
        "errors": dg.MetadataValue.int(statuses.get("error", 0)),
        "timeouts": dg.MetadataValue.int(statuses.get("timeout", 0)),
    }


def stored_counts_metadata(store: Store, run_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """What `outputs` and `scores` report of a stored run, counted in SQL, with the table of its
    first `TABLE_ROWS` items: no item beyond those is read, whatever the run's size."""
    from cobalt_lib.results import item_from_rows

    counts = store.merged_counts(run_id)
    outputs, scores = store.first_rows(run_id, TABLE_ROWS)
    by_key: dict[tuple[int, int], list[dict[str, Any]]] = {}
    for row in scores:
        by_key.setdefault((row["item_index"], row["run_index"]), []).append(row)
    first = [item_from_rows(o, by_key.get((o["item_index"], o["run_index"]), [])) for o in outputs]
    statuses = counts["statuses"]
    return (outputs_counts(sum(statuses.values()), statuses),
            scores_counts(counts["evaluators"], counts["judge_calls"], counts["cached"], first))


def scores_counts(totals: Mapping[str, Sequence[float]], judge_calls: int, cached: int,
                  first: Sequence[ItemResult]) -> dict[str, Any]:
    """What `scores` reports, from the totals (`{evaluator: [score sum, scored, eval-errors]}`) and the items
    the table shows (any that include the run's first `TABLE_ROWS`)."""
    data: dict[str, Any] = {}
    names = sorted(totals)
    for name in names:
        score_sum, scored, errors = totals[name]
        if scored:
            data[f"{name}_mean"] = _float(score_sum / scored, 3)
        data[f"{name}_eval_errors"] = dg.MetadataValue.int(int(errors))
    data["judge_calls"] = dg.MetadataValue.int(judge_calls)
    data["cached_scores"] = dg.MetadataValue.int(cached)
    data["items"] = items_table(first, names)
    return data


def items_table(items: Sequence[ItemResult], names: list[str]) -> dg.MetadataValue:
    """The items as Dagster's table metadata (the first `TABLE_ROWS`), so the Dagster UI shows them too."""
    columns = [dg.TableColumn("item", "string"), dg.TableColumn("status", "string"),
               dg.TableColumn("input", "string"), dg.TableColumn("expected", "string"),
               dg.TableColumn("output", "string")]
    columns += [dg.TableColumn(f"{name}", "float", description=f"score of {name}") for name in names]
    columns += [dg.TableColumn("first_reason", "string"), dg.TableColumn("latency_ms", "float")]
    records = []
    repeats = _repeats(items)
    for item in heapq.nsmallest(TABLE_ROWS, items, key=lambda i: (i.index, i.run_index)):
        row: dict[str, Any] = {
            "item": "#" + item_label(item.index, item.run_index, repeats), "status": item.status,
            "input": _text(item.input),
            "expected": _text(item.item.get("expected_output")),
            "output": _text(item.error if item.status != "ok" else item.output),
            "first_reason": _text(_first_reason(item)),
            "latency_ms": None if item.latency_ms is None else num(item.latency_ms, 1),
        }
        for name in names:
            ev = item.evaluations.get(name)
            row[name] = None if ev is None or ev.score is None else num(ev.score, 3)
        records.append(dg.TableRecord(row))  # every record has every field (None: no value)
    return dg.MetadataValue.table(records, dg.TableSchema(columns))


def aggregates_metadata(report: ExperimentReport, config: Config, previous: Previous | None) -> dict[str, Any]:
    """The run's statistics, gates and worst items, and its change against `previous` (`previous_report`)."""
    s = report.summary
    data: dict[str, Any] = {}
    for name, stats in s.scores.items():
        if stats.avg is not None:
            data[f"{name}_mean"] = _float(stats.avg, 3)
        if stats.pass_rate is not None:
            data[f"{name}_pass_rate_pct"] = _float(100 * stats.pass_rate, 1)
    latency = s.metrics.get("latency")
    if latency and latency.p95 is not None:
        data["latency_p95_ms"] = _float(latency.p95, 1)
    if latency and latency.p50 is not None:
        data["latency_p50_ms"] = _float(latency.p50, 1)
    for key, value in (("cost_usd", s.estimated_cost), ("agent_cost_usd", s.agent_cost),
                       ("judge_cost_usd", s.judge_cost)):
        if value is not None:
            data[key] = _float(value, 6)
    data["tokens"] = dg.MetadataValue.int(s.total_tokens)
    passed = sum(a.passed for a in report.assertions)
    data["gates_passed"] = dg.MetadataValue.int(passed)
    data["gates_failed"] = dg.MetadataValue.int(len(report.assertions) - passed)
    data["errors"] = dg.MetadataValue.int(s.errors + s.timeouts)
    data["cobalt_run_id"] = dg.MetadataValue.text(report.id)
    if report.variant is not None:  # a variant's partition: which variant, and its group's page
        data["cobalt_variant"] = dg.MetadataValue.text(report.variant)
        data["cobalt_group"] = dg.MetadataValue.text(str(report.group_id))
    data["run_page"] = dg.MetadataValue.url(run_page_url(config, report.id))
    data["run_page_note"] = dg.MetadataValue.text(PAGES_NOTE.format(run_id=report.id))
    if previous is not None:
        data["items_flipped"] = dg.MetadataValue.int(previous.items_flipped)
    data["worst_items"] = dg.MetadataValue.md(worst_items_table(report))
    data["diff_with_previous"] = dg.MetadataValue.md(diff_table(report, previous))
    return data


def _first_reason(item: ItemResult) -> str | None:
    """What went wrong first: the agent's error, else the first failing evaluation's reason or error."""
    if item.status != "ok":
        return item.error
    for name, ev in item.evaluations.items():
        if ev.status != "ok" or ev.passed is False:
            why = ev.error if ev.status != "ok" else ev.reason
            return f"{name}: {why}" if why else f"{name}: {'eval-error' if ev.status != 'ok' else 'not passed'}"
    return None


def _badness(item: ItemResult) -> tuple[int, float]:
    """Sort key, worst first: agent failures, then eval-errors, then the lowest mean score."""
    if item.status != "ok":
        return (0, 0.0)
    if any(ev.status != "ok" for ev in item.evaluations.values()):
        return (1, 0.0)
    scores = [ev.score for ev in item.evaluations.values() if ev.score is not None]
    return (2, sum(scores) / len(scores) if scores else 0.0)


def worst_items_table(report: ExperimentReport, limit: int = WORST_ROWS) -> str:
    """The `limit` worst items with input, expected and output, scores and the first reason; "N more"."""
    names = list(report.summary.scores)
    # One pass keeping `limit` items (nsmallest is sorted()[:limit]): a run's own items are on disk.
    candidates = top_repeat = 0

    def worth_showing() -> Iterator[ItemResult]:
        nonlocal candidates, top_repeat
        for item in report.items:
            top_repeat = max(top_repeat, item.run_index)  # the labels' repeats, in the same pass
            if _badness(item) < (2, 1.0) or _first_reason(item):
                candidates += 1
                yield item

    worst = heapq.nsmallest(limit, worth_showing(), key=_badness)
    repeats = 1 + top_repeat
    if not worst:
        return "_every item passed every evaluator_"
    lines = ["| item | status | input | expected | output | " + " | ".join(names) + " | first reason |",
             "|---|---|---|---|---|" + "---|" * len(names) + "---|"]
    for item in worst:
        cells = []
        for name in names:
            ev = item.evaluations.get(name)
            cells.append(UNKNOWN if ev is None else ("eval-error" if ev.status != "ok" else score(ev.score)))
        output = item.error if item.status != "ok" else item.output
        lines.append(f"| #{item_label(item.index, item.run_index, repeats)} | {item.status} | {_cell(item.input)} | "
                     f"{_cell(item.item.get('expected_output'))} | {_cell(output)} | " + " | ".join(cells)
                     + f" | {_cell(_first_reason(item))} |")
    rest = candidates - len(worst)
    if rest > 0:
        lines += ["", f"… and {rest} more (every item: the `items` table of `scores`, or the run page)."]
    return "\n".join(lines)


def previous_run(store: Store, experiment: str, run_id: str) -> dict[str, Any] | None:
    """The row of the experiment's newest completed run started before `run_id` (two reads: make them
    inside the step's `Store.reading()` block)."""
    previous = store.previous_completed_run(experiment, run_id)
    return store.get_run(previous) if previous is not None else None


def _repeats(items: Sequence[ItemResult]) -> int:
    """Repeats per item, as far as labels need it: 1, or more when any item has a run index above 0."""
    return 1 + max((i.run_index for i in items), default=0)


@dataclass(frozen=True)
class Previous:
    """What the metadata says of the experiment's previous completed run: its summary and the items that
    flipped between pass and fail since, counted in the store (no item of either run is read)."""

    id: str
    summary: Summary
    flips: dict[str, int]
    items_flipped: int


def previous_report(store: Store, run: dict[str, Any] | None, run_id: str) -> Previous | None:
    """`Previous` of `previous_run`'s row against the run `run_id` (its rows stored)."""
    if run is None:
        return None
    flipped, whole = store.pass_flips(run["run_id"], run_id)
    return Previous(run["run_id"], Summary.model_validate(run.get("summary") or {}), flipped, whole)


_METRIC_LABELS = {"latency": "latency", "cost": "cost", "tokens": "tokens"}


def diff_table(report: ExperimentReport, previous: Previous | None) -> str:
    """Per evaluator and run metric, the mean now against the experiment's previous completed run, and
    how many items flipped between pass and fail (a mean can stay put while items trade places)."""
    if previous is None:
        return "_first run of this experiment: nothing to compare with_"
    flipped = previous.flips
    lines = [f"Compared with run `{previous.id}`", "",
             "| metric | previous | now | change | items flipped pass/fail |", "|---|---|---|---|---|"]
    for name, stats in report.summary.scores.items():
        old = previous.summary.scores.get(name)
        lines.append(_diff_row(name, "", old.avg if old else None, stats.avg, str(flipped.get(name, 0))))
    for name, stats in report.summary.metrics.items():
        old = previous.summary.metrics.get(name)
        label = f"{_METRIC_LABELS.get(name, name)}, mean"
        lines.append(_diff_row(label, name, old.avg if old else None, stats.avg, ""))
    return "\n".join(lines)


def _diff_row(label: str, unit: str, old: float | None, new: float | None, flipped: str) -> str:
    """A score row (`unit` empty: three decimals) or a run metric's (`latency`, `cost`: with its unit)."""
    def fmt(value: float | None, sign: bool = False) -> str:
        if unit:
            return metric(unit, value, sign=sign)
        return delta(value) if sign else score(value)

    change = UNKNOWN if old is None or new is None else fmt(new - old, sign=True)
    return f"| {label} | {fmt(old)} | {fmt(new)} | {change} | {flipped} |"
