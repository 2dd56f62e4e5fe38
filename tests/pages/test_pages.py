"""What a user sees on cobalt's pages, in a real Chromium: the runs list filtered by tag, the item
table filtered to failures, an item's detail with the judge's reason, the compare page ranking the
biggest regression first, the trend of every run, and untrusted text shown as text."""

from __future__ import annotations

from urllib.parse import quote

from browser import screenshot
from pages_project import (
    JUDGE_PROSE,
    JUDGE_REFUSAL,
    REFUSAL,
    Served,
    served,  # noqa: F401  (the shared served-project fixture)
)
from playwright.sync_api import expect


def test_runs_list_filtered_by_tag_and_two_picked_to_compare(served: Served, page) -> None:
    served.go(page, "/")
    assert page.locator("#runs tbody tr").count() == 3
    assert page.locator("#runs tbody tr").first.get_attribute("data-run") == served.runs[2]  # newest first
    page.select_option("select[name=tag]", "candidate")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**/?*tag=candidate*")
    rows = page.locator("#runs tbody tr")
    assert rows.count() == 1 and rows.first.get_attribute("data-run") == served.runs[1]
    assert "candidate" in rows.first.inner_text() and "FAILED" not in rows.first.inner_text()
    screenshot(page, "pages-runs-by-tag")
    served.go(page, "/?since=2999-01-01")
    assert page.locator(".empty").inner_text() == "No run matches these filters."
    served.go(page, "/?status=failed-gates")
    assert [r.get_attribute("data-run") for r in page.locator("#runs tbody tr").all()] == [served.runs[0]]

    served.go(page, "/")
    button = page.locator("#compare-picked")
    page.check(f"input[value='{served.runs[1]}']")
    assert button.is_disabled()
    page.check(f"input[value='{served.runs[0]}']")
    button.click()
    page.wait_for_url("**/compare?*")
    # The older run is the baseline A whichever order they were picked in.
    assert page.locator("h1 a").nth(0).inner_text() == served.runs[0]
    assert page.locator("h1 a").nth(1).inner_text() == served.runs[1]


def test_item_table_filtered_to_failures_and_eval_errors(served: Served, page) -> None:
    served.go(page, f"/runs/{served.runs[1]}")
    rows = page.locator("#item-table tbody tr.item-row")
    rows.first.wait_for()
    assert rows.count() == 9
    page.select_option("#item-filter", "failures")
    expect(rows).to_have_count(3)
    # item 2 (the refusal scores below both pass marks), 4 (the judge's answer was an eval-error) and
    # 7 (the agent raised)
    assert [r.get_attribute("data-index") for r in rows.all()] == ["2", "4", "7"]
    assert page.locator(".table-footer .count").inner_text() == "1–3 of 3"
    screenshot(page, "pages-run-failures")
    page.select_option("#item-filter", "eval-errors")
    expect(rows).to_have_count(1)
    assert rows.first.get_attribute("data-index") == "4" and "eval-error" in rows.first.inner_text()
    page.select_option("#item-filter", "")
    page.fill("#item-search", "question 5")
    expect(rows).to_have_count(1)
    # The box cleared and a column's sort clicked within the search's 250 ms pause, as a quick hand does
    # (in one step here, so always within it: the box loses focus, then the click): the clearing is searched at
    # once, and neither undone by the sort's draw nor painted over by an older answer.
    page.evaluate("""() => {
        const box = document.querySelector("#item-search");
        const sort = document.querySelector("th[data-sort='score:helpful'] button");
        box.value = ""; box.dispatchEvent(new Event("input", {bubbles: true}));
        box.blur(); sort.click(); }""")
    expect(rows).to_have_count(9)
    expect(rows.first).to_have_attribute("data-index", "2")  # ascending: the worst score first
    assert page.input_value("#item-search") == "" and "q=" not in page.url


def test_run_summary_gates_histograms_and_dagster_links(served: Served, page) -> None:
    run = served.runs[0]
    served.go(page, f"/runs/{run}")
    gates = page.locator("#gates tbody tr")
    assert gates.count() == 3  # exact >= 0.86, every evaluator scored, error rate <= 50%
    failed = gates.filter(has_text="exact >= 0.86")
    assert "FAILED" in failed.inner_text()
    assert failed.locator("td").nth(2).inner_text() == "0.857" and failed.locator("td").nth(3).inner_text() == "0.86"
    from cobalt_lib import Store, load_config

    [dagster_run] = Store.for_config(load_config(served.root)).dagster_runs_of([run]).values()
    # This run's result of the check (its Dagster run's check evaluation), not the check's latest result.
    assert failed.locator("a").get_attribute("href") == (
        f"http://127.0.0.1:4000/runs/{dagster_run}?logs=type%3AASSET_CHECK_EVALUATION%7Cgate_exact_min_0_86")
    assert page.locator("a", has_text="aggregates partition").get_attribute("href") == (
        f"http://127.0.0.1:4000/assets/support_bot/aggregates?view=partitions&partition={run}")
    assert page.locator(".evaluator[data-evaluator='helpful'] svg rect.bar").count() == 10
    assert "pass rate" in page.locator(".evaluator[data-evaluator='exact']").inner_text()
    assert page.locator("a", has_text="the run").get_attribute("href") == f"http://127.0.0.1:4000/runs/{dagster_run}"
    screenshot(page, "pages-run")
    # A run Dagster does not hold (yet) links nowhere into it.
    served.go(page, f"/runs/{served.runs[1]}")
    assert "not recorded in Dagster" in page.locator("#not-recorded").inner_text()
    assert page.locator("a", has_text="aggregates partition").count() == 0
    assert page.locator("#gates a", has_text="check").count() == 0


