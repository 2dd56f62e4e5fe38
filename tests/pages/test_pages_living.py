"""Pages a person can live in, in a real Chromium: the keyboard alone opens a run, sorts it by a score,
opens the third failing item, closes it, searches, and Back lands where it was (the state is in the
address); every page at 375, 1280 and 1920 px, light and dark, overflows nothing sideways (screenshots
in test-screenshots/); trends draw run order, thresholds and per-metric gate marks; compare shows the
changed items by default and pages every list; the item detail starts with the item's own fields,
each evaluator's traceback under its own heading, and search matches values, not field names."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import httpx
import pytest
from browser import screenshot
from pages_project import COBALT, Served
from playwright.sync_api import expect

from cobalt_lib import load_config
from cobalt_lib.pages import PagesServer

pytestmark = pytest.mark.slow

LONG = "customer-support-escalation-routing-with-a-very-long-descriptive-experiment-name-v2"
EXPERIMENT = '''
import os
from cobalt_lib import Dataset, Evaluator, experiment, threshold

N = int(os.environ["N"])
WRONG = int(os.environ.get("WRONG", "7"))
COUNTRIES = ["France", "Japan", "Brazil", "Kenya", "Canada"]
items = [{"input": {"question": f"What is the capital of {COUNTRIES[i % 5]}? (#{i})", "country": COUNTRIES[i % 5]},
          "expected_output": f"answer {i}", "context": f"atlas page {i}", "metadata": {"topic": "geography"}}
         for i in range(N)]


def picky(ctx):
    if ctx.index == 5:
        raise ValueError("picky cannot judge item five")
    return 1.0 if ctx.index % 4 else 0.25


@experiment(os.environ["NAME"], Dataset(items), max_error_rate=0.5,
            evaluators=[Evaluator(name="exact", type="exact-match"),
                        Evaluator(name="picky", type="function", fn=picky, threshold=0.5)],
            assertions=[threshold("exact", 0.86)])
def agent(ctx):
    if ctx.index % 11 == 10:
        raise RuntimeError("the tool timed out")
    return "I do not know" if ctx.index % WRONG == 3 else f"answer {ctx.index}"
'''


def _run(root: Path, name: str, items: int, wrong: int, tag: str) -> str:
    done = subprocess.run([COBALT, "run", "--json", "--no-dagster", "--add-tag", tag], cwd=root, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL,
                          env={"PATH": str(Path(COBALT).parent), "HOME": str(root), "NAME": name, "N": str(items),
                               "WRONG": str(wrong)})
    assert done.returncode in (0, 1), done.stderr
    return str(json.loads(done.stdout)[0]["id"])


@pytest.fixture(scope="module")
def lived(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """Eight runs over three experiments: geo-bot four times (in the same minute), the long-named one
    twice, and a 6,000-item run twice (made by the library in about a second each)."""
    root = tmp_path_factory.mktemp("lived")
    (root / "experiments").mkdir()
    (root / "experiments" / "geo.cobalt.py").write_text(EXPERIMENT)
    runs = [_run(root, "geo-bot", 60, wrong, tag) for wrong, tag in ((7, "baseline"), (5, "candidate"),
                                                                     (7, "nightly"), (6, "nightly"))]
    runs += [_run(root, LONG, 80, wrong, "support") for wrong in (7, 9)]
    runs += [_run(root, "big", 6000, wrong, "load") for wrong in (7, 5)]
    server = PagesServer(load_config(root))
    url = server.start()
    yield Served(root=root, url=url, runs=runs)
    server.stop()


def _state(url: str) -> tuple[dict[str, list[str]], str]:
    parsed = urlparse(url)
    return parse_qs(parsed.query), parsed.fragment


def _tab_to(page: Any, selector: str, limit: int = 80) -> None:
    """Tab until `selector` has the focus (keyboard only: no click)."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("(s) => document.activeElement && document.activeElement.matches(s)", selector):
            return
    raise AssertionError(f"Tab never reached {selector}")


