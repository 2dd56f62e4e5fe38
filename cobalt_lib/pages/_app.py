"""The pages server: aiohttp on 127.0.0.1 (unless told otherwise), read-only against the store.

Routes: `/` runs list, `/runs/RUN` run detail (`#item=N` opens an item), `/compare?a=A&b=B`,
`/groups/GROUP` a run group's variant grid and items side by side (`/groups/GROUP/items/N`: one item),
`/trends?experiment=E&tag=T`, `/traces` production traces and `/traces/TRACE` one (`_traces`), and the
JSON the pages' script asks for under `/api/`
(`/api/csrf`: the token a write sends in `X-CSRF-Token`). Only the server's own loopback Host is
answered, and a request that changes state needs its own Origin and the token (`_guard`). Each request
reads through short read-only connections in a worker thread, so a page never holds the store's
file while a run in progress writes to it, and never blocks the event loop.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from aiohttp import web

from .._errors import CobaltError, ConfigError, StoreError
from ..links import dagster_url
from ..ops._session import PAGES_SESSION_FILE, pages_session
from ..store._store import Store
from ._charts import histogram
from ._compare import compare_head, compare_page, paired_view, summary_view, unpaired_page
from ._datasets import add_dataset_routes
from ._grading import add_grading_routes, run_page_calibrations
from ._groups import add_group_routes
from ._guard import CSRF_HEADER, SAFE_METHODS, host_allowed, refusal, token_matches
from ._queries import ITEMS_PER_PAGE, ItemQuery, RunFilters, item_detail, item_page, live_status, run_detail, runs_list
from ._render import HTML_HEADERS, STATIC_FILES, render, static_text
from ._served import ThreadedServer
from ._traces import add_trace_routes, worst_traces
from ._trends import trends_view

if TYPE_CHECKING:
    from ..config._config import Config

CONFIG: web.AppKey[Config] = web.AppKey("config")
COMPARES: web.AppKey[OrderedDict[tuple[str, str], dict[str, Any]]] = web.AppKey("compares")
CSRF_TOKEN: web.AppKey[str] = web.AppKey("csrf_token")
#: The user's session (`ops._session`): a write, and the CSRF token, need it in the `SESSION_COOKIE` cookie.
SESSION: web.AppKey[str] = web.AppKey("session")
SESSION_COOKIE = "cobalt_session"
#: The query parameter of the login link (`/?session=...`) that sets the cookie.
SESSION_PARAMETER = "session"
#: Comparisons of two finished runs kept in memory (they never change; big runs take a while to pair).
KEPT_COMPARES = 4
_TYPES = {".css": "text/css", ".js": "text/javascript"}
_COMPARING = threading.Lock()
_PAIR_LOCKS: dict[tuple[str, str], threading.Lock] = {}


def create_app(config: Config) -> web.Application:
    app = web.Application(middlewares=[_own_site_only, _errors])
    app[CONFIG] = config
    app[COMPARES] = OrderedDict()
    app[CSRF_TOKEN] = secrets.token_urlsafe(32)
    app[SESSION] = pages_session(config.output_path)
    app.add_routes([
        web.get("/", runs_page), web.get("/runs/{run_id}", run_page),
        web.get("/runs/{run_id}/items/{index}", item_link),
        web.get("/compare", compare_route), web.get("/compare/summary", compare_summary),
        web.get("/trends", trends_page), web.get("/healthz", healthz),
        web.get("/api/runs/{run_id}/items", items_api), web.get("/api/runs/{run_id}/items/{index}", item_api),
        web.get("/api/runs/{run_id}/live", live_api), web.get("/api/compare", compare_api),
        web.get("/api/csrf", csrf_api),
        web.get("/static/{name}", static_file),
    ])
    add_grading_routes(app, CONFIG)
    add_group_routes(app, CONFIG)
    add_dataset_routes(app, CONFIG)
    add_trace_routes(app, CONFIG)
    return app


def _html(body: str, status: int = 200) -> web.Response:
    return web.Response(text=body, status=status, content_type="text/html", headers=HTML_HEADERS)


@web.middleware
async def _own_site_only(request: web.Request, handler: Callable[[web.Request], Any]) -> web.StreamResponse:
    """Another Host (a DNS-rebinding page) gets 421 and nothing else; a request that changes state
    needs this server's own Origin and the CSRF token, else 403."""
    address = request.transport.get_extra_info("sockname") if request.transport else None
    bound, port = (str(address[0]), int(address[1])) if address else ("127.0.0.1", 0)
    host = request.headers.get("Host")
    if not host_allowed(host, port, bound):
        return _refused(*refusal(421, "Misdirected request (another Host)", port))
    if SESSION_PARAMETER in request.query and request.method == "GET":
        return _logged_in(request)
    needs_session = request.method not in SAFE_METHODS or request.path == "/api/csrf"
    if needs_session and not token_matches(request.cookies.get(SESSION_COOKIE), request.app[SESSION]):
        # loopback is not a user boundary: another local user reaches this port too, but not the user's session
        said = (f"Refused: a write needs your session; open the link `cobalt serve` printed (/?{SESSION_PARAMETER}="
                f"..., the secret in {PAGES_SESSION_FILE} under the output directory)")
        if request.path.startswith("/api/"):  # what the labelling view shows beside the label ("not saved: ...")
            return web.json_response({"error": said}, status=403, headers={"X-Content-Type-Options": "nosniff"})
        return _refused(403, said + ".\n")
    if request.method not in SAFE_METHODS:
        if request.headers.get("Origin", "").lower() != f"http://{(host or '').lower()}":
            return _refused(*refusal(403, "Refused: a write from another origin", port))
        if not token_matches(request.headers.get(CSRF_HEADER), request.app[CSRF_TOKEN]):
            return _refused(403, f"Refused: a write needs the {CSRF_HEADER} header (GET /api/csrf gives it).\n")
    response: web.StreamResponse = await handler(request)
    return response


