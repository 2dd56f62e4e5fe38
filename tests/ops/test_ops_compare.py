"""Comparing stored runs through `cobalt_lib.ops`: warnings and the regression verdict, in process."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ops_project import interrupted_qa_run, qa_config, run, write_experiment

from cobalt_lib import ConfigError
from cobalt_lib.ops import compare_runs

#: 20 items: WIDE_WRONG of them answered wrong; enough pairs for a bootstrap CI to leave zero.
WIDE = '''
import os
from cobalt_lib import Dataset, Evaluator, experiment

experiment("wide", Dataset([{"expected_output": f"a{i}"} for i in range(20)]),
           lambda ctx: "x" if ctx.index < int(os.environ.get("WIDE_WRONG", "0")) else ctx.item["expected_output"],
           evaluators=[Evaluator(name="exact", type="exact-match")], concurrency=1)
'''


def test_a_regression_is_the_verdict_fail_on_regression_acts_on(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = qa_config(project)
    write_experiment(project, "wide.cobalt.py", WIDE)
    before = run(config, "wide")
    monkeypatch.setenv("WIDE_WRONG", "10")
    after = run(config, "wide")
    outcome = compare_runs(config, "previous", "latest", fail_on_regression=True)
    c = outcome.comparison
    assert (c.run_a, c.run_b, c.scope, c.paired) == (before.id, after.id, "wide", 20)
    assert (outcome.regressions, outcome.warnings) == (["regressed: exact"], [])
    improved = compare_runs(config, after.id, before.id)
    assert improved.regressions == [] and improved.comparison.scope is None


def test_comparing_a_run_with_itself_or_another_experiment_warns(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = qa_config(project)
    qa, other = run(config, "qa"), run(config, "other")
    same = compare_runs(config, qa.id, qa.id)
    assert same.warnings == [f"both ids name the same run {qa.id}; a run compared with itself shows no change."]
    assert compare_runs(config, qa.id[:-1], qa.id).warnings == [
        f"both ids name the same run {qa.id} ({qa.id[:-1]!r} and {qa.id!r}); a run compared with itself shows no "
        "change."]
    across = compare_runs(config, qa.id, other.id)
    assert across.warnings == [f"run {qa.id} is of experiment 'qa' and run {other.id} of 'other-agent'; items are "
                               "paired by identity (their id, else their content) across different experiments."]
    assert capsys.readouterr() == ("", "")  # warnings are data: nothing printed


def test_an_unfinished_run_is_a_warning_and_refused_by_fail_on_regression(
        project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = qa_config(project)
    done = run(config, "qa")
    cut = interrupted_qa_run(config, monkeypatch)
    outcome = compare_runs(config, done.id, cut)
    assert outcome.warnings == [f"run B ({cut}) is incomplete: only its finished items are compared."]
    with pytest.raises(ConfigError, match=re.escape(f"Run B ({cut}) is incomplete; --fail-on-regression compares "
                                                    "completed runs only")):
        compare_runs(config, done.id, cut, fail_on_regression=True)


def test_compare_needs_runs_and_a_sane_top(project: Path) -> None:
    config = qa_config(project)
    with pytest.raises(ConfigError, match="There are no runs to compare yet; run `cobalt run` first"):
        compare_runs(config, "previous", "latest")
    with pytest.raises(ConfigError, match=re.escape("--top must be 0 or more, got -1.")):
        compare_runs(config, "previous", "latest", top=-1)


#: Items with ids (two sharing one), some without; B drops one, changes the input of another, adds one,
#: and answers differently: every kind of pair and unpaired item, with two repeats each.
SHIFTING = '''
import os
from cobalt_lib import Dataset, Evaluator, experiment

b = os.environ.get("SHIFT") == "b"
items = [{"id": f"k{i % 9}", "input": f"q{i}", "expected_output": f"a{i % 3}"} for i in range(12)]
items += [{"input": f"plain {i}", "expected_output": "a0"} for i in range(4)]
if b:
    items = items[1:] + [{"id": "new", "input": "n", "expected_output": "a1"}]
    items[5] = {"input": "changed", "expected_output": "a2"}
experiment("shifting", Dataset(items), lambda ctx: f"a{(ctx.index + ctx.run_index + (2 if b else 0)) % 3}", runs=2,
           evaluators=[Evaluator(name="exact", type="exact-match"),
                       Evaluator(name="len", type="function", fn=lambda ctx: len(str(ctx.output)) / 4)])
'''


@pytest.mark.parametrize("backend", ["duckdb", pytest.param("postgres", marks=pytest.mark.slow)])
def test_compare_streamed_from_the_store_in_chunks_is_the_in_memory_comparison(
        project: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest, backend: str) -> None:
    from cobalt_lib import Store
    from cobalt_lib.results import compare_reports
    from cobalt_lib.results._compare import compare_chunks
    from cobalt_lib.store import load_report, stored_pair_chunks, streamed_report

    if backend == "postgres":  # the team store: the same pairing in Postgres's SQL
        monkeypatch.setenv("COBALT_STORE_URL", request.getfixturevalue("pg_url"))
    config = qa_config(project)
    write_experiment(project, "shifting.cobalt.py", SHIFTING)
    before = run(config, "shifting")
    monkeypatch.setenv("SHIFT", "b")
    after = run(config, "shifting")
    store = Store.for_config(config)
    whole = compare_reports(load_report(store, before.id), load_report(store, after.id), top=3)
    assert whole.paired == 14 and {u.reason for u in whole.unpaired} == {"only in A", "only in B"}
    assert whole.regressions and whole.improvements
    headers = [streamed_report(store, run_id) for run_id in (before.id, after.id)]
    for chunk in (1, 4, 2000):
        streamed = compare_chunks(*headers, stored_pair_chunks(store, before.id, after.id, chunk), top=3)
        assert streamed.model_dump() == whole.model_dump(), chunk
    assert compare_runs(config, before.id, after.id, top=3).comparison.model_dump() == whole.model_dump()
