"""Growing a regression set from the pages, in a real Chromium on a served project: an item's detail adds
the item to a stored dataset as a new version, its origin the run, the item and who added it; without the
session the same request writes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from cobalt_lib import Evaluator, Store, experiment, load_config
from cobalt_lib.pages import PagesServer

pytestmark = pytest.mark.slow


@dataclass
class Served:
    root: Path
    url: str
    run_id: str
    login: str


@pytest.fixture
def served(project: Path) -> Iterator[Served]:
    items = [{"id": f"q{i}", "input": f"question {i}", "expected_output": "yes"} for i in range(4)]
    report = experiment("qa", items, lambda ctx: "no" if ctx.index == 2 else "yes",
                        evaluators=[Evaluator(name="exact", type="exact-match")]).run(config=load_config(project))
    server = PagesServer(load_config(project))
    url = server.start()
    yield Served(project, url, report.id, server.login_url)
    server.stop()


def test_an_item_detail_adds_the_item_to_a_dataset_with_its_origin(served: Served, page: Any) -> None:
    # Without the session (and its CSRF token) the write is refused and nothing is stored.
    refused = httpx.post(f"{served.url}/api/runs/{served.run_id}/items/2/dataset", json={"dataset": "regressions"})
    assert refused.status_code in (401, 403)
    store = Store.for_config(load_config(served.root))
    assert store.dataset_versions() == []

    page.goto(served.login)
    page.evaluate("window.localStorage.setItem('cobalt.labeller', 'ann')")
    page.goto(f"{served.url}/runs/{served.run_id}#item=2")
    box = page.locator("#detail .dataset-add[data-index='2']")
    box.locator(".dataset-name").fill("regressions")
    box.locator(".dataset-button").click()
    expect(box.locator(".dataset-status")).to_have_text("added: regressions@1")
    box.locator(".dataset-button").click()  # the same item again: no new version
    expect(box.locator(".dataset-status")).to_have_text("already in regressions@1")

    [row] = store.dataset_items("regressions", 1)
    assert row["item"] == {"id": "q2", "input": "question 2", "expected_output": "yes"}
    assert row["origin"] == {"run_id": served.run_id, "experiment": "qa", "item_index": 2, "who": "ann"}
