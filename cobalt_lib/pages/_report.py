"""`cobalt report`: the run page (or the compare page) as one self-contained HTML file, its data inside.

The file needs no server, fetches nothing and links to no server (it is read where none runs): the
stylesheet and the script are inline (allowed by their hashes in the page's Content-Security-Policy),
and the items are embedded as JSON, so the item table, its filters and the item detail work from
file:// as a CI artifact.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..results._repeats import by_index, flaky_text, item_label
from ..store._history import load_report
from ..store._store import Store
from ._charts import histogram
from ._compare import compare_view, drawn_rows, unpaired_json
from ._grading import run_page_calibrations
from ._queries import ITEMS_PER_PAGE, item_json, run_detail, trace_json
from ._render import render

if TYPE_CHECKING:
    from ..config._config import Config


def run_report_html(config: Config, ref: str) -> str:
    """The run page of `ref` with every item inside."""
    view = run_detail(config, ref)
    run = view["run"]
    report = load_report(Store.for_config(config), run["run_id"])
    repeats = int(report.config.get("runs") or 1)
    flaky = {index: text for index, group in by_index(report.items).items() if (text := flaky_text(group))}
    spans = Store.for_config(config).spans_of(run["run_id"])
    items = [item_json(i) | {"label": item_label(i.index, i.run_index, repeats), "flaky": flaky.get(i.index),
                             "trace": trace_json(spans.get((i.index, i.run_index), []))} for i in report.items]
    data = {"page": "run", "run_id": run["run_id"], "evaluators": view["evaluators"], "pass_marks": view["pass_marks"],
            "live": False, "api": None, "per_page": ITEMS_PER_PAGE, "items": items}
    # A file read anywhere (a CI artifact) links to no server: no Dagster UI, no check, no other page.
    view["gates"] = [{**g, "dagster": None} for g in view["gates"]]
    view.update(run_page_calibrations(config, run, view["gates"]))
    return render("run.html", static=True, data=data, hist=histogram, dagster_home=None, **view)


def compare_report_html(config: Config, baseline: str, ref: str) -> str:
    """The compare page of run `ref` against `baseline` with every paired item inside."""
    view = compare_view(config, baseline, ref)
    c = view["c"]
    data = {"page": "compare", "run_a": c.run_a, "run_b": c.run_b, "per_page": ITEMS_PER_PAGE, "api": None,
            "rows": drawn_rows(view, view["rows"]), "unpaired": unpaired_json(view["unpaired"])}
    view["dagster"] = {"a": None, "b": None}
    return render("compare.html", static=True, data=data, rows_total=len(view["rows"]), dagster_home=None,
                  summary=True, **view)


def write_report(config: Config, ref: str, path: Path, *, compare: str | None = None, group: bool = False) -> Path:
    """Write run `ref`'s page (with `compare`: the comparison of `ref` against baseline `compare`; with `group`,
    the page of the run group `ref`: its variant grid and items side by side) to `path`."""
    if group:
        from ._groups import group_report_html

        html = group_report_html(config, ref)
    else:
        html = compare_report_html(config, compare, ref) if compare else run_report_html(config, ref)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html, encoding="utf-8")
    return path
