"""The pages' second write: a run's item added to a stored dataset from its detail (docs/datasets.md).

`POST /api/runs/RUN/items/N/dataset` with `{"dataset": NAME, "split": NAME?, "who": NAME?}` adds the item
as a new version of NAME, its origin the run, the item and who added it. The middleware (`_app`) already
refuses another Host, another Origin, a missing session and a missing or wrong CSRF token; as the label
write, it also answers only a client on this machine.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from aiohttp import web

from .._errors import CobaltError
from ..datasets import add_from_run
from ..grading._labels import who_default
from ..store import Store
from ._guard import is_loopback, json_body, person

if TYPE_CHECKING:
    from ..config._config import Config


def add_dataset_routes(app: web.Application, config_key: web.AppKey[Config]) -> None:
    async def add_api(request: web.Request) -> web.Response:
        if not is_loopback(request.remote):
            return web.json_response({"error": "items are added to datasets only from this machine"}, status=403)
        index = request.match_info["index"]
        body = await json_body(request)
        if not index.isdigit() or body is None or not isinstance(body.get("dataset"), str):
            return web.json_response({"error": 'send {"dataset": NAME} as JSON to /api/runs/RUN/items/INDEX/dataset'},
                                     status=400)
        config = request.app[config_key]
        split = body.get("split") if isinstance(body.get("split"), str) and body.get("split") else None
        who = person(body.get("who")) or who_default(config.root)
        try:
            outcome = await asyncio.to_thread(add_from_run, Store.for_config(config), body["dataset"].strip(),
                                              request.match_info["run_id"], [int(index)], split=split, who=who)
        except CobaltError as exc:
            return web.json_response({"error": str(exc)}, status=400)
        return web.json_response(outcome.model_dump(mode="json"), headers={"Cache-Control": "no-store"})

    app.add_routes([web.post("/api/runs/{run_id}/items/{index}/dataset", add_api)])
