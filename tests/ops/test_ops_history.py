"""History entries and run references through `cobalt_lib.ops`, in process against a real store."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from conftest import killed_and_live_runs
from ops_project import qa_config, run

from cobalt_lib import ConfigError, Store
from cobalt_lib.ops import (
    history_entry,
    resolve_pair,
    resolve_ref,
    run_duration_ms,
    run_history,
)


def test_history_lists_runs_newest_first_with_means_verdicts_and_working_time(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = qa_config(project)
    good = run(config, "qa")
    monkeypatch.setenv("QA_WRONG", "2")
    bad = run(config, "qa", add_tags=["nightly"])
    entries = run_history(config)
    assert [(e.run_id, e.verdict, e.tags) for e in entries] == [
        (bad.id, "FAILED", ["smoke", "nightly"]), (good.id, "passed", ["smoke"])]
    assert entries[0].scores == {"exact": 0.5, "short": 0.5}  # "nope" is not short
    assert [e.duration_ms for e in entries] == [bad.summary.total_duration_ms, good.summary.total_duration_ms]
    assert all(e.duration_ms and e.duration_ms > 0 for e in entries)
    assert [e.run_id for e in run_history(config, tag="nightly")] == [bad.id]
    assert [e.run_id for e in run_history(config, limit=1)] == [bad.id]
    assert entries[0].model_dump(mode="json")["date"] == bad.timestamp


def test_history_refuses_a_bad_limit_and_a_mistyped_experiment(project: Path) -> None:
    config = qa_config(project)
    assert run_history(config, experiment="qa") == []  # an empty store: nothing wrong, nothing to list
    run(config, "qa")
    with pytest.raises(ConfigError, match=re.escape("--limit must be 1 or more, got 0.")):
        run_history(config, limit=0)
    with pytest.raises(ConfigError, match=re.escape("No runs of experiment 'qaa' are stored; did you mean 'qa'? "
                                                    "(stored experiments: qa)")):
        run_history(config, experiment="qaa")


def test_a_runs_duration_is_its_working_time_not_its_wall_time() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    row = {"run_id": "r", "experiment": "qa", "status": "completed", "started_at": start,
           "finished_at": start + timedelta(hours=5)}
    assert run_duration_ms({**row, "summary": {"total_duration_ms": 1500.0}, "worked_ms": 1500.0}) == 1500.0
    assert run_duration_ms({**row, "status": "incomplete", "summary": None, "worked_ms": 800.0}) == 800.0
    assert run_duration_ms({**row, "summary": None, "worked_ms": None}) == 5 * 3600 * 1000  # a store from before
    assert run_duration_ms({**row, "finished_at": None, "worked_ms": 0.0}) is None
    entry = history_entry({**row, "status": "completed", "passed": None, "summary": {"judge_cost": 0.5}}, {})
    assert (entry.verdict, entry.judge_cost, entry.cost, entry.date) == ("completed", 0.5, None, start.isoformat())


def test_references_resolve_to_runs_and_their_experiment(project: Path) -> None:
    config = qa_config(project)
    first, second = run(config, "qa"), run(config, "qa")
    other = run(config, "other")
    assert resolve_ref(config, "latest").model_dump() == {"run_id": other.id, "experiment": "other-agent"}
    assert resolve_ref(config, "previous", "qa").run_id == first.id
    assert resolve_ref(config, first.id[:-2]).run_id == first.id
    # `latest` beside a named run is that run's experiment's latest, not the newest run of any experiment.
    pair = resolve_pair(config, (first.id, "latest"))
    assert (pair.a.run_id, pair.b.run_id, pair.scope) == (first.id, second.id, "qa")
    named = resolve_pair(config, ("previous", "latest"), "qa")
    assert (named.a.run_id, named.b.run_id, named.scope) == (first.id, second.id, None)
    with pytest.raises(ConfigError, match=re.escape("Experiment 'other-agent' (the newest run's) has 1 run, so no "
                                                    "previous one")):
        resolve_pair(config, ("previous", "latest"))
    with pytest.raises(ConfigError, match="No run has id 'nope'"):
        resolve_ref(config, "nope")


def test_history_entries_of_a_store_holding_a_killed_run(project: Path) -> None:
    config = qa_config(project)
    store = killed_and_live_runs(project)
    entries = run_history(config)
    assert [(e.run_id, e.verdict, e.duration_ms) for e in entries] == [
        ("r-live", "running", None), ("r-killed", "incomplete", None)]
    store.add_work("r-killed", 250.0)
    assert run_history(config)[1].duration_ms == 250.0  # what its stages did before it was killed


def test_a_run_is_found_by_its_random_suffix_and_an_ambiguous_suffix_names_the_candidates(project: Path) -> None:
    config = qa_config(project)
    store = Store.for_config(config)
    for run_id in ("20260101000000-1dab42c9", "20260102000000-1dab9999", "20260103000000-77ab0000"):
        store.start_run({"run_id": run_id, "experiment": "qa", "started_at": "2026-01-01T00:00:00+00:00",
                         "tags": [], "config": {}})
    assert resolve_ref(config, "1dab42c9").run_id == "20260101000000-1dab42c9"
    assert resolve_ref(config, "77ab").run_id == "20260103000000-77ab0000"
    assert resolve_ref(config, "20260102").run_id == "20260102000000-1dab9999"  # a prefix still wins
    with pytest.raises(ConfigError, match=r"^Run id '1dab' is ambiguous \(20260101000000-1dab42c9, "
                                          r"20260102000000-1dab9999\); give more characters\.$"):
        resolve_ref(config, "1dab")
