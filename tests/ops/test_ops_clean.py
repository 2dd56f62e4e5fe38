"""Planning and doing a clean-up through `cobalt_lib.ops`, against a real store and real files."""

from __future__ import annotations

import os
import time
from pathlib import Path

from conftest import shifted_store
from ops_project import qa_config

from cobalt_lib import Store
from cobalt_lib.ops import RunOptions, Selection, clean_up, plan_cleanup, run_experiments


def test_clean_deletes_runs_with_their_results_files_and_keeps_live_ones(project: Path) -> None:
    config = qa_config(project)
    reports = run_experiments(config, Selection(), RunOptions()).reports
    store = Store.for_config(config)
    shifted_store(store.path, 24).start_run({"run_id": "r-live", "experiment": "qa", "tags": [], "config": {},
                                             "started_at": "2020-01-01T00:00:00+00:00"})  # leased: alive, and old
    plan = plan_cleanup(config, cache=False, results=True, older_than="1d")
    assert (plan.run_ids, plan.skipped_live, plan.empty()) == ([], 1, True)  # the others are new
    plan = plan_cleanup(config, cache=False, results=True)
    files = sorted(Path(r.results_path or "").resolve() for r in reports)
    assert (plan.run_ids, plan.result_files, plan.skipped_live) == (sorted(r.id for r in reports), files, 1)
    assert plan.result_bytes == sum(f.stat().st_size for f in files) > 0
    clean_up(config, plan)
    assert [r["run_id"] for r in store.runs()] == ["r-live"] and not any(f.exists() for f in files)
    assert store.rows("outputs", reports[0].id) == []


def test_clean_deletes_old_cache_entries_and_the_folders_they_leave_empty(project: Path) -> None:
    config = qa_config(project)
    cache = config.output_path / "cache"
    old, new = cache / "ab" / "old.json", cache / "cd" / "new.json"
    for path in (old, new):
        path.parent.mkdir(parents=True)
        path.write_text("{}")
    week_ago = time.time() - 7 * 86400
    os.utime(old, (week_ago, week_ago))
    plan = plan_cleanup(config, cache=True, results=False, older_than="2d")
    assert (plan.cache_files, plan.cache_bytes, plan.run_ids) == ([old], 2, [])
    clean_up(config, plan)
    assert not old.exists() and not old.parent.exists() and new.exists()


def test_clean_removes_the_runs_shard_files_and_the_side_files_no_run_points_to(project: Path) -> None:
    from cobalt_lib import Dataset, Evaluator, experiment, load_config

    (project / "cobalt.toml").write_text("[store]\nmax_value_bytes = 1024\n")
    config = load_config(project)
    answers = {"text": "a" * 5000}
    long = experiment("long", Dataset([{"input": "q"}]), lambda ctx: answers["text"],
                      evaluators=[Evaluator(name="one", type="function", fn=lambda ctx: 1.0)])
    gone = long.run(config=config)
    shared = long.run(config=config)  # the same long answer: the same side file as `gone`
    answers["text"] = "b" * 5000
    kept = long.run(config=config)
    values = config.output_path / "values"
    assert len(list(values.glob("*.json"))) == 2  # content-addressed: one per distinct long value
    exchange = config.output_path / "exchange"
    for run_id in (gone.id, kept.id):  # as a Dagster-launched run's shards leave them
        (exchange / run_id / "shard-00000").mkdir(parents=True)
        (exchange / run_id / "shard-00000" / "part-000000-0.json").write_text("{}")
    plan = plan_cleanup(config, cache=False, results=True)
    plan.run_ids = [gone.id]
    clean_up(config, plan)
    assert sorted(p.name for p in exchange.iterdir()) == [kept.id]
    assert len(list(values.glob("*.json"))) == 2  # `shared` still points to the first
    plan.run_ids = [shared.id]
    clean_up(config, plan)
    [left] = values.glob("*.json")
    assert "b" * 100 in left.read_text()  # only `kept`'s side file is left
    assert Store.for_config(config).rows("outputs", kept.id)[0]["output"] == "b" * 5000  # read back whole
