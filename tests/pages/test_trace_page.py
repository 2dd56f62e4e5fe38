"""Production traces in the pages (issue 39, section 4): the list, newest first and paged; a monitor window's
run page linking its worst traces; a trace's page adding the trace to a dataset file or a stored dataset
through the use case `cobalt traces add` calls, bad input said in one sentence; and the write refused
without its CSRF token."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from monitor.production_traces import ANSWER, QUESTION, store_traces
from playwright.sync_api import expect

from cobalt_lib import Evaluator, Store, load_config
from cobalt_lib.grading._labels import who_default
from cobalt_lib.monitor import Ingest, monitor, score_window, window_bounds
from cobalt_lib.pages import PagesServer
from cobalt_lib.pages._traces import TRACES_PER_PAGE

DAY = "2026-12-01"


@dataclass
class Served:
    root: Path
    url: str
    login: str
    #: The stored traces' ids, oldest first.
    traces: list[str]


@contextmanager
def _served(project: Path, conversations: list[tuple[str, str]]) -> Iterator[Served]:
    config = load_config(project)
    ids = store_traces(Ingest(Store.for_config(config)), conversations, at_ns=window_bounds(DAY)[0])
    server = PagesServer(config)
    url = server.start()
    try:
        yield Served(project, url, server.login_url, ids)
    finally:
        server.stop()


@pytest.fixture
def many(project: Path) -> Iterator[Served]:
    """One trace more than a page of the list holds."""
    with _served(project, [(f"Where is parcel {i}?", "In Lyon.") for i in range(TRACES_PER_PAGE + 1)]) as served:
        yield served


@pytest.fixture
def two(project: Path) -> Iterator[Served]:
    """Two traces, the first answering well."""
    with _served(project, [(QUESTION, ANSWER), ("Where is parcel 99?", "I cannot say.")]) as served:
        yield served


def test_the_list_pages_newest_first_and_the_write_needs_its_csrf_token(many: Served) -> None:
    listed = httpx.get(f"{many.url}/traces", timeout=10)
    assert listed.status_code == 200
    rows = listed.text.count('class="trace-link"')
    assert rows == TRACES_PER_PAGE and f'data-trace="{many.traces[-1]}"' in listed.text  # the newest first
    assert f'data-trace="{many.traces[0]}"' not in listed.text and 'id="older"' in listed.text
    older = httpx.get(f"{many.url}/traces?offset={TRACES_PER_PAGE}", timeout=10).text
    assert older.count('class="trace-link"') == 1 and f'data-trace="{many.traces[0]}"' in older
    assert "Where is parcel 0?" in older and 'id="newer"' in older and 'id="older"' not in older
    assert "No trace matches these filters." in httpx.get(f"{many.url}/traces?service=nobody", timeout=10).text

    client = httpx.Client(timeout=10)
    assert client.get(many.login).status_code == 303  # the session cookie: only the CSRF token is missing
    assert client.get(f"{many.url}/api/csrf").status_code == 200
    refused = client.post(f"{many.url}/api/traces/{many.traces[0]}/dataset", json={"dataset": "regressions.jsonl"},
                          headers={"Origin": many.url})
    assert refused.status_code == 403
    assert refused.text == "Refused: a write needs the X-CSRF-Token header (GET /api/csrf gives it).\n"
    assert not (many.root / "regressions.jsonl").exists()


@pytest.mark.slow
def test_a_window_s_worst_trace_opens_its_page_which_adds_it_to_a_dataset(two: Served, page: Any) -> None:
    config = load_config(two.root)
    watch = monitor("support", traces={"service.name": "support-bot"},
                    evaluators=[Evaluator(name="lyon", type="contains", value="Lyon")])
    assert score_window(watch, DAY, config).status == "completed"
    good, bad = two.traces
    from cobalt_lib.datasets import push_dataset

    (two.root / "seed.jsonl").write_text('{"id": "q1", "input": "Hello?"}\n', encoding="utf-8")
    push_dataset(Store.for_config(config), "regressions", two.root / "seed.jsonl")

    page.goto(two.login)
    page.goto(f"{two.url}/runs/monitor-support-{DAY}")
    worst = page.locator("#worst-traces-table a.trace-link")
    expect(worst.first).to_have_attribute("href", f"/traces/{bad}")  # scored 0: the worst first
    page.goto(f"{two.url}/traces?monitor=support")
    expect(page.locator("#traces a.trace-link")).to_have_count(2)
    page.goto(f"{two.url}/traces/{good}")
    expect(page.locator("#trace-input")).to_have_text(QUESTION)
    expect(page.locator("#trace-output")).to_have_text(ANSWER)
    expect(page.locator("#trace-model")).to_have_text("gpt-4o-mini")
    expect(page.locator("#trace-tokens")).to_have_text("307")  # 120 + 15 + 160 + 12
    expect(page.locator("#trace-tools tbody tr")).to_have_count(1)
    expect(page.locator("#trace-spans .span-row")).to_have_count(4)  # the item page's span tree (trace.js)

    form, status = page.locator("#trace-dataset-form"), page.locator("#trace-dataset-form .dataset-status")
    for target, said in (
            ("../outside.jsonl", f"not added: ../outside.jsonl is outside the project ({two.root.resolve()}); name "
                                 "a .jsonl file inside it."),
            ("nosuch", "not added: No dataset named 'nosuch' in the store"),
            ("cases/regressions.jsonl", f"added trace-{good[:16]} to cases/regressions.jsonl"),
            ("regressions", f"added trace-{good[:16]} to regressions@2"),
            ("regressions", f"trace-{good[:16]} is already in regressions@2")):
        form.locator(".dataset-name").fill(target)
        form.locator(".dataset-expected").fill("Lyon")
        form.locator(".dataset-button").click()
        expect(status).to_contain_text(said)
    assert not (two.root.parent / "outside.jsonl").exists()

    (item,) = [json.loads(line) for line in (two.root / "cases" / "regressions.jsonl").read_text().splitlines()]
    assert item == {"id": f"trace-{good[:16]}", "input": QUESTION, "expected_output": "Lyon",
                    "production": {"trace_id": good, "service": "support-bot", "output": ANSWER}}
    rows = Store.for_config(config).dataset_items("regressions", 2)
    assert [r["item"]["id"] for r in rows] == ["q1", f"trace-{good[:16]}"]
    assert rows[1]["item"] == item and rows[1]["origin"] == {"trace_id": good, "service": "support-bot",
                                                         "who": who_default(two.root)}
