"""A real browser for page tests: Playwright driving the system's Chromium.

Playwright's own browser download cannot be reached here, so it launches the Chromium that
`.ci/run` installs (`apt-get install chromium`); `COBALT_CHROMIUM` names another binary.
Screenshots go to `test-screenshots/` (not committed) for a reviewer to look at.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

SCREENSHOTS = Path(__file__).resolve().parent.parent / "test-screenshots"


def chromium_path() -> str:
    found = os.environ.get("COBALT_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        raise RuntimeError("no Chromium found: run `apt-get install chromium` (as .ci/run does) "
                           "or set COBALT_CHROMIUM to a Chromium binary")
    return found


# Module scope, not session: while Playwright's sync API runs, the main thread has a running asyncio
# loop, so later tests that call asyncio.run() (cobalt's own runs) would fail.
@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    opened = context.new_page()
    yield opened
    context.close()


def screenshot(page: Any, name: str) -> Path:
    """Save a full-page screenshot as test-screenshots/NAME.png and return its path."""
    SCREENSHOTS.mkdir(exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
