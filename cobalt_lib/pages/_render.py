"""Rendering the pages: Jinja2 templates with autoescaping on (outputs and reasons are untrusted text),
served with their stylesheet and script as files, or inlined into one self-contained report."""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from importlib.resources import files
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

from markupsafe import Markup, escape

from .. import _numbers as numbers

if TYPE_CHECKING:
    import jinja2

#: What the server's pages may load: their own script and stylesheet, and requests to their own API.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
#: The one stylesheet and the scripts (the labelling's are served by `_grading`).
STATIC_FILES = ("pages.css", "pages.js", "conversation.js", "trace.js", "variants.js")

#: The headers of every served HTML page.
HTML_HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}


def static_text(name: str) -> str:
    return files("cobalt_lib.pages").joinpath("static", name).read_text(encoding="utf-8")


@cache
def environment() -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("cobalt_lib.pages", "templates"),
                             autoescape=True, trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined)
    # Every number on a page goes through one of these filters, which are cobalt_lib._numbers.
    env.filters.update(score=numbers.score, delta=numbers.delta, interval=numbers.interval,
                       delta_interval=numbers.delta_interval, ms=numbers.duration, usd=numbers.money,
                       pct=numbers.percent, num=numbers.number, int=numbers.integer, fixed=numbers.fixed,
                       mark=numbers.threshold, day=fmt_day, metric=fmt_metric, code=code_spans)
    env.globals.update(score_class=score_class, link=link)
    return env


def code_spans(text: Any) -> Markup:
    """A message written for a terminal (`cobalt run --resume ID`), its backticked parts as `<code>`, the rest
    escaped as text."""
    parts = str(text or "").split("`")
    if len(parts) % 2 == 0:  # an odd backtick: not code, the text as it is
        return Markup(escape(str(text or "")))
    return Markup("").join(Markup("<code>{}</code>").format(p) if i % 2 else escape(p) for i, p in enumerate(parts))


def fmt_metric(metric: str, value: Any, sign: bool = False) -> str:
    """A run metric with its unit (`latency.p95` as `420ms`, `cost.mean` as `$0.0000695`), as `cobalt compare`
    prints it."""
    return numbers.metric(metric, value, sign=sign)


def fmt_day(value: Any) -> str:
    """`2026-11-23T20:43:24.84+00:00` -> `2026-11-23 20:43` (UTC, as stored)."""
    text = value.isoformat() if hasattr(value, "isoformat") else str(value or "")
    return text[:16].replace("T", " ")


def score_class(score: Any, mark: Any, name: str = "") -> str:
    """`pass` or `fail` against the evaluator's pass mark (its direction), `plain` without one."""
    from ..results._direction import lower_is_better

    if score is None or not isinstance(mark, int | float):
        return "plain"
    ok = score <= mark if lower_is_better(name) else score >= mark
    return "pass" if ok else "fail"


class Links:
    """Where the pages link each other: paths on the server. A report file (`static`) links nowhere: it is
    read where no `cobalt serve` runs (a CI artifact), so its links to other pages are plain text."""

    def __init__(self, *, static: bool = False) -> None:
        self.static = static

    def runs(self, **filters: str) -> str | None:
        query = urlencode({k: v for k, v in filters.items() if v})
        return self._path("/" + (f"?{query}" if query else ""))

    def run(self, run_id: str) -> str | None:
        return self._path(f"/runs/{quote(run_id, safe='')}")

    def compare(self, a: str, b: str) -> str | None:
        return self._path(f"/compare?{urlencode({'a': a, 'b': b})}")

    def group(self, group_id: str, offset: int = 0) -> str | None:
        return self._path(f"/groups/{quote(group_id, safe='')}" + (f"?offset={int(offset)}" if offset else ""))

    def group_item(self, group_id: str, index: int) -> str | None:
        return self._path(f"/groups/{quote(group_id, safe='')}/items/{int(index)}")

    def trends(self, experiment: str, tag: str = "") -> str | None:
        return self._path(f"/trends?{urlencode({'experiment': experiment, **({'tag': tag} if tag else {})})}")

    def _path(self, path: str) -> str | None:
        return None if self.static else path


def link(href: str | None, text: Any, **attrs: str) -> Markup:
    """`<a href=...>text</a>`, or the text alone (in a `<span>`) when there is nowhere to link."""
    extra = "".join(f' {k.rstrip("_")}="{escape(v)}"' for k, v in attrs.items())
    if href is None:
        return Markup(f"<span{extra}>{escape(text)}</span>")
    return Markup(f'<a href="{escape(href)}"{extra}>{escape(text)}</a>')


def render(template: str, *, static: bool = False, pages: str = "", extra: tuple[str, ...] = (),
           **context: Any) -> str:
    """A page; `static`: one self-contained file (stylesheet and script inline, allowed by their hashes).
    `extra`: the page's own scripts besides pages.js (`variants.js`)."""
    env = environment()
    assets: dict[str, Any] = {"static": static, "pages": pages, "links": Links(static=static),
                              "extra_js": list(extra)}
    if static:
        # one stylesheet and one script, each allowed by its hash: the extensions' scripts before pages.js (it
        # calls them), the page's own (`extra`) after it
        css = static_text("pages.css")
        js = "\n".join(static_text(n) for n in ("conversation.js", "trace.js", "pages.js", *assets["extra_js"]))
        if "</" in css + js:  # inline, either would end its <style> or <script> element early
            raise RuntimeError("the pages' stylesheets and scripts must not contain '</' (they are inlined in reports)")
        assets.update(inline_css=css, inline_js=js, csp=(
            f"default-src 'none'; script-src '{_sha256(js)}'; style-src '{_sha256(css)}'; img-src data:; "
            "base-uri 'none'; form-action 'none'"))
    return env.get_template(template).render(**assets, **context)


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()
