"""Rendering the pages: Jinja2 templates with autoescaping on (outputs and reasons are untrusted text),
served with their stylesheet and script as files, or inlined into one self-contained report."""

from __future__ import annotations

import base64
import hashlib
from functools import cache
from importlib.resources import files
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode

if TYPE_CHECKING:
    import jinja2

#: What the server's pages may load: their own script and stylesheet, and requests to their own API.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
       "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
STATIC_FILES = ("pages.css", "pages.js")


def static_text(name: str) -> str:
    return files("cobalt_lib.pages").joinpath("static", name).read_text(encoding="utf-8")


@cache
def environment() -> jinja2.Environment:
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("cobalt_lib.pages", "templates"),
                             autoescape=True, trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.StrictUndefined)
    env.filters.update(score=fmt_score, ms=fmt_ms, usd=fmt_usd, pct=fmt_pct, num=fmt_num, day=fmt_day)
    env.globals.update(score_class=score_class)
    return env


def fmt_score(value: Any) -> str:
    return "–" if value is None else f"{value:.3f}"


def fmt_num(value: Any, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}g}" if isinstance(value, float) else f"{value:,}"


def fmt_ms(value: Any) -> str:
    if value is None:
        return "–"
    if 0 < value < 0.01:
        return "<0.01 ms"
    return f"{value / 1000:.2f} s" if value >= 1000 else f"{value:.0f} ms" if value >= 10 else f"{value:.2f} ms"


def fmt_usd(value: Any) -> str:
    return "–" if value is None else f"${value:.4f}" if value < 1 else f"${value:,.2f}"


def fmt_pct(value: Any) -> str:
    return "–" if value is None else f"{value * 100:.0f}%"


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
    """Where the pages link each other: paths on the server; in a report file, the served pages'
    absolute URLs (they open while `cobalt serve` runs)."""

    def __init__(self, base: str = "") -> None:
        self.base = base

    def runs(self, **filters: str) -> str:
        query = urlencode({k: v for k, v in filters.items() if v})
        return f"{self.base}/" + (f"?{query}" if query else "")

    def run(self, run_id: str) -> str:
        return f"{self.base}/runs/{quote(run_id, safe='')}"

    def compare(self, a: str, b: str) -> str:
        return f"{self.base}/compare?{urlencode({'a': a, 'b': b})}"

    def trends(self, experiment: str, tag: str = "") -> str:
        return f"{self.base}/trends?{urlencode({'experiment': experiment, **({'tag': tag} if tag else {})})}"


def render(template: str, *, static: bool = False, pages: str = "", **context: Any) -> str:
    """A page; `static`: one self-contained file (stylesheet and script inline, allowed by their hashes)."""
    env = environment()
    assets: dict[str, Any] = {"static": static, "pages": pages, "links": Links(pages if static else "")}
    if static:
        css, js = static_text("pages.css"), static_text("pages.js")
        if "</" in css + js:  # inline, either would end its <style> or <script> element early
            raise RuntimeError("pages.css and pages.js must not contain '</' (they are inlined into reports)")
        assets.update(inline_css=css, inline_js=js, csp=(
            f"default-src 'none'; script-src '{_sha256(js)}'; style-src '{_sha256(css)}'; img-src data:; "
            "base-uri 'none'; form-action 'none'"))
    return env.get_template(template).render(**assets, **context)


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()
