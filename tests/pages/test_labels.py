"""Labelling in the pages, in a real Chromium: three items labelled by keyboard alone survive a reload;
a label write without the token, from another Origin or another Host changes nothing in the store. And
a grading run's page shows its calibration and its pass mark as a percentage."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from browser import screenshot
from fakellm import FakeLLM, answer
from playwright.sync_api import expect

from cobalt_lib import Evaluator, Store, experiment, load_config
from cobalt_lib.grading._calibrate import calibrate_evaluator
from cobalt_lib.pages import PagesServer

SCORES = [0.1, 0.3, 0.5, 0.7, 0.9, 0.2]


@dataclass
class Labelled:
    root: Path
    url: str
    run_id: str
    #: The link `cobalt serve` prints: opening it gives the browser the user's session (labels need it).
    login: str


def _judge(kind: str, body: dict[str, Any]) -> Any:
    prompt = " ".join(str(m.get("content", "")) for m in body.get("messages") or [])
    index = int(prompt.split("question ")[1].split()[0])
    return answer(SCORES[index], f"reason {index}")


@pytest.fixture
def labelled(judged_project: Path, llm: FakeLLM) -> Iterator[Labelled]:
    llm.respond = _judge
    items = [{"id": f"q{i}", "input": f"question {i} ?"} for i in range(len(SCORES))]
    report = experiment("support", items, lambda ctx: f"answer {ctx.index}",
                        evaluators=[Evaluator("helpful", prompt="Rate {{output}} for {{input}}"),
                                    Evaluator("says", type="contains", value="answer")],
                        ).run(config=load_config(judged_project))
    server = PagesServer(load_config(judged_project))
    url = server.start()
    yield Labelled(judged_project, url, report.id, server.login_url)
    server.stop()


def _chosen(page: Any, evaluator: str) -> Any:
    """`evaluator`'s label box (its `data-value` the label set; once set it folds to one line)."""
    return page.locator(f".label-widget[data-evaluator='{evaluator}']")


def _labels(root: Path) -> list[tuple[str, str, float, str]]:
    rows = Store.for_config(load_config(root)).labels("support")
    return sorted((r["evaluator"], r["item_id"], r["value"], r["note"] or "") for r in rows)


@pytest.mark.slow
def test_three_items_labelled_by_keyboard_alone_survive_a_reload(labelled: Labelled, page: Any) -> None:
    page.goto(labelled.login)
    assert "session=" not in page.url  # the secret leaves the address bar at once
    page.goto(f"{labelled.url}/runs/{labelled.run_id}")
    progress = page.locator("#label-progress")
    expect(progress).to_contain_text("0 of 50 (this run has 6 items) labelled for helpful")
    page.locator("#item-table tr.item-row").first.wait_for()
    page.keyboard.press("q")  # the queue: unlabelled first, one per score band (0.1, 0.3, 0.5, 0.7, 0.9, 0.2)
    expect(page.locator("#detail .labels-panel")).to_have_attribute("data-index", "0")
    page.keyboard.press("1")  # 0..1: key 1 is 1.0, the top (as it is pass on a pass/fail box)
    expect(_chosen(page, "helpful")).to_have_attribute("data-value", "1")
    page.keyboard.press("n")
    expect(page.locator("#detail .labels-panel")).to_have_attribute("data-index", "1")
    page.keyboard.press("/")  # a note first: the label set next carries it
    page.keyboard.type("too harsh")
    page.keyboard.press("Enter")
    page.keyboard.press("2")  # 0.25
    expect(_chosen(page, "helpful")).to_have_attribute("data-value", "0.25")
    page.keyboard.press("e")  # the next evaluator: says (pass/fail)
    page.keyboard.press("0")
    expect(_chosen(page, "says")).to_have_attribute("data-value", "0")
    page.keyboard.press("e")
    page.keyboard.press("n")
    expect(page.locator("#detail .labels-panel")).to_have_attribute("data-index", "2")
    page.keyboard.press("5")  # 0.5
    expect(progress).to_contain_text("3 of 50")
    screenshot(page, "pages-labelling")
    assert _labels(labelled.root) == [("helpful", "q0", 1.0, ""), ("helpful", "q1", 0.25, "too harsh"),
                                      ("helpful", "q2", 0.5, ""), ("says", "q1", 0.0, "")]

    page.reload()
    marks = page.locator("#item-table tr.item-row .label-mark")  # the table marks the items labelled for helpful
    expect(marks).to_have_count(3)
    assert page.locator("#item-table tr.item-row[data-index='3'] .label-mark").count() == 0
    expect(page.locator("#detail .labels-panel")).to_have_attribute("data-index", "2")
    expect(_chosen(page, "helpful")).to_have_attribute("data-value", "0.5")
    page.goto(f"{labelled.url}/runs/{labelled.run_id}#item=1")
    widget = page.locator(".label-widget[data-evaluator='helpful']")
    expect(widget).to_have_attribute("data-value", "0.25")
    expect(widget.locator(".label-note-text")).to_have_text("too harsh")
    expect(_chosen(page, "says")).to_have_attribute("data-value", "0")
    expect(progress).to_contain_text("3 of 50")