def _logged_in(request: web.Request) -> web.Response:
    """The login link: its session, when right, becomes the cookie (HttpOnly, this site only); either way the
    browser goes on to the page without the secret in its address bar and history."""
    rest = {k: v for k, v in request.query.items() if k != SESSION_PARAMETER}
    response = web.Response(status=303, headers={"Location": request.path + (f"?{urlencode(rest)}" if rest else "")})
    if token_matches(request.query.get(SESSION_PARAMETER), request.app[SESSION]):
        response.set_cookie(SESSION_COOKIE, request.app[SESSION], httponly=True, samesite="Strict", path="/")
    response.headers["Referrer-Policy"] = "no-referrer"
    return response


def _refused(status: int, body: str) -> web.Response:
    return web.Response(status=status, text=body, headers={"X-Content-Type-Options": "nosniff"})


@web.middleware
async def _errors(request: web.Request, handler: Callable[[web.Request], Any]) -> web.StreamResponse:
    """A cobalt error (an unknown run, no store yet) is a page or JSON saying so, not a stack trace."""
    try:
        response: web.StreamResponse = await handler(request)
        return response
    except CobaltError as exc:
        status = 503 if isinstance(exc, StoreError) and "No results store" not in str(exc) else 404
        if request.path.startswith("/api/"):
            return web.json_response({"error": str(exc)}, status=status)
        title = "No runs yet" if "No results store" in str(exc) else "Not found"
        return _html(render("error.html", title=title, message=str(exc), dagster_home=None), status)


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    return await asyncio.to_thread(fn, *args)


def _config(request: web.Request) -> Config:
    return request.app[CONFIG]


async def healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def csrf_api(request: web.Request) -> web.Response:
    """The token a write sends in `X-CSRF-Token`: readable only by this server's own pages (another
    origin's script cannot read the answer, and another Host gets none)."""
    return web.json_response({"header": CSRF_HEADER, "token": request.app[CSRF_TOKEN]},
                             headers={"Cache-Control": "no-store"})


