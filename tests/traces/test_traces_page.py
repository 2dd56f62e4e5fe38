"""An item's trace on its detail page, in a real Chromium: the span tree with its kinds, timings and tokens,
a model call's messages, a tool call's arguments and result; untrusted span text shown as text. Also in
the self-contained report file."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from browser import screenshot
from fakellm import FakeLLM
from traced_agent import async_agent, per_city_replies

from cobalt_lib import Config, Dataset, experiment
from cobalt_lib.pages import PagesServer
from cobalt_lib.pages._report import write_report

#: A city whose name is markup: it reaches the spans' messages, arguments and results.
MARKUP = "<img src=x onerror=window.__xss=1>"


@dataclass
class Site:
    root: Path
    url: str
    run_id: str


# Module scope, set up before the browser: the run needs asyncio.run, which Playwright's loop forbids.
@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, _llm_server: FakeLLM) -> Iterator[Site]:
    _llm_server.reset()
    _llm_server.respond = per_city_replies
    root = tmp_path_factory.mktemp("traces") / "proj"
    root.mkdir()
    config = Config(root=root)
    try:
        cities = ["Paris", "Oslo", MARKUP]
        report = experiment("weather", Dataset(items=[{"input": f"weather in {c}"} for c in cities]),
                            async_agent(_llm_server.openai_url), concurrency=3).run(config=config)
    finally:
        _llm_server.reset()
    server = PagesServer(config)
    url = server.start()
    yield Site(root, url, report.id)
    server.stop()


@pytest.mark.slow
def test_item_detail_shows_the_trace(site: Site, page: Any) -> None:
    page.goto(f"{site.url}/runs/{site.run_id}#item=1")
    trace = page.locator("#detail .trace")
    trace.wait_for()
    assert trace.locator(".trace-summary").inner_text().startswith("4 spans · 2 model calls (12 in / 6 out tokens) · "
                                                                   "1 tool call · ")
    rows = trace.locator(".span-row")
    assert [rows.nth(i).locator(".span-name").inner_text() for i in range(rows.count())] == [
        "invoke_agent weather", "chat gpt-4o-mini", "execute_tool get_weather", "chat gpt-4o-mini"]
    assert [rows.nth(i).get_attribute("data-kind") for i in range(4)] == ["agent", "model", "tool", "model"]
    assert rows.nth(1).locator(".span-tokens").inner_text() == "4 in / 3 out"
    assert rows.nth(3).locator(".span-tokens").inner_text() == "8 in / 3 out"
    rows.nth(1).locator("summary.span-head").click()
    messages = rows.nth(1).locator(".msg")
    assert [messages.nth(i).locator(".role").text_content() for i in range(messages.count())] == ["user", "assistant"]
    assert messages.nth(0).locator(".msg-text").inner_text() == "weather in Oslo"
    assert "tool call get_weather" in messages.nth(1).inner_text()
    rows.nth(2).locator("summary.span-head").click()
    assert rows.nth(2).locator("pre.tool-args").inner_text() == '{\n "city": "Oslo"\n}'
    assert rows.nth(2).locator("pre.tool-result").inner_text() == '{\n "city": "Oslo",\n "temperature": 24\n}'
    screenshot(page, "traces-item-detail")
    page.goto(f"{site.url}/runs/{site.run_id}#item=2")  # markup in every span's text, shown as text
    page.locator("#detail h2", has_text="Item #2").wait_for()
    tool = page.locator("#detail .trace .span-row[data-kind='tool']")
    tool.locator("summary.span-head").click()
    assert MARKUP in tool.locator("pre.tool-args").inner_text()
    assert page.evaluate("window.__xss") is None


@pytest.mark.slow
def test_the_report_file_carries_each_items_trace(site: Site, page: Any) -> None:
    path = write_report(Config(root=site.root), site.run_id, site.root / "report.html")
    page.goto(path.as_uri() + "#item=0")
    rows = page.locator("#detail .trace .span-row")
    rows.first.wait_for()
    assert rows.count() == 4
    assert rows.nth(2).locator(".span-name").inner_text() == "execute_tool get_weather"
