"""Issue 36, in Chromium: every page of a project with variants, a traced agent, conversations, grading runs, a
failing `calibrated(...)` gate and labels fits 375, 1280 and 1920 px in light and dark (nothing overflows sideways,
no table is wider than its box, no number breaks across lines, no console error; screenshots kept in
test-screenshots/); the keyboard keeps its place; a label set on another answer says so."""

from __future__ import annotations

from typing import Any

import pytest
from browser import BROKEN_NUMBERS, OVERFLOW, InFlight, screenshot
from playwright.sync_api import expect
from site_project import Site, site  # noqa: F401  (the module's project)

pytestmark = pytest.mark.slow


def _pages(s: Site) -> dict[str, tuple[str, str | None]]:
    """name: (path, what to wait for)."""
    r = s.runs
    return {
        "runs": ("/", None),
        "group": (f"/groups/{s.group_id}", "#variant-grid"),
        "group-item": (f"/groups/{s.group_id}/items/1", "#variant-grid"),
        "run-variant": (f"/runs/{r['variant']}", "#item-table tr.item-row"),
        "run-traced": (f"/runs/{r['traced']}#item=0", "#detail .trace-tree"),
        "run-chat": (f"/runs/{r['chat']}#item=1", "#detail .transcript"),
        "run-grading": (f"/runs/{r['grading-b']}", "#item-table tr.item-row"),
        "run-graded": (f"/runs/{r['graded']}", "#item-table tr.item-row"),
        "run-labelled": (f"/runs/{r['labelled-b']}#item=1", "#detail .label-widget"),
        "compare": (f"/compare?a={r['labelled-a']}&b={r['labelled-b']}", ".pair"),
        "compare-grading": (f"/compare?a={r['grading-a']}&b={r['grading-b']}", "#compare-items"),
        "trends": ("/trends?experiment=support-bot", None),
        "trends-graded": ("/trends?experiment=graded-answers", None),
        "error": ("/runs/no-such-run", None),
    }


# A phone in both schemes (where things overflow), a laptop and a wide screen in one each: every width and
# every scheme is seen, at two thirds of the browser time of the full product.
@pytest.mark.parametrize(("width", "scheme"), [(375, "light"), (375, "dark"), (1280, "light"), (1920, "dark")])
def test_every_page_fits_without_broken_numbers_or_console_errors(site: Site, browser: Any, width: int,
                                                                   scheme: str) -> None:
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    requests = InFlight(page)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" and "404" not in m.text else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        for name, (path, ready) in _pages(site).items():
            page.goto(site.url + path)
            if ready:
                page.locator(ready).first.wait_for()
            requests.settle()  # what the page fetched after it loaded is drawn too
            screenshot(page, f"fit-{name}-{width}-{scheme}")
            assert page.evaluate(OVERFLOW) == [], f"{name} at {width}px ({scheme}) overflows"
            assert page.evaluate(BROKEN_NUMBERS) == [], f"{name} at {width}px ({scheme}) breaks numbers"
            assert errors == [], f"{name} at {width}px ({scheme}): console errors"
    finally:
        context.close()


def _focused(page: Any) -> str | None:
    return page.evaluate("document.activeElement && document.activeElement.getAttribute('data-index')")


