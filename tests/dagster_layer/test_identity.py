"""A run Dagster launches carries its evaluation identity as a library run does: stored once when its dataset
asset starts it, and in the report its aggregates step writes (which read it back, computing nothing)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from conftest import TEST_KEY, write_judge_config
from shardjob import EXPERIMENT, ITEMS, make_project

import cobalt_dagster
from cobalt_lib import Store, load_config, read_results
from cobalt_lib.run import new_run_id

pytestmark = pytest.mark.slow


@pytest.fixture
def project(tmp_path: Path, llm: Any, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    root = tmp_path / "proj"
    root.mkdir()
    write_judge_config(root, llm)
    return make_project(root, (root / "cobalt.toml").read_text())


def test_a_dagster_launched_run_stores_its_identity_once(project: Path, instance: dg.DagsterInstance) -> None:
    partition = new_run_id()
    instance.add_dynamic_partitions(f"{EXPERIMENT}_runs", [partition])
    job = cobalt_dagster.build_definitions(project).resolve_job_def(f"{EXPERIMENT}_eval")
    assert job.execute_in_process(instance=instance, partition_key=partition).success
    store = Store.for_config(load_config(project))
    identity = store.identities_of([partition])[partition]
    assert identity.dataset.items == ITEMS and identity.evaluators
    assert store.query("SELECT count(*) AS n FROM identities WHERE run_id = ?", [partition]) == [{"n": 1}]
    report = read_results(str(store.require_run(partition)["results_path"]))
    assert report.identity == identity
