"""The store's pages of runs (`RunPages`): each filter in SQL gives what filtering every run in Python gives."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import shifted_store

from cobalt_lib import Store
from cobalt_lib.store._store_history import RunSelection

TAGS = ["nightly", "pr", "v_1", "50%", 'say "hi"', "a/b", "ünï", "pr!"]
STATUSES = ["completed", "completed", "failed", "incomplete"]


def _row(i: int, rng: random.Random) -> dict[str, Any]:
    started = datetime(2026, 3, 1, tzinfo=UTC) + timedelta(hours=7 * i)
    return {"run_id": f"r{i:03d}", "experiment": f"exp-{i % 3}", "started_at": started.isoformat(),
            "tags": rng.sample(TAGS, rng.randint(0, 3)), "config": {}, "status": rng.choice(STATUSES),
            "passed": rng.choice([True, False, None])}


@pytest.fixture
def store(tmp_path: Path) -> Store:
    """60 runs over 18 days (statuses, tags and gate verdicts mixed), plus one running run whose lease
    expired (reads incomplete) and one leased for a day (reads running)."""
    rng = random.Random(4)
    path = tmp_path / "s.duckdb"
    store = Store(path)
    store.write({"runs": [_row(i, rng) for i in range(60)]})
    for run_id, hours, day in (("dead", -2, 20), ("live", 24, 21)):
        shifted_store(path, hours).start_run({"run_id": run_id, "experiment": "exp-1", "tags": ["pr"], "config": {},
                                              "started_at": f"2026-03-{day}T00:00:00+00:00"})
    return store


def _expected(store: Store, s: RunSelection) -> list[str]:
    """What the views did before: every run (live status, newest first), filtered in Python."""
    def keep(run: dict[str, Any]) -> bool:
        day = run["started_at"].date().isoformat()  # as the runs list read it: in the store's time zone
        status = (not s.status or run["status"] == s.status
                  or (s.status == "failed-gates" and run.get("passed") is False))
        return bool(status and (not s.experiment or run["experiment"] == s.experiment)
                    and (not s.tag or s.tag in (run.get("tags") or []))
                    and (not s.since or day >= s.since) and (not s.until or day <= s.until))
    return [r["run_id"] for r in store.runs() if keep(r)]


SELECTIONS = [RunSelection(), RunSelection(experiment="exp-1"), RunSelection(status="incomplete"),
              RunSelection(status="running"), RunSelection(status="failed-gates"), RunSelection(status="completed"),
              RunSelection(since="2026-03-05", until="2026-03-09"), RunSelection(experiment="exp-2", tag="pr"),
              *[RunSelection(tag=t) for t in TAGS], RunSelection(tag="p"), RunSelection(tag="hi"),
              RunSelection(tag="pr", status="incomplete", since="2026-03-02")]


@pytest.mark.parametrize("selection", SELECTIONS, ids=repr)
def test_each_page_and_count_is_what_filtering_every_run_gives(store: Store, selection: RunSelection) -> None:
    expected = _expected(store, selection)
    assert store.run_count(selection) == len(expected)
    pages = [[r["run_id"] for r in store.run_page(selection, offset=o, limit=7)] for o in range(0, 70, 7)]
    assert [i for page in pages for i in page] == expected
    assert all(len(page) == 7 for page in pages[: len(expected) // 7])


def test_a_page_reads_live_statuses(store: Store) -> None:
    statuses = {r["run_id"]: r["status"] for r in store.run_page(RunSelection(tag="pr"), limit=100)}
    assert (statuses["dead"], statuses["live"]) == ("incomplete", "running")


def test_the_filters_choices_come_from_the_store(store: Store) -> None:
    assert store.experiment_names() == ["exp-0", "exp-1", "exp-2"]
    every = {t for r in store.runs() for t in r["tags"]}
    assert store.tag_names() == sorted(every)
    assert store.tag_names("exp-2") == sorted({t for r in store.runs("exp-2") for t in r["tags"]})
    assert store.newest_experiment() == store.runs()[0]["experiment"]


def test_no_store_yet_is_no_runs(tmp_path: Path) -> None:
    store = Store(tmp_path / "none.duckdb")
    assert (store.run_page(), store.run_count(), store.experiment_names(), store.tag_names(),
            store.newest_experiment()) == ([], 0, [], [], None)
    assert not store.path.exists()
