"""The pages tell the truth: item links land on their detail once the table is drawn, run metrics sit in the
compare table with their units, an unknown cost reads `–` (never `$0`) everywhere, the JSON API says 404 for an
unknown run, and items flaky across repeats are marked on the run and compare pages."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pages_project import COBALT, Served, served  # noqa: F401  (the shared served-project fixture)
from playwright.sync_api import expect

from cobalt_lib import Store, load_config
from cobalt_lib.pages import PagesServer

pytestmark = pytest.mark.slow

REPEATED = '''
import os
from cobalt_lib import Dataset, Evaluator, experiment

@experiment("repeated", Dataset([{"input": f"q{i}", "expected_output": f"a{i}"} for i in range(5)]),
            runs=int(os.environ.get("RUNS", "1")), evaluators=[Evaluator(name="exact", type="exact-match")])
def agent(ctx):
    return "wrong" if ctx.index == 3 and ctx.run_index == 0 else ctx.item["expected_output"]
'''


@pytest.fixture(scope="module")
def repeated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """Two runs of `repeated`: one without repeats, then one with 3 (item 3 passes 2 of them)."""
    root = tmp_path_factory.mktemp("repeated")
    (root / "experiments").mkdir()
    (root / "experiments" / "repeated.cobalt.py").write_text(REPEATED)
    runs = []
    for count in ("1", "3"):
        done = subprocess.run([COBALT, "run", "--json", "--no-dagster"], cwd=root, capture_output=True, text=True,
                              timeout=120, env={"PATH": str(Path(COBALT).parent), "RUNS": count,
                                                "HOME": str(root)}, stdin=subprocess.DEVNULL)
        assert done.returncode in (0, 1), done.stderr
        runs.append(json.loads(done.stdout)[0]["id"])
    server = PagesServer(load_config(root))
    url = server.start()
    yield Served(root=root, url=url, runs=runs)
    server.stop()


def test_an_item_link_shows_its_detail_on_screen_after_the_table_loads(served: Served, page) -> None:
    page.set_viewport_size({"width": 1200, "height": 700})
    served.go(page, f"/runs/{served.runs[1]}/items/6")
    expect(page.locator("#detail h2")).to_contain_text("Item #6")
    expect(page.locator("#item-table tr.item-row")).to_have_count(9)  # the table is drawn above it
    top = page.evaluate("document.getElementById('detail').getBoundingClientRect().top")
    assert -1 < top < 700, f"the detail is off-screen at y={top}"  # a scrolled-to element may sit a subpixel high


def test_compare_run_metrics_sit_in_the_table_with_units(served: Served, page) -> None:
    served.go(page, f"/compare?a={served.runs[0]}&b={served.runs[1]}")
    page.locator("#deltas").wait_for()  # the statistics come after the first rows
    columns = page.locator("#deltas thead th").count()
    latency = page.locator("#deltas tr.run-metric[data-metric='latency.p95'] td")
    assert latency.count() == columns == 8
    assert all(re.fullmatch(r"[+-]?[\d.]+(ms|s)", latency.nth(i).inner_text()) for i in (1, 2, 3))
    cost = page.locator("#deltas tr.run-metric[data-metric='cost.mean'] td")
    assert cost.count() == 8 and [cost.nth(i).inner_text() for i in (1, 2, 3)] == ["–"] * 3


def test_an_unknown_cost_reads_the_unknown_glyph_on_every_page(served: Served, page) -> None:
    summary = Store.for_config(load_config(served.root)).require_run(served.runs[1])["summary"]
    assert summary["agent_cost"] is None and summary["estimated_cost"] is None  # the agent reports no price
    served.go(page, "/")
    row = page.locator(f"tr:has(a[href='/runs/{served.runs[1]}'])").first
    assert row.locator("td.cost span[title='agent cost']").inner_text() == "agent –" and "$0 " not in row.inner_text()
    served.go(page, f"/runs/{served.runs[1]}")
    assert page.locator(".card:has(h3:text('Cost')) .big").inner_text() == "–"
    served.go(page, "/trends?experiment=support-bot")
    chart = page.locator(".chart[data-chart='cost (per run, agent + judge)']")
    assert chart.locator("a.point").count() == 0 and "$0" not in chart.inner_text()
    assert "Cost unknown for 3 runs" in chart.inner_text() or "Not recorded" in chart.inner_text()


def test_the_json_api_answers_404_for_an_unknown_run(served: Served) -> None:
    for path in ("items", "items/3", "live"):
        response = httpx.get(f"{served.url}/api/runs/no-such-run/{path}")
        assert response.status_code == 404, path
        assert response.json() == {"error": "No run has id 'no-such-run'; `cobalt history` lists the stored runs."}
    assert httpx.get(f"{served.url}/api/runs/{served.runs[1]}/items").status_code == 200


def test_flaky_items_are_marked_on_the_run_and_compare_pages(repeated: Served, page) -> None:
    one, three = repeated.runs
    repeated.go(page, f"/runs/{three}")
    rows = page.locator("#item-table tr.item-row")
    expect(rows).to_have_count(15)
    assert [rows.nth(i).locator("td").first.inner_text().split()[0] for i in range(3)] == ["0:0", "0:1", "0:2"]
    flaky = page.locator("#item-table tr.item-row:has(.badge.flaky)")
    assert flaky.count() == 3 and {flaky.nth(i).get_attribute("data-index") for i in range(3)} == {"3"}
    assert flaky.first.locator(".badge.flaky").inner_text() == "2 of 3 passed"
    flaky.first.click()
    expect(page.locator("#detail h2")).to_contain_text("flaky: 2 of 3 passed")
    assert [h.split()[0] for h in page.locator("#detail .repeat h3").all_inner_texts()] == ["#3:0", "#3:1", "#3:2"]
    items = httpx.get(f"{repeated.url}/api/runs/{three}/items", params={"limit": "15"}).json()["items"]
    assert {(i["label"], i["flaky"]) for i in items if i["index"] == 3} == {
        ("3:0", "2 of 3 passed"), ("3:1", "2 of 3 passed"), ("3:2", "2 of 3 passed")}
    # The run without repeats pairs with it item by item (by each item's mean), the flaky one marked.
    repeated.go(page, f"/compare?a={one}&b={three}")
    first = page.locator(".pair").first
    expect(first).to_have_attribute("data-index", "3")
    assert "B flaky: 2 of 3 passed" in first.locator("h3").inner_text()
    expect(page.locator("#compare-summary .meta")).to_contain_text("5 paired items")
    assert page.locator("#unpaired-section").is_hidden()