def test_item_detail_shows_judge_reason_and_output_as_text(served: Served, page) -> None:
    served.go(page, f"/runs/{served.runs[1]}")
    page.locator("#item-table tr.item-row[data-index='2']").click()
    detail = page.locator("#detail")
    detail.locator(".evaluation[data-evaluator='helpful']").wait_for()
    assert JUDGE_REFUSAL in detail.locator(".evaluation[data-evaluator='helpful'] .reason").inner_text()
    assert detail.locator("pre.output").inner_text() == REFUSAL
    assert detail.locator("pre.input").inner_text() == "question 2"
    assert "raw judge answer" in detail.inner_text()
    assert page.evaluate("window.__xss") is None  # the <script> in output and reason never ran
    assert page.url.endswith("#item=2")
    screenshot(page, "pages-item-detail")
    # The item's own address opens the page with its detail.
    served.go(page, f"/runs/{served.runs[1]}/items/7")
    page.locator("#detail pre.traceback").wait_for()
    assert "RuntimeError: the tool timed out <b>upstream</b>" in page.locator("#detail pre.error").inner_text()
    served.go(page, f"/runs/{served.runs[1]}#item=4")  # the judge's unparsable answer, kept
    judged = page.locator("#detail .evaluation[data-evaluator='helpful']")
    judged.wait_for()
    assert "eval-error" in judged.inner_text()
    judged.locator("summary").click()
    assert JUDGE_PROSE in judged.locator("pre").inner_text()


def test_compare_ranks_the_biggest_regression_first(served: Served, page) -> None:
    a, b = served.runs[0], served.runs[1]
    served.go(page, f"/compare?a={quote(a)}&b={quote(b)}")
    first = page.locator(".pair").first
    first.wait_for()
    assert first.get_attribute("data-index") == "2" and "regressed" in first.locator("h3").inner_text()
    assert first.locator("pre.output.b ins").first.inner_text().startswith("Sorry")
    assert "answer" in first.locator("pre.output.a del").first.inner_text()
    assert JUDGE_REFUSAL in first.locator(".pair-scores").inner_text()  # both runs' reasons
    assert page.locator(".pair").nth(1).get_attribute("data-index") == "6"  # then the improvement
    page.locator("#deltas").wait_for()  # the statistics come after the first rows
    assert page.locator("#deltas tbody tr").filter(has_text="helpful").count() == 1
    assert "only in B" in page.locator("#unpaired").inner_text()
    assert page.evaluate("window.__xss") is None
    screenshot(page, "pages-compare")
    page.check("#changed-only")
    expect(page.locator(".pair")).to_have_count(2)


def test_trend_shows_every_run_and_a_point_opens_it(served: Served, page) -> None:
    served.go(page, "/trends?experiment=support-bot")
    chart = page.locator(".chart[data-chart='exact']")
    assert chart.locator("path.line.s0 + a.point, a.point").count() == 6  # mean and pass rate of 3 runs
    assert chart.locator("circle.gate-failed").count() == 2  # v1's run failed exact >= 0.86 (6 of 7)
    assert "3 runs" in page.locator("#trend-summary").inner_text()
    screenshot(page, "pages-trends")
    page.locator(f".chart[data-chart='helpful'] a.point[data-run='{served.runs[2]}']").last.click()
    page.wait_for_url(f"**/runs/{served.runs[2]}")
    served.go(page, "/trends?experiment=support-bot&tag=baseline")
    assert page.locator(".chart[data-chart='exact'] a.point").count() == 2


def test_untrusted_text_is_escaped_in_the_html(served: Served) -> None:
    import httpx

    pair = f"a={served.runs[0]}&b={served.runs[1]}"
    html = "".join(httpx.get(f"{served.url}{path}", timeout=30).text
                   for path in (f"/runs/{served.runs[1]}", f"/compare?{pair}", f"/compare/summary?{pair}"))
    assert "Regression" in html or "Evaluators" in html  # the statistics are in it
    assert "<script>window" not in html
    items = httpx.get(f"{served.url}/api/runs/{served.runs[1]}/items", params={"q": "sorry"}).json()
    assert items["total"] == 1 and items["items"][0]["output"] == REFUSAL


def test_unknown_run_says_so(served: Served, page) -> None:
    response = page.goto(f"{served.url}/runs/no-such-run")
    assert response.status == 404
    assert "No run has id 'no-such-run'" in page.locator(".error-message").inner_text()