async def runs_page(request: web.Request) -> web.Response:
    try:
        filters = RunFilters.model_validate({k: v for k, v in request.query.items() if k in RunFilters.model_fields})
    except ValueError:
        raise ConfigError("The runs list's filters are malformed: offset must be a number.") from None
    view = await _call(runs_list, _config(request), filters)

    def query(**changes: Any) -> str:
        return urlencode({k: v for k, v in {**filters.model_dump(), **changes}.items() if v})

    return _html(render("runs.html", query=query, dagster_home=view["dagster_url"], **view))


async def run_page(request: web.Request) -> web.Response:
    config = _config(request)
    view = await _call(run_detail, config, request.match_info["run_id"])
    run = view["run"]
    view.update(await _call(run_page_calibrations, config, run, view["gates"]))
    view["worst_traces"] = await _call(worst_traces, config, run, view["evaluators"])
    data = {"page": "run", "run_id": run["run_id"], "evaluators": view["evaluators"], "pass_marks": view["pass_marks"],
            "live": view["entry"].status == "running", "api": f"/api/runs/{quote(run['run_id'], safe='')}",
            "per_page": ITEMS_PER_PAGE, "counts": f"{view['counts']['done']}/{view['counts']['scored']}"}
    return _html(render("run.html", data=data, hist=histogram, dagster_home=dagster_url(config), **view))


async def item_link(request: web.Request) -> web.Response:
    """`/runs/RUN/items/N`: the run page with item N's detail open."""
    run_id, index = request.match_info["run_id"], request.match_info["index"]
    raise web.HTTPFound(f"/runs/{quote(run_id, safe='')}#item={int(index) if index.isdigit() else 0}")


async def items_api(request: web.Request) -> web.Response:
    q = request.query
    try:
        query = ItemQuery(offset=int(q.get("offset") or 0), limit=int(q.get("limit") or ITEMS_PER_PAGE),
                          sort=q.get("sort") or "index", desc=q.get("desc") == "1", q=q.get("q") or "",
                          only=q.get("only") or "")
    except ValueError:
        return web.json_response({"error": "offset and limit must be numbers"}, status=400)
    page = await _call(item_page, _config(request), request.match_info["run_id"], query)
    return web.json_response(page)


async def item_api(request: web.Request) -> web.Response:
    index = request.match_info["index"]
    if not index.isdigit():
        return web.json_response({"error": f"item {index!r} is not an item index"}, status=400)
    return web.json_response(await _call(item_detail, _config(request), request.match_info["run_id"], int(index)))


async def live_api(request: web.Request) -> web.Response:
    return web.json_response(await _call(live_status, _config(request), request.match_info["run_id"]))


def _pair(config: Config, request: web.Request) -> tuple[str, str]:
    """`a` and `b`, or the two `run`s picked on the runs list (the older one the baseline A)."""
    picked = request.query.getall("run", [])
    if len(picked) == 2:
        store = Store.for_config(config)
        runs = sorted((store.require_run(r) for r in picked), key=lambda r: r["started_at"])
        return runs[0]["run_id"], runs[1]["run_id"]
    a, b = request.query.get("a"), request.query.get("b")
    if not a or not b:
        raise ConfigError("Compare needs two runs: /compare?a=BASELINE&b=RUN, or pick two on the runs list.")
    return a, b


