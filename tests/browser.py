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
    from playwright.sync_api import expect, sync_playwright
    from slowdown import scaled

    # Playwright's `expect` gives up after 5 s, a deadline a machine loaded by another suite missed (an
    # opened item's heading, the next page of a list): stretched by the measured slowdown, 15 s at least.
    expect.set_options(timeout=max(15.0, scaled(5.0)) * 1000)
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


#: Every element that sticks out sideways: the document wider than the window, a box whose content is wider
#: than it (a table's scroll width included), or a box ending past the window's right edge unclipped.
OVERFLOW = """() => {
  const vw = document.documentElement.clientWidth, bad = [];
  const name = (e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '')
    + (typeof e.className === 'string' && e.className ? '.' + e.className.split(' ').join('.') : '');
  const root = document.documentElement;
  if (root.scrollWidth > vw) bad.push('document ' + root.scrollWidth + ' > ' + vw);
  const clips = (e) => {
    for (let p = e.parentElement; p; p = p.parentElement) if (getComputedStyle(p).overflowX !== 'visible') return true;
    return false;
  };
  for (const e of document.querySelectorAll('body *')) {
    if (e.closest('svg') && e.tagName.toLowerCase() !== 'svg') continue;
    const s = getComputedStyle(e);
    if (['none', 'inline', 'contents'].includes(s.display) || s.position === 'fixed') continue;
    const control = ['SELECT', 'INPUT', 'TEXTAREA'].includes(e.tagName);  // clips its own text natively
    if (!control && (s.overflowX === 'visible' || e.tagName === 'TABLE') && e.clientWidth > 0
        && e.scrollWidth > e.clientWidth + 1)
      bad.push(name(e) + ' content ' + e.scrollWidth + ' > its width ' + e.clientWidth);
    const r = e.getBoundingClientRect();
    if (r.width > 0 && r.right > vw + 1 && !clips(e))
      bad.push(name(e) + ' ends at ' + Math.round(r.right) + ' > ' + vw);
  }
  return bad.slice(0, 15);
}"""

#: Every number drawn on two lines (`0.4` / `21`): each number of the page's text, and the lines its characters
#: sit on. A number may sit beside a space that wraps (`[-0.020, +0.310]`); no number itself may break.
BROKEN_NUMBERS = r"""() => {
  const bad = [], number = /(?<![\w.#\-])[-+−]?\$?\d[\d,]*(?:\.\d+)?(?:%|ms|s|m|h|KB|MB)?(?![\w.])/g;
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (!parent || parent.closest('svg, script, style, [hidden], details:not([open]) > :not(summary)')) continue;
    for (const m of node.data.matchAll(number)) {
      if (m[0].length < 2) continue;
      const range = document.createRange();
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      const tops = Array.from(range.getClientRects()).filter((r) => r.width > 0).map((r) => r.top);
      if (tops.length > 1 && Math.max(...tops) - Math.min(...tops) > 6)
        bad.push(m[0] + ' in ' + parent.tagName.toLowerCase() + '.' + parent.className);
    }
  }
  return bad.slice(0, 15);
}"""


class InFlight:
    """The requests of `page` still in flight, and `settle()` to wait until there are none: Playwright's
    `networkidle` without its fixed 500 ms of quiet per page (half of a page check's time here).

    A request that another's answer starts (a CSRF token, then the write) is issued while the first one's
    callbacks run: the page is asked for a frame and a task, and the count read again, so such a pause between
    two requests is not taken for the end.
    """

    def __init__(self, page: Any) -> None:
        self.page = page
        self.pending: set[Any] = set()
        page.on("request", lambda request: self.pending.add(request))  # Playwright wants a function of Python's
        page.on("requestfinished", lambda request: self.pending.discard(request))
        page.on("requestfailed", lambda request: self.pending.discard(request))

    def settle(self) -> None:
        quiet = 0
        while quiet < 2:
            self.page.evaluate("() => new Promise(done => requestAnimationFrame(() => setTimeout(done, 0)))")
            quiet = 0 if self.pending else quiet + 1  # each round trip lets the finished events in
