"""The pages' grading adapter: what the run page shows of calibration (the grading wing's
`run_page_calibrations`), and the pages' one write, a person's label on an item, with what the labelling view
reads.

Routes: `GET /api/runs/RUN/labels` (the run's labels and each evaluator's scale), `GET
/api/runs/RUN/queue?evaluator=NAME` (the labelling order and progress), `POST /api/runs/RUN/items/N/label`
with `{"evaluator", "value", "note"}` (value null clears the label), and the view's script
under `/static/labels/`. The middleware (`_app._own_site_only`) already refuses another Host, another
Origin and a missing or wrong CSRF token; the write also answers only a client on this machine.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from aiohttp import web

from .._errors import ConfigError
from ..grading._calibration_view import run_page_calibrations as run_page_calibrations
from ..grading._labels import label_queue, run_labels, set_label
from ._guard import is_loopback, json_body, person
from ._render import static_text

if TYPE_CHECKING:
    from ..config._config import Config

#: The labelling view's own script (served pages only: a report file cannot write; its styles are in pages.css).
LABEL_FILES = {"labels.js": "text/javascript", "datasets.js": "text/javascript"}


def add_grading_routes(app: web.Application, config_key: web.AppKey[Config]) -> None:
    async def labels_api(request: web.Request) -> web.Response:
        run_id = request.match_info["run_id"]
        return web.json_response(await asyncio.to_thread(run_labels, request.app[config_key], run_id))

    async def queue_api(request: web.Request) -> web.Response:
        evaluator = request.query.get("evaluator", "")
        # ?second=NAME: a second opinion for NAME, the items only one other person labelled first
        queue = await asyncio.to_thread(label_queue, request.app[config_key], request.match_info["run_id"], evaluator,
                                        second_for=person(request.query.get("second")))
        return web.json_response({**queue.model_dump(mode="json"), "progress": queue.progress})

    async def label_api(request: web.Request) -> web.Response:
        if not is_loopback(request.remote):
            return web.json_response({"error": "labels are set only from this machine"}, status=403)
        index = request.match_info["index"]
        body = await json_body(request)
        if not index.isdigit() or body is None:
            return web.json_response({"error": 'send {"evaluator": NAME, "value": ..., "note": "..."} as JSON to '
                                               "/api/runs/RUN/items/INDEX/label"}, status=400)
        try:
            label = await asyncio.to_thread(set_label, request.app[config_key], request.match_info["run_id"],
                                            int(index), str(body.get("evaluator") or ""), body.get("value"),
                                            note=body.get("note") or "", who=person(body.get("who")))
        except ConfigError as exc:
            return web.json_response({"error": str(exc)}, status=400)
        return web.json_response({"label": label.model_dump(mode="json") if label else None},
                                 headers={"Cache-Control": "no-store"})

    async def static_api(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        if name not in LABEL_FILES:
            raise web.HTTPNotFound()
        return web.Response(text=static_text(name), content_type=LABEL_FILES[name],
                            headers={"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff"})

    app.add_routes([web.get("/api/runs/{run_id}/labels", labels_api), web.get("/api/runs/{run_id}/queue", queue_api),
                    web.post("/api/runs/{run_id}/items/{index}/label", label_api),
                    web.get("/static/labels/{name}", static_api)])
