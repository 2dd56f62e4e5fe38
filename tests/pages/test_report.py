"""`cobalt report`: the run page and the compare page as one file that works from file:// with
nothing fetched; under GitHub Actions, `cobalt run`'s reports beside the step summary."""

from __future__ import annotations

from pathlib import Path

import pytest
from browser import screenshot
from pages_project import (
    JUDGE_REFUSAL,
    REFUSAL,
    Served,
    cobalt,
    served,  # noqa: F401  (the shared served-project fixture)
)
from playwright.sync_api import expect

from cobalt_lib import load_config
from cobalt_lib.ci import github_outputs
from cobalt_lib.store import Store, load_report


def _offline(page) -> list[str]:
    """Every request the page makes other than its own file (there must be none)."""
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url) if not r.url.startswith("file://") else None)
    return fetched


def test_report_file_shows_the_items_from_file_url(served: Served, page, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    done = cobalt(served.root, "report", served.runs[1], "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"wrote {out} (")
    fetched = _offline(page)
    page.goto(out.as_uri())
    rows = page.locator("#item-table tr.item-row")
    expect(rows).to_have_count(9)
    page.select_option("#item-filter", "failures")
    expect(rows).to_have_count(3)
    page.select_option("#item-filter", "eval-errors")
    expect(rows).to_have_count(1)
    page.select_option("#item-filter", "failures")
    expect(rows).to_have_count(3)
    rows.first.click()
    assert JUDGE_REFUSAL in page.locator("#detail .evaluation[data-evaluator='helpful'] .reason").inner_text()
    assert page.locator("#detail pre.output").inner_text() == REFUSAL
    assert page.evaluate("window.__xss") is None and "<script>window" not in out.read_text()
    assert "cobalt report" in page.locator(".static-note").inner_text()
    assert fetched == []
    html = out.read_text()
    assert ":4000" not in html and page.locator("a[href]").count() == 0
    screenshot(page, "pages-report-run")


def test_compare_report_file(served: Served, page, tmp_path: Path) -> None:
    out = tmp_path / "compare.html"
    done = cobalt(served.root, "report", served.runs[1], "--compare", served.runs[0], "-o", str(out))
    assert done.returncode == 0, done.stderr
    fetched = _offline(page)
    page.goto(out.as_uri())
    first = page.locator(".pair").first
    expect(first).to_have_attribute("data-index", "2")
    assert page.locator("h1 span").nth(1).inner_text() == served.runs[0]  # --compare names the baseline A
    page.check("#changed-only")
    expect(page.locator(".pair")).to_have_count(2)
    assert fetched == []
    # A file read where no server runs (a CI artifact) links to none: not the pages, not Dagster.
    html = out.read_text()
    assert ":4000" not in html and page.locator("a[href]").count() == 0
    assert page.locator("tr.run-metric[data-metric='latency.p95'] td").count() == 8
    screenshot(page, "pages-report-compare")


@pytest.mark.slow
def test_report_of_an_unknown_run_is_a_usage_error(served: Served, tmp_path: Path) -> None:
    done = cobalt(served.root, "report", "nope", "-o", str(tmp_path / "r.html"))
    assert done.returncode == 2
    assert done.stderr.strip() == "error: No run has id 'nope'; `cobalt history` lists the stored runs."
    assert not (tmp_path / "r.html").exists()


def test_github_actions_writes_the_report_beside_the_step_summary(served: Served, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    config = load_config(served.root)
    report = load_report(Store.for_config(config), served.runs[1])
    assert github_outputs([report], config) == []
    path = served.root / ".cobalt" / "reports" / f"support-bot-{report.id}.html"
    assert path.is_file() and 'id="cobalt-data"' in path.read_text()
    assert f"HTML report: `{path}`" in summary.read_text()
    monkeypatch.setenv("COBALT_REPORT_DIR", str(tmp_path / "artifacts"))
    github_outputs([report], config)
    assert (tmp_path / "artifacts" / path.name).is_file()
