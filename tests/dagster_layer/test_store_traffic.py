"""What a Dagster-tracked run costs in store connections: each step reads the run's rows over one
connection and passes them on, so the run opens the DuckDB file a bounded number of times (each open
costs 9-20 ms), while storing and recording exactly what it did."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from dagster_jobs import execute_job

import cobalt_dagster
from cobalt_dagster._definitions import build_experiment_defs, resources
from cobalt_lib import Dataset, Evaluator, Store, experiment, load_config, threshold

#: Per run, measured: 20 (the sharded job: dataset, split, merge, aggregates streaming the rows back in
#: chunks and counting the flips against the previous run in SQL, a check per gate: three here, the
#: experiment's, every evaluator scored and error rate; a shard never opens the store, it writes to the
#: exchange). Before the reads were combined, the four-asset job opened the store 22 times. Since runs carry
#: their evaluation identity: 22 (the partition's run writes it when it starts, its aggregates read it back).
#: Since stored datasets are assets: 23 (the definitions, built once per run here, list the stored datasets).
#: Since grading runs are recorded: 24 (the definitions ask whether the store holds a grading run).
BUDGET = 24


def test_a_dagster_tracked_run_opens_the_store_a_bounded_number_of_times(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COBALT_LEASE_SECONDS", "3600")  # no lease renewal falls within the run, however slow
    root = tmp_path / "proj"
    root.mkdir()
    (root / "cobalt.toml").write_text("", encoding="utf-8")
    config = load_config(root)
    answers = {"q0": "a0", "q1": "a1", "q2": "wrong", "q3": "a3"}
    exp = experiment("traffic", Dataset([{"input": f"q{i}", "expected_output": f"a{i}"} for i in range(4)]),
                     lambda ctx: answers[ctx.item["input"]], evaluators=[Evaluator(name="exact", type="exact-match")],
                     assertions=[threshold("exact", 0.5)])
    first, _ = execute_job(config, exp)
    answers["q2"] = "a2"
    opened = Store.connections_opened()
    second, _ = execute_job(config, exp)
    assert Store.connections_opened() - opened <= BUDGET

    assert first is not None and second is not None
    assert (first.status, second.status) == ("completed", "completed")
    assert (second.summary.scores["exact"].avg, first.summary.scores["exact"].avg) == (1.0, 0.75)
    stored = Store.for_config(config)
    assert [r["run_id"] for r in stored.runs("traffic")] == [second.id, first.id]
    assert len(stored.rows("outputs", second.id)) == len(stored.rows("scores", second.id)) == 4
    assert [v["passed"] for v in stored.rows("verdicts", second.id)] == [True, True, True]
    with cobalt_dagster.local_instance(config) as instance:
        [record] = instance.fetch_materializations(dg.AssetRecordsFilter(
            asset_key=dg.AssetKey(["traffic", "aggregates"]), asset_partitions=[second.id]), limit=1).records
        metadata = record.asset_materialization.metadata  # type: ignore[union-attr]
        # The previous run, looked up with the step's other reads before the run was finished, is found.
        assert f"Compared with run `{first.id}`" in metadata["diff_with_previous"].value
        assert metadata["items_flipped"].value == 1
        checks = instance.get_records_for_run(run_id=record.run_id,
                                              of_type=dg.DagsterEventType.ASSET_CHECK_EVALUATION).records
        assert [r.event_log_entry.dagster_event.asset_check_evaluation_data.passed  # type: ignore[union-attr]
                for r in checks] == [True, True, True]

    # Outputs and scores materialised again for the same partition replace the rows stored there.
    answers["q0"] = "wrong"
    [defs] = build_experiment_defs([exp], config)
    definitions = dg.Definitions(assets=defs.assets, asset_checks=defs.checks, jobs=[defs.job],
                                 resources=resources(config), executor=dg.in_process_executor)
    with cobalt_dagster.local_instance(config) as instance:
        result = definitions.resolve_job_def(defs.job.name).execute_in_process(
            instance=instance, partition_key=second.id, raise_on_error=False,
            asset_selection=[dg.AssetKey(["traffic", stage]) for stage in ("outputs", "scores", "aggregates")])
    assert result.success
    assert [o["output"] for o in stored.rows("outputs", second.id)] == ["wrong", "a1", "a2", "a3"]
    assert [s["score"] for s in stored.rows("scores", second.id)] == [0.0, 1.0, 1.0, 1.0]
    assert [a["mean"] for a in stored.rows("aggregates", second.id) if a["metric"] == "exact"] == [0.75]
