"""The run-group pages: `GET /groups/GROUP` (the variant grid and the items side by side, a page of them from
`?offset=N`) and `GET /groups/GROUP/items/N` (one item), and the group's report file. What they show is the
variants wing's (`cobalt_lib.variants.group_view`); this module parses the request and renders."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from aiohttp import web

from .._errors import ConfigError
from ..links import dagster_url
from ..variants._page import group_view
from ._render import HTML_HEADERS, render

if TYPE_CHECKING:
    from ..config._config import Config

#: The group page's own script (its styles are in the one stylesheet, pages.css).
GROUP_ASSETS = ("variants.js",)
#: The items a group's report file holds.
REPORT_ITEMS = 500


def add_group_routes(app: web.Application, config_key: web.AppKey[Config]) -> None:
    async def group_page(request: web.Request) -> web.Response:
        try:
            offset = int(request.query.get("offset") or 0)
        except ValueError:
            raise ConfigError("The group page's offset must be a number.") from None
        return await _page(request, offset=offset)

    async def group_item_page(request: web.Request) -> web.Response:
        try:
            index = int(request.match_info["index"])
        except ValueError:
            raise ConfigError("An item of a run group is its dataset index, a number.") from None
        return await _page(request, item=index)

    async def _page(request: web.Request, *, offset: int = 0, item: int | None = None) -> web.Response:
        config = request.app[config_key]
        view = await asyncio.to_thread(group_view, config, request.match_info["group_id"], offset=offset, item=item)
        body = render("group.html", extra=GROUP_ASSETS, dagster_home=dagster_url(config), **view)
        return web.Response(text=body, content_type="text/html", headers=HTML_HEADERS)

    app.add_routes([web.get("/groups/{group_id}", group_page),
                    web.get("/groups/{group_id}/items/{index}", group_item_page)])


def group_report_html(config: Config, ref: str) -> str:
    """The group page of `ref` as one self-contained file: the grid and the first REPORT_ITEMS items."""
    return render("group.html", static=True, extra=GROUP_ASSETS, dagster_home=None,
                  **group_view(config, ref, limit=REPORT_ITEMS))