@pytest.mark.slow
def test_a_label_write_without_the_session_or_the_token_or_from_elsewhere_changes_nothing(
        labelled: Labelled) -> None:
    path = f"{labelled.url}/api/runs/{labelled.run_id}/items/0/label"
    body = {"evaluator": "helpful", "value": 1, "note": "forged"}
    own = labelled.url.replace("http://", "")
    origin = {"Origin": labelled.url}
    # Without the user's session (another local user, say): no CSRF token, and no write even with a good one.
    assert httpx.get(labelled.url + "/api/csrf", timeout=10).status_code == 403
    wrong = httpx.Client(cookies={"cobalt_session": "x" * 43})
    assert wrong.get(labelled.url + "/api/csrf", timeout=10).status_code == 403
    browser = httpx.Client()
    logged_in = browser.get(labelled.login, timeout=10)  # as the browser does: 303 to the page, with the cookie
    assert logged_in.status_code == 303 and "session=" not in logged_in.headers["location"]
    assert "httponly" in logged_in.headers["set-cookie"].lower() and "samesite=strict" in logged_in.headers[
        "set-cookie"].lower()
    token = browser.get(labelled.url + "/api/csrf", timeout=10).json()["token"]
    sessionless = httpx.post(path, json=body, headers={**origin, "X-CSRF-Token": token}, timeout=10)
    assert sessionless.status_code == 403 and "session" in sessionless.text
    attempts = [
        browser.post(path, json=body, headers=origin, timeout=10),  # no token
        browser.post(path, json=body, headers={**origin, "X-CSRF-Token": "x" * 43}, timeout=10),  # a wrong one
        browser.post(path, json=body, headers={"Origin": "http://evil.example", "X-CSRF-Token": token}, timeout=10),
        browser.post(path, json=body, headers={"X-CSRF-Token": token}, timeout=10),  # no Origin at all
        browser.post(path, json=body, headers={**origin, "X-CSRF-Token": token, "Host": "evil.example"}, timeout=10),
    ]
    assert [r.status_code for r in attempts] == [403, 403, 403, 403, 421]
    assert _labels(labelled.root) == []
    bad = browser.post(path, json={"evaluator": "helpful", "value": 7}, headers={**origin, "X-CSRF-Token": token},
                       timeout=10)
    assert bad.status_code == 400 and "takes a number from 0 to 1" in bad.json()["error"]
    assert _labels(labelled.root) == []
    done = browser.post(path, json=body, headers={**origin, "X-CSRF-Token": token, "Host": own}, timeout=10)
    assert done.status_code == 200 and done.json()["label"]["value"] == 1.0
    assert _labels(labelled.root) == [("helpful", "q0", 1.0, "forged")]


@pytest.mark.slow
def test_a_calibrated_run_shows_its_figures_and_percent_pass_marks(labelled: Labelled, page: Any) -> None:
    config = load_config(labelled.root)
    from cobalt_lib.grading._labels import set_label

    for i, value in enumerate([0.0, 0.25, 0.75, 0.75, 1.0, 0.25]):
        set_label(config, labelled.run_id, i, "helpful", value, note=f"note {i}")
    calibrate_evaluator(config, "support", "helpful", resamples=200)
    page.goto(f"{labelled.url}/runs/{labelled.run_id}")
    card = page.locator(".calibration[data-evaluator='helpful']")
    expect(card).to_contain_text("Spearman's rho")
    expect(card).to_contain_text("kappa over 5 bins")
    # item 2: label 0.75 (bin 3), judge 0.5 (bin 2): the one disagreement, with the reason and the note
    row = card.locator("table.disagreements tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("reason 2")
    expect(row).to_contain_text("note 2")
    expect(page.locator(".evaluator[data-evaluator='helpful'] h3")).to_contain_text("pass mark 0.5")
    screenshot(page, "pages-calibration")
