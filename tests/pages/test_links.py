"""The Dagster addresses the pages link to: the run (by its partition tag), the asset partition and
the gate's check, named as cobalt_dagster names them; and where the served ports come from."""

from __future__ import annotations

from pathlib import Path

import pytest
from pages_project import served  # noqa: F401  (the shared served-project fixture)

from cobalt_lib import load_config
from cobalt_lib.ops import (
    dagster_asset_url,
    dagster_check_name,
    dagster_check_names,
    dagster_check_url,
    dagster_run_url,
    pages_url,
    run_page_url,
)
from cobalt_lib.pages._queries import RunFilters, runs_list
from cobalt_lib.store import Store


def test_dagster_urls_follow_the_dagster_ui_scheme(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cobalt.toml").write_text("[dashboard]\nport = 5000\n")
    config = load_config(tmp_path)
    assert dagster_run_url(config, "2026-ab") == "http://127.0.0.1:5000/runs?q%5B%5D=tag%3Adagster%2Fpartition%3D2026-ab"
    assert dagster_asset_url(config, "qa-agent", "scores", "r 1") == (
        "http://127.0.0.1:5000/assets/qa_agent/scores?view=partitions&partition=r+1")
    assert dagster_check_url(config, "qa-agent", "gate_x") == (
        "http://127.0.0.1:5000/assets/qa_agent/aggregates?view=checks&checkDetail=gate_x")
    assert run_page_url(config, "r/1") == "http://127.0.0.1:5001/runs/r%2F1"
    monkeypatch.setenv("COBALT_PAGES_URL", "http://127.0.0.1:9999/")
    assert pages_url(config) == "http://127.0.0.1:9999"


@pytest.mark.slow  # imports Dagster (`cobalt_dagster`), which may start a process the first time
@pytest.mark.parametrize(("gate", "check"), [
    ("exact >= 0.75", "gate_exact_min_0_75"),
    ("latency.p95 <= 5000", "gate_latency_p95_max_5000"),
    ("every evaluator scored", "gate_every_evaluator_scored"),
])
def test_check_names_come_from_the_gate_name(gate: str, check: str) -> None:
    from cobalt_dagster import check_name, check_names

    assert dagster_check_name(gate) == check_name(gate) == check
    assert dagster_check_names([gate, gate]) == check_names([gate, gate]) == [check, f"{check}_2"]


def test_a_long_gate_name_keeps_a_hash_to_stay_apart() -> None:
    long_a, long_b = "x" * 90 + " >= 0.5", "x" * 90 + " >= 0.6"
    assert len(dagster_check_name(long_a)) <= 60
    assert dagster_check_name(long_a) != dagster_check_name(long_b)


def test_only_runs_dagster_holds_link_their_dagster_run(tmp_path: Path) -> None:
    (tmp_path / "cobalt.toml").write_text("")
    config = load_config(tmp_path)
    store = Store.for_config(config)
    runs = (("r-lib", "library", "01"), ("r-rec", "library", "02"), ("r-dag", "dagster", "03"),
            ("r-skip", "library", "04"))
    for run_id, source, day in runs:
        store.start_run({"run_id": run_id, "experiment": "qa", "started_at": f"2026-01-{day}T00:00:00+00:00",
                         "source": source, "tags": [], "config": {}})
    store.mark_in_dagster("r-rec", "d-1", "recorded")
    store.mark_in_dagster("r-dag", "d-2", "executed")
    store.mark_in_dagster("r-skip", None, "skipped")
    links = {row["entry"].run_id: row["dagster"] for row in runs_list(config, RunFilters())["rows"]}
    assert links == {"r-dag": "http://127.0.0.1:4000/runs/d-2", "r-rec": "http://127.0.0.1:4000/runs/d-1",
                     "r-lib": None, "r-skip": None}