def test_the_keyboard_keeps_its_place_and_walks_the_items_in_the_detail(site: Site, page: Any) -> None:
    page.goto(site.login_url)  # the user's session, for the label written on the way
    page.goto(f"{site.url}/runs/{site.runs['labelled-b']}")
    page.locator("#item-table tr.item-row").first.wait_for()
    for _ in range(11):
        page.keyboard.press("j")
    assert _focused(page) == "10"
    page.keyboard.press("Enter")
    expect(page.locator("#detail h2")).to_have_text("Item #10")
    page.keyboard.press("1")  # a label by keyboard on the way: the place is kept all the same
    expect(page.locator("#detail .label-widget[data-evaluator='exact']")).to_have_class("label-widget set active")
    page.keyboard.press("Escape")
    expect(page.locator("#detail")).to_be_hidden()
    assert _focused(page) == "10"
    page.keyboard.press("j")
    assert _focused(page) == "11"
    assert page.evaluate("scrollY") > 0  # not back at the top of the page
    page.keyboard.press("Enter")
    expect(page.locator("#detail h2")).to_have_text("Item #11")
    page.keyboard.press("n")  # the next item, in the table's order
    expect(page.locator("#detail h2")).to_have_text("Item #12")
    assert page.url.endswith("#item=12")
    page.keyboard.press("]")
    expect(page.locator("#detail h2")).to_have_text("Item #13")
    page.keyboard.press("p")
    page.keyboard.press("[")
    expect(page.locator("#detail h2")).to_have_text("Item #11")
    page.keyboard.press("Escape")
    assert _focused(page) == "11"
    page.keyboard.press("?")
    keys = page.locator("#shortcuts").inner_text()
    assert "Labelling an open item" in keys and "exact (pass/fail): 0 fail, 1 pass" in keys
    assert "helpful (0..1): 0 0, 2 0.25, 5 0.5, 7 0.75, 1 1" in keys
    screenshot(page, "fit-keyboard-help")


def test_a_label_set_on_another_answer_says_so_and_the_detail_puts_the_output_first(site: Site, page: Any) -> None:
    run = site.runs["labelled-b"]
    page.goto(f"{site.url}/runs/{run}#item=1")  # labelled on run A's answer "answer 1"; run B answered otherwise
    widget = page.locator("#detail .label-widget[data-evaluator='exact']")
    expect(widget.locator(".label-stale")).to_have_text(f"set on an earlier answer (run {site.runs['labelled-a']})")
    assert "labelled pass by ben" in widget.inner_text()
    assert widget.evaluate("e => e.getBoundingClientRect().height") < 60  # set: one line
    column = page.locator("#detail .repeat").first
    order = column.evaluate("""c => Array.from(c.querySelectorAll('h4, .labels-panel, .item-fields'))
        .map(e => e.classList.contains('labels-panel') ? 'LABELS'
             : e.classList.contains('item-fields') ? 'FIELDS' : e.textContent)
        .filter(t => ['Output', 'LABELS', 'FIELDS', 'Evaluations'].includes(t))""")
    assert order == ["Output", "LABELS", "FIELDS", "Evaluations"]
    names = column.locator(".evaluation").evaluate_all("es => es.map(e => e.getAttribute('data-evaluator'))")
    assert names == ["exact", "helpful"]  # the experiment's order
    page.goto(f"{site.url}/runs/{run}#item=2")  # the agent call failed: the label judged run A's answer
    expect(page.locator("#detail h2")).to_have_text("Item #2")
    expect(page.locator("#detail .label-widget[data-evaluator='exact'] .label-stale")).to_be_visible()
    page.goto(f"{site.url}/runs/{run}#item=0")  # the same answer in both runs: nothing to say
    expect(page.locator("#detail h2")).to_have_text("Item #0")
    expect(page.locator("#detail .label-widget[data-evaluator='exact']")).to_contain_text("labelled pass by ben")
    assert page.locator("#detail .label-stale").count() == 0
    page.locator("#detail .label-widget[data-evaluator='exact'] .label-change").click()  # open it again to change it
    expect(page.locator("#detail .label-widget[data-evaluator='exact'] .label-option")).to_have_count(2)
    screenshot(page, "fit-label-stale")


def test_a_conversations_user_side_reads_as_a_conversation(site: Site, page: Any) -> None:
    page.goto(f"{site.url}/runs/{site.runs['chat']}#item=0")
    scripted = page.locator("#detail .item-fields .scripted-input")
    expect(scripted.locator(".turn")).to_have_count(2)
    assert scripted.locator(".message.user .content").all_inner_texts() == ["Hello", "Where is order 77?"]
    row = page.locator("#item-table tr.item-row[data-index='0'] td")
    assert row.nth(1).inner_text() == "Hello · Where is order 77?"
    page.goto(f"{site.url}/runs/{site.runs['chat']}#item=1")
    simulated = page.locator("#detail .item-fields .simulated-input")
    expect(simulated).to_contain_text("find the lost parcel")
    assert "{" not in page.locator("#detail .item-fields").inner_text()  # no raw JSON