def _compared(app: web.Application, a: str, b: str, *, summary: bool = False) -> dict[str, Any]:
    """Runs `a` and `b` paired and ranked (`summary`: with the statistics too), from memory when both are
    finished and were compared before. The item list asks first and the statistics after, so the first rows
    never wait for the paired bootstrap intervals."""
    kept = app[COMPARES]
    with _COMPARING:  # one lock per pair: a reload while a big pair is being compared waits for it
        lock = _PAIR_LOCKS.setdefault((a, b), threading.Lock())
    with lock:
        if (a, b) in kept:
            kept.move_to_end((a, b))
            view = kept[(a, b)]
        else:
            view = paired_view(app[CONFIG], a, b)
            if (view["run_a"], view["run_b"]) == (a, b) and set(view["statuses"].values()) == {"completed"}:
                kept[(a, b)] = view
                while len(kept) > KEPT_COMPARES:
                    kept.popitem(last=False)
        if summary and "outcome" not in view:
            view.update(summary_view(view))
        return view


async def compare_route(request: web.Request) -> web.Response:
    """The page at once (the two runs, nothing of their items read): its script asks for the ranked items, then
    for the statistics (`/compare/summary`), which a big pair takes seconds to compute."""
    config = _config(request)
    a, b = await _call(_pair, config, request)
    head = await _call(compare_head, config, a, b)
    pair = urlencode({"a": head["run_a"], "b": head["run_b"]})
    data = {"page": "compare", "run_a": head["run_a"], "run_b": head["run_b"], "per_page": ITEMS_PER_PAGE,
            "api": f"/api/compare?{pair}", "summary": f"/compare/summary?{pair}"}
    return _html(render("compare.html", data=data, rows_total=None, changed=None, unpaired=None, summary=False,
                        summary_url=data["summary"], dagster_home=dagster_url(config), **head))


async def compare_summary(request: web.Request) -> web.Response:
    """The compare page's statistics (verdicts, paired intervals, warnings, agreement, conversations), the
    server's own escaped markup for the page's script to put in place."""
    a, b = await _call(_pair, _config(request), request)
    view = await _call(lambda: _compared(request.app, a, b, summary=True))
    return _html(render("compare_summary.html", **view))


async def compare_api(request: web.Request) -> web.Response:
    q = request.query
    a, b = await _call(_pair, _config(request), request)
    view = await _call(_compared, request.app, a, b)
    try:
        offset, limit = int(q.get("offset") or 0), int(q.get("limit") or ITEMS_PER_PAGE)
    except ValueError:
        return web.json_response({"error": "offset and limit must be numbers"}, status=400)
    changed = q.get("changed") == "1"
    if q.get("list") == "unpaired":
        return web.json_response(unpaired_page(view["unpaired"], offset=offset, limit=limit), dumps=_dumps)
    page = await _call(lambda: compare_page(view, offset=offset, limit=limit, changed_only=changed)
                       | {"unpaired_total": len(view["unpaired"])})
    return web.json_response(page, dumps=_dumps)


def _dumps(value: Any) -> str:
    import json

    return json.dumps(value, default=str, ensure_ascii=False)


async def trends_page(request: web.Request) -> web.Response:
    config = _config(request)
    view = await _call(trends_view, config, request.query.get("experiment", ""), request.query.get("tag", ""))
    return _html(render("trends.html", dagster_home=dagster_url(config), **view))


async def static_file(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    if name not in STATIC_FILES:
        raise web.HTTPNotFound()
    return web.Response(text=static_text(name), content_type=_TYPES[name[name.rindex("."):]],
                        headers={"Cache-Control": "no-cache"})


class PagesServer(ThreadedServer):
    """The pages served from a background thread (its own event loop): `cobalt serve` runs it beside
    the Dagster webserver; tests run it in process. `start()` returns the URL once it listens."""

    thread_name = "cobalt-pages"

    def __init__(self, config: Config, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__(host, port)
        self.config = config

    def application(self) -> web.Application:
        return create_app(self.config)

    @property
    def login_url(self) -> str:
        """The URL that opens the pages with the user's session (its writes: labels)."""
        return f"{self.url}/?{SESSION_PARAMETER}={pages_session(self.config.output_path)}"

    def taken(self, error: BaseException) -> str:
        return (f"Cannot serve cobalt's pages on {self.host}:{self.port}: {error}; "
                "pass --pages-port another port (or set [dashboard] pages_port).")
