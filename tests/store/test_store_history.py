"""The store's pages of runs (`RunPages`): each filter in SQL gives what filtering every run in Python gives."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from conftest import shifted_store
from stores import BACKENDS, MakeStore, store_maker

from cobalt_lib import Store
from cobalt_lib.ops._history import history_entry
from cobalt_lib.store._store_history import RunSelection

TAGS = ["nightly", "pr", "v_1", "50%", 'say "hi"', "a/b", "ünï", "pr!"]
STATUSES = ["completed", "completed", "failed", "incomplete"]


def _row(i: int, rng: random.Random) -> dict[str, Any]:
    started = datetime(2026, 3, 1, tzinfo=UTC) + timedelta(hours=7 * i)
    return {"run_id": f"r{i:03d}", "experiment": f"exp-{i % 3}", "started_at": started.isoformat(),
            "tags": rng.sample(TAGS, rng.randint(0, 3)), "config": {}, "status": rng.choice(STATUSES),
            "passed": rng.choice([True, False, None]),
            # runs 10-13 and 40-41 are the variants of two run groups; a variant per experiment is its own line
            "group_id": "g1" if 10 <= i <= 13 else "g2" if 40 <= i <= 41 else None,
            "variant": f"v{i % 2}" if 10 <= i <= 13 or 40 <= i <= 41 else None}


@pytest.fixture(scope="module", params=BACKENDS)
def store(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Store:
    """60 runs over 18 days (statuses, tags and gate verdicts mixed), plus one running run whose lease
    expired (reads incomplete) and one leased for a day (reads running); on each backend."""
    rng = random.Random(4)
    # the tests only read it: made once per backend
    store = store_maker(request.param, request, tmp_path_factory.mktemp("history"))()
    store.write({"runs": [_row(i, rng) for i in range(60)]})
    for run_id, hours, day in (("dead", -2, 20), ("live", 24, 21)):
        shifted_store(store, hours).start_run({"run_id": run_id, "experiment": "exp-1", "tags": ["pr"], "config": {},
                                              "started_at": f"2026-03-{day}T00:00:00+00:00"})
    return store


def _expected(store: Store, s: RunSelection) -> list[str]:
    """What the views did before: every run (live status, newest first), filtered in Python."""
    def keep(run: dict[str, Any]) -> bool:
        day = run["started_at"].date().isoformat()  # as the runs list read it: in the store's time zone
        status = (not s.status or run["status"] == s.status
                  or (s.status == "failed-gates" and run.get("passed") is False))
        passed = history_entry(run, {}).passed
        gates = not s.gates or (s.gates == "passed" and passed is True) or (s.gates == "failed" and passed is False)
        return bool(status and gates and (not s.experiment or run["experiment"] == s.experiment)
                    and (not s.tag or s.tag in (run.get("tags") or []))
                    and (not s.since or day >= s.since) and (not s.until or day <= s.until))
    return [r["run_id"] for r in store.runs() if keep(r)]


SELECTIONS = [RunSelection(), RunSelection(experiment="exp-1"), RunSelection(status="incomplete"),
              RunSelection(status="running"), RunSelection(status="failed-gates"), RunSelection(status="completed"),
              RunSelection(since="2026-03-05", until="2026-03-09"), RunSelection(experiment="exp-2", tag="pr"),
              *[RunSelection(tag=t) for t in TAGS], RunSelection(tag="p"), RunSelection(tag="hi"),
              RunSelection(tag="pr", status="incomplete", since="2026-03-02"), RunSelection(gates="passed"),
              RunSelection(gates="failed"), RunSelection(gates="failed", tag="pr"),
              RunSelection(gates="passed", tag="v_1")]


@pytest.mark.parametrize("selection", SELECTIONS, ids=repr)
def test_each_page_and_count_is_what_filtering_every_run_gives(store: Store, selection: RunSelection) -> None:
    expected = _expected(store, selection)
    assert store.run_count(selection) == len(expected)
    with store.reading():  # one connection for the ten pages, as a page of cobalt's reads them
        pages = [[r["run_id"] for r in store.run_page(selection, offset=o, limit=7)] for o in range(0, 70, 7)]
    assert [i for page in pages for i in page] == expected
    assert all(len(page) == 7 for page in pages[: len(expected) // 7])


def _grouped(run_ids: list[str], store: Store) -> list[list[str]]:
    """What the runs list did before: the selected runs as rows, a run group's variants in one (where its newest is)."""
    group = {r["run_id"]: r.get("group_id") for r in store.runs()}
    rows: list[list[str]] = []
    at: dict[str, list[str]] = {}
    for run_id in run_ids:
        key = group[run_id]
        if key and key in at:
            at[key].append(run_id)
            continue
        rows.append([run_id])
        if key:
            at[key] = rows[-1]
    return rows


@pytest.mark.parametrize("selection", SELECTIONS, ids=repr)
def test_each_page_of_rows_groups_the_variants_as_grouping_every_run_did(store: Store, selection: RunSelection) -> None:
    expected = _grouped(_expected(store, selection), store)
    assert store.row_count(selection) == len(expected)
    with store.reading():
        pages = [[[r["run_id"] for r in row] for row in store.row_page(selection, offset=o, limit=5)]
                 for o in range(0, 70, 5)]
    assert [row for page in pages for row in page] == expected
    if selection == RunSelection():
        assert ["r013", "r012", "r011", "r010"] in expected  # the group is one row, newest variant first


def test_the_run_before_each_is_the_newest_completed_of_its_experiment_and_variant(store: Store) -> None:
    runs = store.runs()  # newest first
    expected: dict[str, str] = {}
    last: dict[tuple[str, str], str] = {}
    for run in reversed(runs):
        key = (run["experiment"], str(run.get("variant") or ""))
        if key in last:
            expected[run["run_id"]] = last[key]
        if run["status"] == "completed":
            last[key] = run["run_id"]
    assert store.previous_runs([r["run_id"] for r in runs]) == expected
    assert len(expected) > 40 and store.previous_runs([]) == {}


def test_a_page_reads_live_statuses(store: Store) -> None:
    statuses = {r["run_id"]: r["status"] for r in store.run_page(RunSelection(tag="pr"), limit=100)}
    assert (statuses["dead"], statuses["live"]) == ("incomplete", "running")


def test_the_filters_choices_come_from_the_store(store: Store) -> None:
    assert store.experiment_names() == ["exp-0", "exp-1", "exp-2"]
    every = {t for r in store.runs() for t in r["tags"]}
    assert store.tag_names() == sorted(every)
    assert store.tag_names("exp-2") == sorted({t for r in store.runs("exp-2") for t in r["tags"]})
    assert store.newest_experiment() == store.runs()[0]["experiment"]


def test_no_store_yet_is_no_runs(make_store: MakeStore) -> None:
    store = make_store()
    assert (store.run_page(), store.run_count(), store.experiment_names(), store.tag_names(),
            store.newest_experiment(), store.row_page(), store.row_count(), store.previous_runs(["x"])
            ) == ([], 0, [], [], None, [], 0, {})
    assert not store.path.exists() and not store.exists()
