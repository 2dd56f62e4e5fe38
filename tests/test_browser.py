"""The browser fixture itself: the system's Chromium renders a page and writes a screenshot."""

from pathlib import Path

from browser import screenshot


def test_chromium_renders_escaped_text_and_screenshots(page, tmp_path: Path) -> None:
    html = tmp_path / "x.html"
    html.write_text("<h1 id=t>hello &lt;b&gt;</h1>")
    page.goto(html.as_uri())
    assert page.inner_text("#t") == "hello <b>"
    assert screenshot(page, "browser-smoke").stat().st_size > 1000
