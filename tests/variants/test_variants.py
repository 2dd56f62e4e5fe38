"""A 2 x 2 variant experiment (model x prompt) against the loopback LLM server: one run per variant in one
group, one judge cache, the grid equal to `compare`, the frontier, per-variant gates and `--variant`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakellm import FakeLLM
from typer.testing import CliRunner
from variant_project import sweep_project

from cobalt_lib import Config, ConfigError, Dataset, Evaluator, Store, experiment, threshold
from cobalt_lib.cli._app import app
from cobalt_lib.ops import RunOptions, Selection, resume_run, run_experiments
from cobalt_lib.ops._compare import compare_runs
from cobalt_lib.run import RunInterrupted
from cobalt_lib.variants import variant_grid

BASE, SMALL_V2, LARGE_V1, LARGE_V2 = ("model=small,prompt=v1", "model=small,prompt=v2", "model=large,prompt=v1",
                                      "model=large,prompt=v2")


def _run(config: Config, *variants: str) -> list:  # type: ignore[type-arg]
    return run_experiments(config, Selection(), RunOptions(dagster=False, variants=list(variants))).reports


def test_one_run_stores_a_run_per_variant_in_one_group_sharing_one_judge_cache(project: Path, llm: FakeLLM) -> None:
    config = sweep_project(project, llm)
    reports = _run(config)
    assert [r.variant for r in reports] == [BASE, SMALL_V2, LARGE_V1, LARGE_V2]
    [group] = {r.group_id for r in reports}
    assert group is not None and group.startswith("g-")
    stored = Store.for_config(config).group_runs(group)
    assert [(r["variant"], r["status"]) for r in stored] == [(v, "completed") for v in (BASE, SMALL_V2, LARGE_V1,
                                                                                         LARGE_V2)]
    # small/v1 and small/v2 answer alike: 6 judge calls for both, 5 each for the large ones (item 5 is alike)
    assert llm.count() == 16
    assert sum(r.summary.judge_calls for r in reports) == 16
    # the agent saw its variant's parameters
    large = next(r for r in reports if r.variant == LARGE_V1)
    assert [str(item.output).endswith("(large)") for item in large.items] == [True] * 5 + [False]
    assert large.config["variant"] == {"name": LARGE_V1, "params": {"model": "large", "prompt": "v1"},
                                       "baseline": False, "position": 2}
    _run(config)  # a second group: every judge answer comes from the cache
    assert llm.count() == 16


def test_the_grid_is_compare_of_each_variant_against_the_baseline(project: Path, llm: FakeLLM) -> None:
    config = sweep_project(project, llm)
    reports = _run(config)
    grid = variant_grid(config, "latest")
    assert (grid.baseline, [r.variant for r in grid.rows]) == (BASE, [BASE, SMALL_V2, LARGE_V1, LARGE_V2])
    base_id = reports[0].id
    for report, row in zip(reports[1:], grid.rows[1:], strict=True):
        [delta] = compare_runs(config, base_id, report.id).comparison.evaluators
        cell = row.cell("quality")
        assert cell is not None
        assert (cell.delta, cell.ci_low, cell.ci_high, cell.verdict) == (
            delta.paired_delta, delta.ci_low, delta.ci_high, delta.verdict)
    words = {row.variant: row.cells[0].word for row in grid.rows}
    assert words == {BASE: "baseline", SMALL_V2: "no significant change", LARGE_V1: "better", LARGE_V2: "worse"}
    assert grid.rows[2].cells[0].mean == pytest.approx(4.7 / 6)
    assert [row.cost_per_item for row in grid.rows] == pytest.approx([0.001, 0.001, 0.002, 0.002])


def test_the_frontier_marks_the_variants_no_other_beats_on_quality_and_cost(project: Path, llm: FakeLLM) -> None:
    config = sweep_project(project, llm)
    _run(config)
    grid = variant_grid(config, "latest")
    # large/v2 costs as much as large/v1 and scores lower: dominated; the small ones tie, both cheapest
    assert {row.variant: row.frontier for row in grid.rows} == {BASE: True, SMALL_V2: True, LARGE_V1: True,
                                                                LARGE_V2: False}


def test_gates_apply_to_every_variant_and_a_named_gate_to_its_variant_only(project: Path, llm: FakeLLM) -> None:
    config = sweep_project(project, llm)
    reports = {r.variant: r for r in _run(config)}
    assert {name: r.passed for name, r in reports.items()} == {BASE: True, SMALL_V2: True, LARGE_V1: True,
                                                               LARGE_V2: False}
    assert [a.name for a in reports[LARGE_V2].assertions if not a.passed] == ["quality >= 0.4"]
    named = "quality >= 0.75 [model=large,prompt=v1]"
    assert [a.passed for a in reports[LARGE_V1].assertions if a.name == named] == [True]
    assert all(a.name != named for v in (BASE, SMALL_V2, LARGE_V2) for a in reports[v].assertions)


def test_variant_filters_by_name_or_parameter_and_keeps_the_baseline(project: Path, llm: FakeLLM) -> None:
    config = sweep_project(project, llm)
    assert [r.variant for r in _run(config, LARGE_V1)] == [BASE, LARGE_V1]
    assert [r.variant for r in _run(config, "prompt=v2")] == [BASE, SMALL_V2, LARGE_V2]
    with pytest.raises(ConfigError, match=r"--variant 'model=huge' matches no variant of experiment 'sweep'"):
        _run(config, "model=huge")


def test_compare_group_prints_the_grid_and_fails_on_a_worse_variant(project: Path, llm: FakeLLM) -> None:
    config = sweep_project(project, llm)
    reports = _run(config)
    runner = CliRunner()
    shown = runner.invoke(app, ["compare", "--group", reports[0].id, "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["group_id"] == reports[0].group_id
    failed = runner.invoke(app, ["compare", "--group", "latest", "--fail-on-regression"])
    assert failed.exit_code == 1 and f"{LARGE_V2}: quality worse than {BASE}" in failed.stderr
    both = runner.invoke(app, ["compare", "latest", "--group", "latest"])  # the entry point makes it exit 2
    assert isinstance(both.exception, ConfigError) and "give either --group or runs A and B" in str(both.exception)


def _agent(ctx: object) -> str:
    return "x"


@pytest.mark.parametrize(("options", "message"), [
    ({"variants": []}, "variants is empty"),
    ({"variants": {}}, "variants is empty; declare at least one, or leave variants out."),
    ({"variants": {"model": "gpt-4o"}}, "variant axis 'model' must be a list of values"),
    ({"variants": [{"name": "a"}, {"name": "a"}]}, "variant name 'a' is used twice"),
    ({"variants": {"model": ["a", "b"]}, "baseline": "model=bb"}, "baseline='model=bb' is not one of its variants; "
                                                                  "did you mean 'model=b'"),
    ({"variants": [{"name": "a", "client": object()}]}, "variant parameter 'client'"),
    ({"baseline": "a"}, "declares no variants"),
    ({"variants": {"model": ["a"]}, "assertions": [threshold("exact", 0.5, variant="b")]},
     "gate 'exact >= 0.5 \\[b\\]' names variant 'b', which is not one of its variants"),
])
def test_a_bad_declaration_is_one_sentence_naming_the_experiment(options: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ConfigError, match=f"experiment 'bad': .*{message}"):
        experiment("bad", Dataset([{"expected_output": "x"}]), _agent,
                   evaluators=[Evaluator(name="exact", type="exact-match")], **options)


def test_a_list_of_named_sets_and_a_named_baseline() -> None:
    declared = experiment("named", Dataset([{"expected_output": "x"}]), _agent,
                          variants=[{"name": "fast", "model": "mini"}, {"name": "smart", "model": "4o", "t": 0}],
                          baseline="smart")
    assert [(v.name, dict(v.params), v.baseline) for v in declared.variants] == [
        ("fast", {"model": "mini"}, False), ("smart", {"model": "4o", "t": 0}, True)]
    assert declared.baseline_variant is not None and declared.baseline_variant.name == "smart"


def test_an_interrupted_group_keeps_every_run_and_resumes_by_its_id(project: Path, llm: FakeLLM,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    config = sweep_project(project, llm)
    monkeypatch.setenv("SWEEP_STOP_AT", "3")
    with pytest.raises(RunInterrupted) as stopped:
        _run(config)
    group = stopped.value.run_id
    assert group.startswith("g-")
    store = Store.for_config(config)
    runs = store.group_runs(group)
    assert len(runs) == 4 and "incomplete" in {r["status"] for r in runs}
    monkeypatch.delenv("SWEEP_STOP_AT")
    outcome = resume_run(config, group)
    assert {r.status for r in outcome.reports} == {"completed"}
    assert [r["status"] for r in store.group_runs(group)] == ["completed"] * 4
    assert [len(r.items) for r in outcome.reports] == [6] * len(outcome.reports)  # the kept items, once each
    grid = variant_grid(config, group)
    assert [row.cells[0].word for row in grid.rows] == ["baseline", "no significant change", "better", "worse"]
    with pytest.raises(ConfigError, match=f"Every run of group {group} is completed"):
        resume_run(config, group)


def test_variant_without_variants_is_a_usage_error_and_history_names_each_variant(project: Path, llm: FakeLLM) -> None:
    config = sweep_project(project, llm)
    (project / "experiments" / "plain.cobalt.py").write_text(
        "from cobalt_lib import Dataset, Evaluator, experiment\n"
        "experiment('plain', Dataset([{'expected_output': 'x'}]), lambda ctx: 'x',\n"
        "           evaluators=[Evaluator(name='exact', type='exact-match')])\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"--variant 'model=large': none of the selected experiments \('plain'\) "
                                          "declares variants"):
        run_experiments(config, Selection(name_filter="plain"), RunOptions(dagster=False, variants=["model=large"]))
    _run(config, "prompt=v2")
    shown = CliRunner().invoke(app, ["history", "--experiment", "sweep"])
    assert shown.exit_code == 0, shown.output
    named = sorted(line.split("[", 1)[1].split("]", 1)[0] for line in shown.stdout.splitlines() if "[model=" in line)
    assert named == sorted([BASE, SMALL_V2, LARGE_V2])  # each run listed with its variant


def test_the_github_step_summary_holds_the_group_grid(project: Path, llm: FakeLLM,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from cobalt_lib.ci import github_outputs

    config = sweep_project(project, llm)
    reports = _run(config)
    summary = project / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert github_outputs(reports) == []
    text = summary.read_text(encoding="utf-8")
    assert "### sweep: variants against model=small,prompt=v1" in text
    row = next(line for line in text.splitlines() if line.startswith(f"| {LARGE_V2} |"))
    [delta] = compare_runs(config, reports[0].id, reports[3].id).comparison.evaluators
    assert f"[{delta.ci_low:+.3f}, {delta.ci_high:+.3f}]" in row and "worse" in row and "FAIL: quality >= 0.4" in row


def test_cobalt_run_prints_each_variant_and_the_grid_and_exits_1_on_a_failed_variant(
        project: Path, llm: FakeLLM, tmp_path: Path) -> None:
    sweep_project(project, llm)
    progress = tmp_path / "progress.jsonl"
    result = CliRunner().invoke(app, ["run", "--ci", "--no-dagster", "--progress-jsonl", str(progress)])
    assert result.exit_code == 1, result.output  # model=large,prompt=v2 fails its threshold
    lines = result.stdout.splitlines()
    assert sum(line.startswith(f"{LARGE_V1}     #") for line in lines) == 6  # each item, led by its variant
    row = next(line for line in lines if line.startswith(f"{LARGE_V2} |"))
    assert "0.333 worse" in row and "FAIL: quality >= 0.4" in row
    events = [json.loads(line) for line in progress.read_text(encoding="utf-8").splitlines()]
    starts = [e for e in events if e["event"] == "start"]
    assert sorted(e["variant"] for e in starts) == sorted([BASE, SMALL_V2, LARGE_V1, LARGE_V2])
    assert len({e["group_id"] for e in starts}) == 1
    assert sum(e["event"] == "item" and e["variant"] == LARGE_V2 for e in events) == 6


def test_run_with_a_variant_runs_that_one_alone(project: Path, llm: FakeLLM) -> None:
    from cobalt_lib import load_experiments

    config = sweep_project(project, llm)
    [sweep] = load_experiments(config)
    report = sweep.run(config=config, variant=LARGE_V1)
    assert (report.variant, report.group_id, report.summary.scores["quality"].avg) == (LARGE_V1, None,
                                                                                       pytest.approx(4.7 / 6))
    with pytest.raises(ConfigError, match="Experiment 'sweep' has no variant 'model=huge'"):
        sweep.run(config=config, variant="model=huge")


def test_a_variants_previous_run_is_of_the_same_variant(project: Path, llm: FakeLLM) -> None:
    config = sweep_project(project, llm)
    first = {r.variant: r.id for r in _run(config)}
    second = {r.variant: r.id for r in _run(config)}
    store = Store.for_config(config)
    assert {v: store.previous_completed_run("sweep", run_id) for v, run_id in second.items()} == first
