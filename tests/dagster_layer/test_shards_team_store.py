"""A run Dagster launches in shards on the team store (a real Postgres, tests/pg.py): the multiprocess
executor's step processes write their shard's rows to the exchange and renew the run's lease through the
store, and `merge` puts every item in once; no DuckDB file is made and no volume is shared."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from pg import Server
from shardjob import ITEMS, reconstructable
from test_shards import SHARD_STEP, add_partition, sharded, steps  # noqa: F401  (the fixture)

from cobalt_lib import Store, load_config


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_sharded_run_on_the_team_store_has_every_item_once(sharded: Path, instance: dg.DagsterInstance,  # noqa: F811
                                                             pg_server: Server, monkeypatch: pytest.MonkeyPatch,
                                                             llm: Any) -> None:
    url = pg_server.create_database("sharded")
    monkeypatch.setenv("COBALT_STORE_URL", url)  # the step processes inherit it, as a deployment's pods would
    partition = add_partition(instance)
    with dg.execute_job(reconstructable(sharded), instance=instance, tags={"dagster/partition": partition}) as done:
        assert done.success
    assert sum(SHARD_STEP in s for s in set(steps(instance, done.run_id, dg.DagsterEventType.STEP_START))) == 3
    store = Store.for_config(load_config(sharded))
    assert store.backend.name == "postgres"
    rows = store.query("SELECT item_index, count(*) AS n FROM outputs WHERE run_id = ? GROUP BY item_index "
                       "ORDER BY item_index", [partition])
    assert [(r["item_index"], r["n"]) for r in rows] == [(i, 1) for i in range(ITEMS)]
    assert store.query("SELECT count(*) AS n FROM scores WHERE run_id = ?", [partition]) == [{"n": 2 * ITEMS}]
    assert store.run_status(partition) == "completed"
    assert store.get_run(partition)["source"] == "dagster"  # type: ignore[index]
    assert not (sharded / ".cobalt" / "cobalt.duckdb").exists()
