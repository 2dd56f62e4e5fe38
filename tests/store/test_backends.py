"""The store's behaviour on both backends: a DuckDB file and a real Postgres server (tests/pg.py).

`make_store` (tests/stores.py) gives a fresh, empty store of the test's backend: a new file, or a new
schema-free database reached by URL (its journal under the test's own directory).
"""

from __future__ import annotations

import pytest
from stores import MakeStore

from cobalt_lib import ConfigError, Store, StoreError
from cobalt_lib._errors import LeaseLost
from cobalt_lib.store._journal import Journal, left, put_in, replay_left
from cobalt_lib.store._liveness import working
from cobalt_lib.store._schema import SCHEMA_VERSION, VERSION_TABLE


def _run(run_id: str = "r1") -> dict[str, object]:
    return {"run_id": run_id, "experiment": "qa", "started_at": "2026-01-01T00:00:00+00:00", "tags": ["t"],
            "config": {"evaluators": [{"name": "e"}]}}


def _items(run_id: str, n: int) -> dict[str, list[dict[str, object]]]:
    return {"outputs": [{"run_id": run_id, "item_index": i, "run_index": 0, "input": {"q": f"question {i}"},
                         "output": f"answer {i}", "status": "ok" if i % 4 else "error", "latency_ms": 1.5 * i,
                         "tokens": float(i), "error": None if i % 4 else "boom\x00"} for i in range(n)],
            "scores": [{"run_id": run_id, "item_index": i, "run_index": 0, "evaluator": "e", "score": i / n,
                        "status": "ok", "passed": i / n >= 0.5, "reason": f"because {i}"} for i in range(n)]}


def test_a_run_written_and_read_back_alike(make_store: MakeStore) -> None:
    store = make_store()
    assert not store.exists()
    store.start_run(_run(), identity={"evaluators": ["e"]}, claim=True)
    store.write(_items("r1", 8), add_work=("r1", 25.0))
    store.finish_run({**_run(), "status": "completed", "passed": True, "summary": {"total_duration_ms": 7}},
                     [{"run_id": "r1", "metric": "e", "kind": "evaluator", "mean": 0.4375}], [])
    assert store.exists()
    [run] = store.runs()
    assert (run["status"], run["tags"], run["passed"], run["worked_ms"]) == ("completed", ["t"], True, 25.0)
    outputs = store.rows("outputs", "r1")
    assert [o["output"] for o in outputs] == [f"answer {i}" for i in range(8)]
    assert outputs[0]["input"] == {"q": "question 0"} and outputs[3]["tokens"] == 3
    # Postgres text holds no NUL: the one difference in what comes back (docs/store.md)
    assert outputs[0]["error"] in ("boom\x00", "boom\ufffd")
    assert store.live_counts("r1") == {"done": 8, "errors": 2, "timeouts": 0, "scored": 8, "eval_errors": 0}
    assert store.evaluator_means(["r1"]) == {"r1": {"e": 0.4375}}
    matched, page = store.item_page("r1", search="QUESTION 5")
    assert matched == 1 and page[0]["item_index"] == 5 and page[0]["scores"][0]["reason"] == "because 5"
    matched, _ = store.item_page("r1", only="failures")
    assert matched == 5  # agent errors on 0 and 4, scores below the pass mark on 0-3
    assert [b["n"] for b in store.score_bins("r1", bins=2) if b["bin"] >= 0] == [4, 4]
    assert store.query("SELECT identity FROM identities") == [{"identity": {"evaluators": ["e"]}}]
    store.delete_runs(["r1"])
    assert store.runs() == []


def test_a_replayed_journal_puts_each_row_in_once(make_store: MakeStore) -> None:
    store = make_store()
    store.start_run(_run())
    store.write(_items("r1", 3))  # rows a process wrote straight in, then sealed again in its journal
    journal = Journal(store, "rows-test")
    journal.add(_items("r1", 5))
    journal.add({}, add_work=("r1", 10.0))
    # the process died after its segments went in and before it removed them: the replay doubles nothing
    put_in(store, journal._segments[1])
    journal.close()
    assert left(store)
    assert replay_left(store) == 2
    assert replay_left(store) == 0
    assert len(store.rows("outputs", "r1")) == 5 and len(store.rows("scores", "r1")) == 5
    assert store.worked_ms("r1") == 10.0


