"""A baseline cannot be blessed by accident: `--update-baselines` writes none from a run that failed a gate,
was interrupted or is incomplete, and a baseline it does write says how it measures differently from the
one it replaced."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cobalt_lib import load_config
from cobalt_lib.ops import RunOptions, Selection, prepare_runs, run_experiments
from cobalt_lib.ops._run import write_baselines
from cobalt_lib.run import RunInterrupted

#: `gated`: COUNT items (default 3); STOP_AT interrupts the agent as Ctrl-C would; WRONG answers wrong.
GATED = '''
import os
from cobalt_lib import Dataset, Evaluator, experiment, no_regression, threshold

items = [{"id": f"g{i}", "expected_output": f"a{i}"} for i in range(int(os.environ.get("COUNT", "3")))]


def agent(ctx):
    if ctx.index >= int(os.environ.get("STOP_AT", "99")):
        raise KeyboardInterrupt
    return "wrong" if os.environ.get("WRONG") else ctx.item["expected_output"]


experiment("gated", Dataset(items), agent, concurrency=1, evaluators=[Evaluator(name="exact", type="exact-match")],
           assertions=[threshold("exact", 0.5), no_regression("baselines/gated.json")])
'''

UPDATE = RunOptions(update_baselines=True, dagster=False)


@pytest.fixture
def gated(project: Path) -> Path:
    (project / "experiments").mkdir()
    (project / "experiments" / "gated.cobalt.py").write_text(GATED, encoding="utf-8")
    return project / "baselines" / "gated.json"


def test_an_interrupted_or_failing_run_writes_no_baseline(gated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STOP_AT", "1")
    with pytest.raises(RunInterrupted):
        run_experiments(load_config(), Selection(), UPDATE)
    assert not gated.exists()
    monkeypatch.delenv("STOP_AT")
    monkeypatch.setenv("WRONG", "1")
    [refused] = run_experiments(load_config(), Selection(), UPDATE).baselines
    assert (refused.written, refused.reason, gated.exists()) == (False, "it failed a gate", False)


def test_an_incomplete_run_is_refused_whoever_asks(gated: Path) -> None:
    outcome = run_experiments(load_config(), Selection(), UPDATE)
    written = gated.read_text()
    [plan] = prepare_runs(load_config(), Selection(), UPDATE).plans
    report = outcome.reports[0].model_copy(update={"status": "incomplete"})
    [refused] = write_baselines(plan, report)
    assert refused.message == (f"baseline {gated} not updated: run {report.id} of 'gated' it is incomplete.")
    assert gated.read_text() == written


def test_a_new_baseline_says_what_it_no_longer_measures(gated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_experiments(load_config(), Selection(), UPDATE)
    monkeypatch.setenv("COUNT", "2")
    [update] = run_experiments(load_config(), Selection(), UPDATE).baselines
    assert update.written and update.changes == [
        "the dataset changed (3 -> 2 items): its means are over different items"]
    assert update.message.endswith("; it measures differently from the baseline it replaced: the dataset changed "
                                   "(3 -> 2 items): its means are over different items")
    assert json.loads(gated.read_text())["$identity"]["dataset"]["items"] == 2
    # And without --update-baselines, the gate refuses a run measured on other items, naming those it lacks.
    monkeypatch.setenv("COUNT", "3")
    [report] = run_experiments(load_config(), Selection(), RunOptions(dagster=False)).reports
    verdicts = {v.name: v for v in report.assertions}
    assert not report.passed and "the dataset changed (2 -> 3 items)" in verdicts["no_regression:identity"].message
    assert "no_regression:items" not in verdicts  # more items than the baseline: none of its own is missing
    run_experiments(load_config(), Selection(), UPDATE)
    monkeypatch.setenv("COUNT", "1")
    [report] = run_experiments(load_config(), Selection(), RunOptions(dagster=False)).reports
    missing = next(v for v in report.assertions if v.name == "no_regression:items")
    assert not missing.passed and missing.message == (
        "2 items of the baseline are missing from this run: g1, g2; its means are over other items (rewrite "
        "baselines/gated.json with `cobalt run --update-baselines`, or pass no_regression(..., "
        "accept_identity_change=True))")