def test_the_keyboard_alone_sorts_opens_closes_searches_and_back_lands_where_it_was(lived: Served, page) -> None:
    run = lived.runs[3]  # geo-bot's newest
    lived.go(page, "/?experiment=geo-bot")
    page.keyboard.press("j")  # the first run (newest first)
    expect(page.locator("#runs tbody tr").first).to_be_focused()
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/runs/{run}")
    page.locator("#item-table tr.item-row").first.wait_for()

    _tab_to(page, "th[data-sort='score:picky'] button")
    page.keyboard.press("Enter")  # ascending: the worst first
    expect(page.locator("th[data-sort='score:picky']")).to_have_attribute("aria-sort", "ascending")
    page.keyboard.press("f")  # failures only
    expect(page.locator("#item-filter")).to_have_value("failures")
    api = httpx.get(f"{lived.url}/api/runs/{run}/items",
                    params={"sort": "score:picky", "only": "failures", "limit": "50"}).json()
    third = api["items"][2]["index"]
    expect(page.locator("#item-table tr.item-row").nth(2)).to_have_attribute("data-index", str(third))
    for _ in range(3):
        page.keyboard.press("j")
    expect(page.locator("#item-table tr.item-row").nth(2)).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#detail h2")).to_contain_text(f"Item #{third}")
    query, fragment = _state(page.url)
    assert query == {"sort": ["score:picky"], "only": ["failures"]} and fragment == f"item={third}"
    sorted_failures = page.url

    page.keyboard.press("Escape")  # closes the item; the focus goes back to its row
    expect(page.locator("#detail")).to_be_hidden()
    expect(page.locator(f"#item-table tr.item-row[data-index='{third}']")).to_be_focused()
    before_search = page.url
    assert _state(before_search) == ({"sort": ["score:picky"], "only": ["failures"]}, "")

    page.keyboard.press("/")
    expect(page.locator("#item-search")).to_be_focused()
    page.keyboard.type("Japan")
    page.keyboard.press("Enter")
    expect(page.locator("#item-table tr.item-row").first).to_contain_text("Japan")
    rows = page.locator("#item-table tr.item-row")
    assert all("Japan" in rows.nth(i).inner_text() for i in range(rows.count()))
    assert _state(page.url)[0] == {"sort": ["score:picky"], "only": ["failures"], "q": ["Japan"]}

    page.go_back()  # lands where it was: sorted, failures only, no search, the item closed
    expect(page.locator("#item-search")).to_have_value("")
    assert page.url == before_search
    expect(page.locator("#item-table tr.item-row").nth(2)).to_have_attribute("data-index", str(third))
    expect(page.locator("#item-filter")).to_have_value("failures")
    expect(page.locator("#detail")).to_be_hidden()
    page.go_back()  # one more: the item open again
    assert page.url == sorted_failures
    expect(page.locator("#detail h2")).to_contain_text(f"Item #{third}")
    # A shared link opens the same state in a new page.
    other = page.context.new_page()
    other.goto(sorted_failures)
    expect(other.locator("#detail h2")).to_contain_text(f"Item #{third}")
    expect(other.locator("#item-filter")).to_have_value("failures")
    other.close()

    page.keyboard.press("?")
    expect(page.locator("#shortcuts")).to_be_visible()
    assert "search the items" in page.locator("#shortcuts").inner_text()
    page.keyboard.press("Escape")
    expect(page.locator("#shortcuts")).to_be_hidden()
    screenshot(page, "living-keyboard-item-open")


def test_the_item_detail_starts_with_the_items_fields_and_search_matches_values(lived: Served, page) -> None:
    run = lived.runs[3]
    lived.go(page, f"/runs/{run}#item=5")
    detail = page.locator("#detail .repeat").first
    detail.wait_for()
    headings = detail.locator(".item-fields h4").all_inner_texts()
    assert headings == ["Input", "Expected output", "Context", "Metadata"]
    assert "atlas page 5" in detail.locator("pre.item-context").inner_text()
    # picky raised on item 5: its traceback under its own heading, not under "raw judge answer"
    picky = detail.locator(".evaluation[data-evaluator='picky']")
    assert picky.locator("details.evaluator-traceback summary").inner_text() == "picky: traceback"
    assert "ValueError: picky cannot judge item five" in picky.locator("pre.traceback").inner_text()
    assert "raw judge answer" not in detail.inner_text()
    # `country` is a field name of every input: no item matches it; `Kenya` is a value of 12 of 60.
    assert httpx.get(f"{lived.url}/api/runs/{run}/items", params={"q": "country"}).json()["total"] == 0
    assert httpx.get(f"{lived.url}/api/runs/{run}/items", params={"q": "kenya"}).json()["total"] == 12


