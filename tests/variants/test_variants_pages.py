"""The run-group page and its one-file report in Chromium: the grid's cells are `compare`'s, the frontier is
marked, every variant's output of an item sits side by side, and the filter keeps the items that differ."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from browser import screenshot
from fakellm import FakeLLM
from playwright.sync_api import expect
from variant_project import sweep_project

from cobalt_lib import ExperimentReport
from cobalt_lib.ops import RunOptions, Selection, run_experiments
from cobalt_lib.ops._compare import compare_runs
from cobalt_lib.pages import write_report
from cobalt_lib.pages._app import PagesServer

pytestmark = pytest.mark.slow


@dataclass
class Group:
    root: Path
    url: str
    reports: list[ExperimentReport]

    @property
    def group_id(self) -> str:
        return str(self.reports[0].group_id)


@pytest.fixture(scope="module")
def group(tmp_path_factory: pytest.TempPathFactory, _llm_server: FakeLLM) -> Iterator[Group]:
    _llm_server.reset()
    root = tmp_path_factory.mktemp("variants") / "proj"
    root.mkdir()
    try:
        config = sweep_project(root, _llm_server)
        reports = run_experiments(config, Selection(), RunOptions(dagster=False)).reports
    finally:
        _llm_server.reset()
    server = PagesServer(config)
    url = server.start()
    yield Group(root, url, reports)
    server.stop()


def test_the_grid_shows_compares_intervals_verdicts_and_the_frontier(group: Group, page) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{group.url}/groups/{group.group_id}")
    rows = page.locator("#variant-grid tbody tr")
    expect(rows).to_have_count(4)
    config_root = group.root
    from cobalt_lib import load_config

    config = load_config(config_root)
    for report in group.reports[1:]:
        [delta] = compare_runs(config, group.reports[0].id, report.id).comparison.evaluators
        cell = page.locator(f"#variant-grid tr[data-variant='{report.variant}'] td.cell")
        assert cell.locator(".ci").inner_text() == f"[{delta.ci_low:+.3f}, {delta.ci_high:+.3f}]"
        word = {"improved": "better", "regressed": "worse"}.get(delta.verdict, delta.verdict)
        assert cell.locator(".badge").inner_text() == word
    frontier = page.locator("#variant-grid tr.on-frontier").evaluate_all("rows => rows.map(r => r.dataset.variant)")
    assert frontier == ["model=small,prompt=v1", "model=small,prompt=v2", "model=large,prompt=v1"]
    failed = page.locator("#variant-grid tr[data-variant='model=large,prompt=v2'] .badge.failed")
    assert "quality >= 0.4" in failed.inner_text()
    screenshot(page, "pages-variant-grid")


def test_items_side_by_side_and_only_those_that_differ(group: Group, page) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{group.url}/groups/{group.group_id}")
    items = page.locator("#side-by-side details.variant-item")
    expect(items).to_have_count(6)
    page.check("#only-differs")
    visible = page.locator("#side-by-side details.variant-item:visible")
    expect(visible).to_have_count(5)  # item 5: every variant answered alike
    page.goto(f"{group.url}/groups/{group.group_id}/items/1")
    columns = page.locator("details.variant-item[open] .column")
    expect(columns).to_have_count(4)
    outputs = columns.locator("pre.output").all_inner_texts()
    assert outputs == ["SCORE=0.50 answer 1", "SCORE=0.50 answer 1", "SCORE=0.82 answer 1 (large)",
                       "SCORE=0.30 answer 1 (large)"]
    boxes = [columns.nth(i).bounding_box() for i in range(4)]
    assert len({round(b["y"]) for b in boxes if b}) == 1  # side by side, not stacked
    screenshot(page, "pages-variant-item")


def test_the_runs_list_shows_a_group_as_one_row_linking_its_grid(group: Group, page) -> None:  # type: ignore[no-untyped-def]
    page.goto(group.url + "/")
    rows = page.locator(f"tr.group-row[data-group='{group.group_id}']")
    expect(rows).to_have_count(1)  # the four variants are one row of the runs list
    expect(rows.locator("span.badge.variants")).to_have_text(f"{len(group.reports)} variants")
    rows.locator("a.group-link").click()
    expect(page.locator("#variant-grid")).to_be_visible()


def test_the_run_page_links_its_group_and_the_report_file_works_offline(group: Group, page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{group.url}/runs/{group.reports[2].id}")
    assert page.locator("#run-group").inner_text() == group.group_id
    from cobalt_lib import load_config

    out = write_report(load_config(group.root), group.group_id, tmp_path / "group.html", group=True)
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url) if not r.url.startswith("file://") else None)
    page.goto(out.as_uri())
    expect(page.locator("#variant-grid tbody tr")).to_have_count(4)
    page.check("#only-differs")  # the inline script works under the file's own CSP
    expect(page.locator("#side-by-side details.variant-item:visible")).to_have_count(5)
    assert fetched == [] and page.locator("a[href]").count() == 0
    screenshot(page, "pages-variant-report")