def test_the_run_page_shows_the_calibration_behind_a_failing_calibrated_gate(site: Site, page: Any) -> None:
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{site.url}/runs/{site.runs['graded']}")
    gate = page.locator("#gates tbody tr.fail").first
    expect(gate).to_contain_text("kappa 0.922 < 0.95")
    behind = page.locator(f".gate-calibration[data-run='{site.runs['grading-b']}']")
    expect(behind).to_contain_text("openai/off weighted kappa 0.92")
    behind.locator("a.calibration-link").click()
    page.wait_for_url(f"**/runs/{site.runs['grading-b']}#calibration")
    expect(page.locator("#calibration")).to_be_visible()
    page.goto(f"{site.url}/runs/{site.runs['labelled-b']}")
    first = page.locator("#item-table tr.item-row").first
    first.wait_for()
    assert first.evaluate("e => e.getBoundingClientRect().bottom") <= 900  # above the fold
    assert page.locator("#gates code").count() + page.locator("#gates td").count() > 0
    assert "`" not in page.locator("#gates").inner_text()


def test_compare_of_two_grading_runs_reads_as_a_measurement_not_a_failure(site: Site, page: Any) -> None:
    page.goto(f"{site.url}/compare?a={site.runs['grading-a']}&b={site.runs['grading-b']}")
    expect(page.locator("#identity")).to_contain_text("changed")
    assert page.locator(".regression").count() == 0
    assert "--accept" not in page.locator("main").inner_text()
    assert "not comparable" not in page.locator("main").inner_text()
    expect(page.locator("#agreement tbody tr")).to_have_count(2)


def test_the_runs_list_groups_variants_shows_changes_and_filters_by_gates(site: Site, page: Any) -> None:
    page.goto(f"{site.url}/")
    group = page.locator(f"#runs tr.group-row[data-group='{site.group_id}']")
    expect(group).to_have_count(1)
    assert page.locator("#runs tbody tr", has_text="refund-policy-assistant").count() == 1  # four variants, one row
    expect(group.locator(".badge.variants")).to_have_text("4 variants")
    expect(group.locator("td.scores")).to_contain_text("quality 0.475–0.900")
    newest = page.locator(f"#runs tr[data-run='{site.runs['labelled-b']}'] .delta")
    assert newest.all_inner_texts() == ["-0.034", "+0.000"]  # exact 28/29 against 30/30, helpful: against labelled-a
    group.locator("a.group-link").click()
    page.wait_for_url(f"**/groups/{site.group_id}")
    page.goto(f"{site.url}/?gates=failed")
    failed = page.locator("#runs tbody tr").evaluate_all(
        "rs => rs.map(r => r.getAttribute('data-run') || r.getAttribute('data-group'))")
    assert site.runs["labelled-b"] in failed and site.runs["graded"] in failed and site.runs["labelled-a"] not in failed
    page.goto(f"{site.url}/?gates=passed")
    assert page.locator(f"#runs tr[data-run='{site.runs['labelled-a']}']").count() == 1
    assert page.locator(f"#runs tr[data-run='{site.runs['labelled-b']}']").count() == 0


def test_trends_count_and_draw_every_run_with_a_failed_gate(site: Site, page: Any) -> None:
    page.goto(f"{site.url}/trends?experiment=support-bot")
    summary = page.locator("#failed-runs").inner_text()
    drawn = page.locator(".chart[data-chart='failed gates'] circle.gate-failed").count()
    assert summary.startswith(f"{drawn} with a failed gate") and drawn == 1
    page.set_viewport_size({"width": 375, "height": 800})
    label = page.locator(".chart[data-chart='exact'] svg text").first
    size = label.evaluate("e => e.getBoundingClientRect().height")
    assert size >= 8  # legible on a phone