def test_compare_shows_changed_items_by_default_and_pages_the_unpaired(lived: Served, page) -> None:
    a, b = lived.runs[0], lived.runs[1]
    lived.go(page, f"/compare?a={a}&b={b}")
    expect(page.locator("#changed-only")).to_be_checked()
    page.locator(".pair").first.wait_for()
    changed = httpx.get(f"{lived.url}/api/compare", params={"a": a, "b": b, "changed": "1"}).json()
    assert page.locator(".pair").count() == changed["total"] < 60
    assert page.locator("#unchanged-note").inner_text() == f"({changed['unchanged']} unchanged hidden)"
    page.keyboard.press("c")  # every item
    expect(page.locator("#changed-only")).not_to_be_checked()
    expect(page.locator(".pair")).to_have_count(50)  # one page
    assert _state(page.url)[0].get("all") == ["1"]
    # Across experiments almost nothing pairs: thousands of unpaired items, fifty a page.
    geo, big = lived.runs[3], lived.runs[7]
    total = httpx.get(f"{lived.url}/api/compare", params={"a": geo, "b": big, "list": "unpaired"}).json()["total"]
    assert total > 5000
    lived.go(page, f"/compare?a={geo}&b={big}")
    rows = page.locator("#unpaired tbody tr")
    expect(rows).to_have_count(50)
    assert page.locator("#unpaired-list .count").inner_text() == f"1–50 of {total:,}"
    page.locator("#unpaired-list button.next").click()
    expect(page.locator("#unpaired-list .count")).to_have_text(f"51–100 of {total:,}")
    assert _state(page.url)[0].get("unpaired") == ["50"]


def test_trends_draw_run_order_thresholds_and_gate_marks_per_metric(lived: Served, page) -> None:
    lived.go(page, "/trends?experiment=geo-bot")
    exact = page.locator(".chart[data-chart='exact']")
    labels = exact.locator("svg text").evaluate_all("ts => ts.map(t => t.textContent)")
    assert {"#1", "#2", "#3", "#4"} <= set(labels)  # four runs of one minute, four places
    assert exact.locator("line.threshold").count() == 1  # exact >= 0.86
    assert exact.locator("circle.gate-failed").count() >= 2
    # The failed gates are on exact and the error rate: picky's and latency's charts mark no run.
    assert page.locator(".chart[data-chart='picky'] circle.gate-failed").count() == 0
    assert page.locator(".chart[data-chart='latency p95'] circle.gate-failed").count() == 0
    ticks = [t for t in labels if "." in t]
    assert ticks == ["0.00", "0.25", "0.50", "0.75", "1.00"]
    title = exact.locator("a.point circle title").first.text_content() or ""
    assert title.startswith("run #1 · ") and " UTC · mean " in title
    width = exact.locator("svg").evaluate("e => e.getBoundingClientRect().width")
    assert width > 500  # the chart fills its card


OVERFLOW = """() => {
  const vw = document.documentElement.clientWidth, bad = [];
  const name = (e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '')
    + (typeof e.className === 'string' && e.className ? '.' + e.className.split(' ').join('.') : '');
  const root = document.documentElement;
  if (root.scrollWidth > vw) bad.push('document ' + root.scrollWidth + ' > ' + vw);
  const clips = (e) => {
    for (let p = e.parentElement; p; p = p.parentElement) if (getComputedStyle(p).overflowX !== 'visible') return true;
    return false;
  };
  for (const e of document.querySelectorAll('body *')) {
    if (e.closest('svg') && e.tagName.toLowerCase() !== 'svg') continue;
    const s = getComputedStyle(e);
    if (['none', 'inline', 'contents'].includes(s.display) || s.position === 'fixed') continue;
    const control = ['SELECT', 'INPUT', 'TEXTAREA'].includes(e.tagName);  // clips its own text natively
    if (!control && s.overflowX === 'visible' && e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1)
      bad.push(name(e) + ' content ' + e.scrollWidth + ' > its width ' + e.clientWidth);
    const r = e.getBoundingClientRect();
    if (r.width > 0 && r.right > vw + 1 && !clips(e))
      bad.push(name(e) + ' ends at ' + Math.round(r.right) + ' > ' + vw);
  }
  return bad.slice(0, 15);
}"""


