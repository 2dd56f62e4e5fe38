"""A run in progress shows as such, its counts and items refreshing while rows arrive in the store,
and the page turns into the finished run's when it completes."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from browser import screenshot
from conftest import shifted_store
from playwright.sync_api import expect

from cobalt_lib import load_config
from cobalt_lib.pages import PagesServer
from cobalt_lib.results import ItemResult
from cobalt_lib.results._rows import output_row
from cobalt_lib.store import Store

CONFIG = {"runs": 1, "dataset": {"size": 4}, "evaluators": [{"name": "exact", "type": "exact-match", "threshold": 0.5}]}


def _outputs(indexes: range) -> dict[str, list[dict[str, object]]]:
    return {"outputs": [output_row("r-live", ItemResult(index=i, input=f"q{i}", output=f"a{i}", latency_ms=5.0))
                        for i in indexes]}


def test_a_run_in_progress_refreshes_its_counts_then_shows_finished(tmp_path: Path, page) -> None:
    (tmp_path / "cobalt.toml").write_text("")
    config = load_config(tmp_path)
    store = Store.for_config(config)
    # Leased for a day, so the run reads as running (not incomplete) however slowly the page loads.
    shifted_store(store.path, 24).start_run({"run_id": "r-live", "experiment": "qa", "tags": ["live"],
                                             "started_at": datetime.now(UTC).isoformat(), "config": CONFIG})
    store.write(_outputs(range(1)))
    server = PagesServer(config)
    url = server.start()
    try:
        page.goto(url)
        assert "1 agent calls done, 0 scores so far" in page.locator("#runs tr[data-run='r-live']").inner_text()
        page.goto(f"{url}/runs/r-live")
        assert page.locator("#run-status").inner_text() == "running"
        assert "1 of 4 agent calls done" in page.locator("#live").inner_text()
        expect(page.locator("#item-table tr.item-row")).to_have_count(1)
        store.write(_outputs(range(1, 3)))
        expect(page.locator("#live [data-live=done]")).to_have_text("3")
        expect(page.locator("#item-table tr.item-row")).to_have_count(3)
        screenshot(page, "pages-run-in-progress")
        store.write(_outputs(range(3, 4)))
        store.finish_run({"run_id": "r-live", "experiment": "qa", "status": "completed", "config": CONFIG,
                          "started_at": datetime.now(UTC).isoformat(), "tags": ["live"],
                          "summary": {"total_items": 4, "total_runs": 4, "ok": 4}, "passed": True}, [], [])
        expect(page.locator("#run-status")).to_have_text("passed")  # the page reloaded itself
        assert page.locator("#live").count() == 0
        expect(page.locator("#item-table tr.item-row")).to_have_count(4)
    finally:
        server.stop()


def test_repeats_of_an_item_stand_side_by_side(tmp_path: Path, page) -> None:
    (tmp_path / "cobalt.toml").write_text("")
    config = load_config(tmp_path)
    store = Store.for_config(config)
    store.start_run({"run_id": "r-rep", "experiment": "qa", "started_at": datetime.now(UTC).isoformat(),
                     "tags": [], "config": {**CONFIG, "runs": 3}})
    store.write({"outputs": [output_row("r-rep", ItemResult(index=0, run_index=r, input="q0", output=f"take {r}"))
                             for r in range(3)]})
    server = PagesServer(config)
    url = server.start()
    try:
        page.goto(f"{url}/runs/r-rep/items/0")
        repeats = page.locator("#detail .repeats.n3 .repeat")
        expect(repeats).to_have_count(3)
        assert [r.locator("pre.output").inner_text() for r in repeats.all()] == ["take 0", "take 1", "take 2"]
    finally:
        server.stop()
