"""A team on one store at once (issue 32): eight `cobalt run` processes in eight project directories (eight
"machines"), a run Dagster launches in shards (multiprocess executor: each shard's step process writes to the
exchange on moto's S3 server and renews the run's lease through the store, no shared volume) and two people
importing labels, all against one real Postgres (tests/pg.py). Every run ends complete with every item exactly
once, every label is kept, and no DuckDB file is made."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from pg import Server
from shardjob import EXPERIMENT, ITEMS, make_project, reconstructable
from slowdown import scaled
from test_shards import SHARD_STEP, add_partition, steps
from test_shards_distributed import s3, sharded  # noqa: F401  (the fixtures)

from cobalt_lib import Store, load_config

COBALT = str(Path(sys.executable).parent / "cobalt")
MACHINES = 8
LABELS = 40  # per person


def _env(url: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if k not in (
        "GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY", "DAGSTER_HOME", "COBALT_PROJECT_DIR")}
    return {**clean, "COBALT_TESTING": "1", "COBALT_DAGSTER_RECORD": "off", "COBALT_STORE_URL": url}


def _labels(root: Path, who: str) -> Path:
    path = root / f"labels-{who}.jsonl"
    path.write_text("".join(json.dumps({"experiment": EXPERIMENT, "evaluator": "exact", "item_id": f"q{i % ITEMS}",
                                        "value": i % 2, "note": f"{who} {i}"}) + "\n" for i in range(LABELS)))
    return path


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_eight_runs_a_sharded_dagster_run_and_label_writes_at_once_keep_every_item_once(
        sharded: Path, instance: dg.DagsterInstance, pg_server: Server, s3: str,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, llm: Any) -> None:
    url = pg_server.create_database("together")
    monkeypatch.setenv("COBALT_STORE_URL", url)  # Dagster's step processes inherit it, as a deployment's pods would
    toml = (sharded / "cobalt.toml").read_text()
    make_project(sharded, toml, exchange="s3://exchange/cobalt")
    machines = [make_project(tmp_path / f"machine-{n}", toml) for n in range(MACHINES)]
    env = _env(url)
    runs = [subprocess.Popen([COBALT, "run", "--no-dagster"], cwd=root, env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE) for root in machines]
    partition = add_partition(instance)
    with dg.execute_job(reconstructable(sharded), instance=instance, tags={"dagster/partition": partition}) as done:
        assert done.success
    assert sum(SHARD_STEP in s for s in set(steps(instance, done.run_id, dg.DagsterEventType.STEP_START))) == 3
    # Labels need a stored run of their experiment (its evaluators' scales): the Dagster run is one (the eight
    # runs may still be writing as the two imports go in).
    imports = [subprocess.Popen([COBALT, "labels", "import", str(_labels(machines[n], who)), "--who", who],
                                cwd=machines[n], env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
               for n, who in enumerate(("ana", "ben"))]
    for proc in (*runs, *imports):
        out, err = proc.communicate(timeout=scaled(600))
        assert proc.returncode == 0, (out, err)

    store = Store.for_config(load_config(sharded))
    assert store.backend.name == "postgres"
    assert store.get_run(partition)["source"] == "dagster"  # type: ignore[index]
    run_ids = [r["run_id"] for r in store.query("SELECT run_id FROM runs ORDER BY run_id")]
    assert len(run_ids) == MACHINES + 1 and partition in run_ids
    assert {store.run_status(r) for r in run_ids} == {"completed"}
    per_item = store.query("SELECT run_id, item_index, count(*) AS n FROM outputs GROUP BY run_id, item_index")
    assert sorted((r["run_id"], r["item_index"], r["n"]) for r in per_item) == sorted(
        (r, i, 1) for r in run_ids for i in range(ITEMS))
    scores = store.query("SELECT run_id, count(*) AS n FROM scores GROUP BY run_id")
    assert sorted((r["run_id"], r["n"]) for r in scores) == sorted((r, 2 * ITEMS) for r in run_ids)
    history = store.labels(EXPERIMENT, history=True)
    assert sorted((row["who"], row["note"]) for row in history) == sorted(
        (who, f"{who} {i}") for who in ("ana", "ben") for i in range(LABELS))
    assert len({row["seq"] for row in history}) == 2 * LABELS  # each write its own sequence number
    assert not any((root / ".cobalt" / "cobalt.duckdb").exists() for root in (sharded, *machines))
