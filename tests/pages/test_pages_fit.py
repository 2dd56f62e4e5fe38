"""Issue 36, in Chromium: every page of a project with variants, a traced agent, conversations, grading runs, a
failing `calibrated(...)` gate and labels fits 375, 1280 and 1920 px in light and dark (nothing overflows sideways,
no table is wider than its box, no number breaks across lines, no console error; screenshots kept in
test-screenshots/); the keyboard keeps its place; a label set on another answer says so."""

from __future__ import annotations

from typing import Any

import pytest
from browser import BROKEN_NUMBERS, OVERFLOW, screenshot
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


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("width", [375, 1280, 1920])
def test_every_page_fits_without_broken_numbers_or_console_errors(site: Site, browser: Any, width: int,
                                                                   scheme: str) -> None:
    context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" and "404" not in m.text else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        for name, (path, ready) in _pages(site).items():
            page.goto(site.url + path)
            if ready:
                page.locator(ready).first.wait_for()
            page.wait_for_load_state("networkidle")
            screenshot(page, f"fit-{name}-{width}-{scheme}")
            assert page.evaluate(OVERFLOW) == [], f"{name} at {width}px ({scheme}) overflows"
            assert page.evaluate(BROKEN_NUMBERS) == [], f"{name} at {width}px ({scheme}) breaks numbers"
            assert errors == [], f"{name} at {width}px ({scheme}): console errors"
    finally:
        context.close()