# A phone in both schemes (where things overflow), a laptop and a wide screen in one each: every width and
# every scheme is seen, at two thirds of the browser time of the full product.
@pytest.mark.parametrize(("width", "scheme"), [(375, "light"), (375, "dark"), (1280, "light"), (1920, "dark")])
def test_every_page_fits_its_width_in_light_and_dark(lived: Served, browser, width: int, scheme: str) -> None:
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    geo, big = lived.runs[3], lived.runs[7]
    pages = {"runs": "/", "run": f"/runs/{geo}", "run-item": f"/runs/{geo}#item=5", "run-big": f"/runs/{big}",
             "compare": f"/compare?a={lived.runs[0]}&b={lived.runs[1]}",
             "compare-long": f"/compare?a={lived.runs[4]}&b={lived.runs[5]}",
             "compare-experiments": f"/compare?a={geo}&b={big}",
             "trends": "/trends?experiment=geo-bot", "trends-long": f"/trends?experiment={LONG}",
             "error": "/runs/no-such-run"}
    try:
        for name, path in pages.items():
            page.goto(lived.url + path)
            ready = {"run": "#item-table tr.item-row", "run-big": "#item-table tr.item-row",
                     "run-item": "#detail .repeat", "compare": ".pair", "compare-long": ".pair",
                     "compare-experiments": "#unpaired tbody tr"}.get(name)
            if ready:
                page.locator(ready).first.wait_for()
            assert page.evaluate("getComputedStyle(document.body).backgroundColor") == (
                "rgb(16, 20, 28)" if scheme == "dark" else "rgb(247, 248, 250)")
            overflowing = page.evaluate(OVERFLOW)
            assert overflowing == [], f"{name} at {width}px ({scheme}) overflows: {overflowing}"
            screenshot(page, f"living-{name}-{width}-{scheme}")
        # The runs list fits: its last column (Dagster) is on screen, the long name shortened.
        if width >= 1280:
            page.goto(lived.url + "/")
            right = page.evaluate("document.querySelector('#runs thead th:last-child').getBoundingClientRect().right")
            assert right <= width
            cell = page.locator(f"#runs a.ellipsis[title='{LONG}']").first
            assert cell.evaluate("e => e.scrollWidth > e.clientWidth")  # cut, with the whole name on hover
    finally:
        context.close()


def test_the_theme_toggle_and_the_numbers_match_the_python_module(lived: Served, page) -> None:
    lived.go(page, "/")
    toggle = page.locator("#theme-toggle")
    expect(toggle).to_have_text("theme: auto")
    toggle.click()
    expect(toggle).to_have_text("theme: light")
    toggle.click()
    assert page.evaluate("document.documentElement.getAttribute('data-theme')") == "dark"
    page.reload()  # the choice is kept
    assert page.evaluate("document.documentElement.getAttribute('data-theme')") == "dark"
    from cobalt_lib import _numbers as n

    values = [None, 0.0, 3.47e-05, 0.00318, 5.0, 420.4, 999.6, 4240.0, 2500.0, 125_000.0, 3_725_000.0, -2500.0,
              6.95e-06, 0.0123, 0.5, 12.3456, 12345.678, 0.6666666666666666, 1.0, 0.0004, -0.02, 0.143]
    for js, py in (("ms", n.duration), ("usd", n.money), ("pct", n.percent), ("score", n.score), ("delta", n.delta)):
        shown = page.evaluate(f"(vs) => vs.map((v) => window.cobaltNumbers.{js}(v))", values)
        assert shown == [py(v) for v in values], js
