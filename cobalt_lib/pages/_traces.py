"""The production traces' pages (docs/monitors.md).

Routes: `/traces` the stored traces, newest first, paged in SQL (`?offset=`), filtered by `?service=` and by
`?monitor=` (the traces that monitor's windows scored); `/traces/TRACE` one trace: its input, output,
conversation, tool calls, model, tokens and cost, and its span tree as an item's detail draws it
(`trace.js`); and `POST /api/traces/TRACE/dataset` with `{"dataset": FILE_OR_NAME, "expected": TEXT?,
"who": NAME?}`, the page's "Add to dataset" form. The write calls `monitor.add_trace`, the use case
`cobalt traces add` calls: a .jsonl file inside the project is appended to, a stored dataset's name gets a
new version. The middleware (`_app`) already refuses another Host, another Origin, a missing session and
a missing or wrong CSRF token; as the other writes, it also answers only a client on this machine.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from aiohttp import web

from .._errors import CobaltError
from ..grading._labels import who_default
from ..links import dagster_url
from ..monitor import add_trace, load_trace, read_trace
from ..monitor._trace import from_summary
from ..store import Store
from ._guard import is_loopback, json_body, person
from ._queries import trace_json
from ._render import HTML_HEADERS, render

if TYPE_CHECKING:
    from ..config._config import Config
    from ..monitor import ProductionTrace

#: Traces a page of the list shows.
TRACES_PER_PAGE = 50
#: How much of a trace's input and output the list shows.
_SHORT = 120


def trace_list_view(config: Config, *, service: str = "", monitor: str = "", offset: int = 0) -> dict[str, Any]:
    """A page of the stored traces, newest first (one more asked for than shown: whether a next page exists),
    each with its input and output in short, read from its summary when it has one."""
    store = Store.for_config(config)
    with store.reading():
        listed = store.trace_list(service=service or None, monitor=monitor or None, limit=TRACES_PER_PAGE + 1,
                                  offset=offset)
        more, listed = len(listed) > TRACES_PER_PAGE, listed[:TRACES_PER_PAGE]
        ids = [row["trace_id"] for row in listed]
        summaries = store.trace_summaries_of(ids, columns=("input", "output", "failed"))
        counts = {row["trace_id"]: row["spans"] for row in listed}
        # a summary read from as many spans as the trace has stands for it (as a window's scoring reads them)
        whole = {t: row for t, rows in summaries.items() for row in rows if row["spans"] == counts[t]}
        spans = store.trace_spans_of([t for t in ids if t not in whole])
        filters = store.trace_filters()
    rows = []
    for row in listed:
        tid = row["trace_id"]
        trace = (from_summary(whole[tid], service=row["service"]) if tid in whole
                 else read_trace(tid, spans.get(tid, []), service=row["service"]))
        rows.append({"trace_id": tid, "service": row["service"], "spans": row["spans"],
                     "started": _when(row["start_ns"]), "failed": trace.failed, "input": _short(trace.input),
                     "output": _short(trace.output)})
    return {"traces": rows, "service": service, "monitor": monitor, "offset": offset, "more": more,
            "per_page": TRACES_PER_PAGE, **filters}


def trace_view(config: Config, trace_id: str) -> dict[str, Any]:
    """One trace as its page shows it; an unknown id is a ConfigError (the page says so, 404)."""
    trace = load_trace(config, trace_id)
    store = Store.for_config(config)
    datasets = sorted({str(v["dataset"]) for v in store.dataset_versions()}) if store.exists() else []
    return {"trace": trace, "started": _when(trace.start_ns), "input": _text(trace.input),
            "output": _text(trace.output), "usage": _usage(trace), "datasets": datasets,
            "data": {"page": "trace", "trace_id": trace.trace_id, "spans": trace_json(trace.spans),
                     "api": f"/api/traces/{quote(trace.trace_id, safe='')}/dataset"}}


def worst_traces(config: Config, run: dict[str, Any], evaluators: list[str]) -> dict[str, list[dict[str, Any]]]:
    """A monitor window's run: per evaluator, its worst-scored traces (`WORST`, as the drift alert lists
    them), each opening its trace page. Any other run has none."""
    if run.get("source") != "monitor":
        return {}
    from ..monitor._checks import WORST
    from ..results._direction import lower_is_better

    store = Store.for_config(config)
    with store.reading():
        return {name: found for name in evaluators
                if (found := store.worst_items(run["run_id"], name, WORST, lower_is_better=lower_is_better(name)))}


def _usage(trace: ProductionTrace) -> dict[str, Any]:
    usage = trace.usage
    return {"model": usage.get("model") or ", ".join(sorted(trace.tokens)) or None,
            "llm_calls": usage.get("llm_calls"), "input_tokens": usage.get("input_tokens"),
            "output_tokens": usage.get("output_tokens"), "cost_usd": usage.get("cost_usd")}


def _when(start_ns: Any) -> str:
    return datetime.fromtimestamp(int(start_ns or 0) / 1e9, UTC).isoformat()


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=1, default=str)


def _short(value: Any) -> str:
    text = " ".join((_text(value) or "").split())
    return text if len(text) <= _SHORT else text[:_SHORT - 1] + "…"


def _html(body: str) -> web.Response:
    return web.Response(text=body, content_type="text/html", headers=HTML_HEADERS)


def add_trace_routes(app: web.Application, config_key: web.AppKey[Config]) -> None:
    async def list_page(request: web.Request) -> web.Response:
        q = request.query
        offset = int(q["offset"]) if q.get("offset", "").isdigit() else 0
        service, monitor = q.get("service", "").strip(), q.get("monitor", "").strip()
        config = request.app[config_key]
        view = await asyncio.to_thread(lambda: trace_list_view(config, service=service, monitor=monitor,
                                                               offset=offset))

        def page(at: int) -> str:
            return "/traces?" + urlencode({k: v for k, v in {"service": service, "monitor": monitor,
                                                              "offset": at}.items() if v})

        return _html(render("traces.html", page=page, dagster_home=dagster_url(config), **view))

    async def trace_page(request: web.Request) -> web.Response:
        config = request.app[config_key]
        view = await asyncio.to_thread(trace_view, config, request.match_info["trace_id"])
        return _html(render("trace.html", extra=("labels/datasets.js",), dagster_home=dagster_url(config), **view))

    async def add_api(request: web.Request) -> web.Response:
        if not is_loopback(request.remote):
            return web.json_response({"error": "traces are added to datasets only from this machine"}, status=403)
        body = await json_body(request)
        if body is None or not isinstance(body.get("dataset"), str):
            return web.json_response({"error": 'send {"dataset": FILE_OR_NAME} as JSON to '
                                               "/api/traces/TRACE/dataset"}, status=400)
        config = request.app[config_key]
        expected = body.get("expected") if isinstance(body.get("expected"), str) and body["expected"] else None
        try:
            added = await asyncio.to_thread(add_trace, config, request.match_info["trace_id"], body["dataset"],
                                            expected=expected, inside=config.root,
                                            who=person(body.get("who")) or who_default(config.root))
        except CobaltError as exc:
            return web.json_response({"error": str(exc)}, status=400)
        return web.json_response({"item": added.item["id"], "where": added.where, "added": added.added,
                                  "version": added.version}, headers={"Cache-Control": "no-store"})

    app.add_routes([web.get("/traces", list_page), web.get("/traces/{trace_id}", trace_page),
                    web.post("/api/traces/{trace_id}/dataset", add_api)])