def test_a_claim_is_one_process_at_a_time_and_fences_its_writes(make_store: MakeStore) -> None:
    store = make_store()
    store.start_run(_run(), claim=True)
    working(store.key, "r1", True)  # this process works on it: a second claim is refused
    try:
        with pytest.raises(ConfigError, match="still running"):
            store.start_run(_run(), claim=True)
    finally:
        working(store.key, "r1", False)
    assert store.renew_lease("r1", 30) is True
    # another machine takes the run over (its epoch and token): this process's writes stop
    with store._transaction() as con:
        con.execute("UPDATE runs SET lease_epoch = lease_epoch + 1, lease_token = 'theirs' WHERE run_id = ?", ["r1"])
    with pytest.raises(LeaseLost, match="taken over"):
        store.write(_items("r1", 2))
    assert store.rows("outputs", "r1") == []
    with pytest.raises(LeaseLost):
        store.renew_lease("r1", 30)


def test_labels_kept_per_person(make_store: MakeStore) -> None:
    store = make_store()
    store.start_run(_run())
    store.write(_items("r1", 2))
    row = {"experiment": "qa", "evaluator": "e", "item_id": "i0", "run_id": "r1", "item_index": 0}
    store.add_labels([{**row, "value": 1.0, "who": "ana", "set_at": "2026-01-01T00:00:00+00:00"},
                      {**row, "value": 0.0, "who": "bo", "set_at": "2026-01-01T00:00:01+00:00"}])
    store.add_labels([{**row, "value": 0.0, "who": "ana", "set_at": "2026-01-01T00:00:02+00:00"}])
    labels = store.labels("qa", "e")
    assert sorted((label["who"], label["value"]) for label in labels) == [("ana", 0.0), ("bo", 0.0)]
    assert len(store.labels("qa", "e", history=True)) == 3


def test_the_schema_version_is_recorded_and_a_newer_one_refused(make_store: MakeStore) -> None:
    store = make_store()
    store.start_run(_run())
    assert store.query(f"SELECT max(version) AS v FROM {VERSION_TABLE}") == [{"v": SCHEMA_VERSION}]
    with store._transaction() as con:
        con.execute(f"INSERT INTO {VERSION_TABLE} VALUES (?, 'future', current_timestamp)", [SCHEMA_VERSION + 1])
    with pytest.raises(StoreError, match=f"schema version {SCHEMA_VERSION + 1}, newer than this cobalt's "
                                         f"\\({SCHEMA_VERSION}\\)"):
        fresh_process(store).ensure_schema()


def fresh_process(store: Store) -> Store:
    """The store as a new process meets it (its schema not yet checked here)."""
    from cobalt_lib.store import _store

    _store._SCHEMA_READY.clear()
    _store._VERSION_CHECKED.clear()
    return store.like()


def test_a_row_the_store_refuses_is_set_aside_and_the_others_go_in(make_store: MakeStore,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from cobalt_lib.store._journal import set_aside

    store = make_store()
    store.start_run(_run())
    journal = Journal(store, "rows-bad")
    rows = [{"run_id": "r1", "dagster_run_id": f"d{i}", "how": "executed",
             "recorded_at": "not a moment" if i == 1 else "2026-01-01T00:00:00+00:00"} for i in range(3)]
    journal.write({"dagster_runs": rows})
    journal.close()
    assert [r["dagster_run_id"] for r in store.query("SELECT dagster_run_id FROM dagster_runs ORDER BY 1")] == [
        "d0", "d2"]
    [aside] = set_aside(store)
    assert (aside.table, aside.rows) == ("dagster_runs", 1)
    assert "the store refused a row of dagster_runs" in capsys.readouterr().err


def test_dataset_versions_are_numbered_and_diffed_alike(make_store: MakeStore) -> None:
    store = make_store()
    store.start_run(_run())

    def items(n: int, changed: int = -1) -> list[dict[str, object]]:
        return [{"position": i, "item_id": f"i{i}", "item_hash": f"h{i}{'x' if i == changed else ''}", "split": None,
                 "item": {"input": f"q{i}"}, "origin": None} for i in range(n)]

    version = {"hash": "a", "split_hash": "s", "items": 3, "splits": {}}
    assert store.add_dataset_version("qa", version, items(3)) == (1, True)
    assert store.add_dataset_version("qa", version, items(3), unless_hash=("a", "s")) == (1, False)
    assert store.add_dataset_version("qa", {**version, "hash": "b", "items": 4}, items(4, changed=1)) == (2, True)
    assert [v["version"] for v in store.dataset_versions("qa")] == [1, 2]
    assert [i["item"] for i in store.dataset_items("qa", 2)][:1] == [{"input": "q0"}]
    assert [(d["item_id"], d["change"]) for d in store.dataset_diff("qa", 1, 2)] == [("i1", "changed"),
                                                                                   ("i3", "added")]
