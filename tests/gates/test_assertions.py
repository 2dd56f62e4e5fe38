"""Quality-gate arithmetic: boundaries, directions, baselines, custom checks, config gates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cobalt_lib import (
    ConfigError,
    Dataset,
    Evaluator,
    assertion,
    define_config,
    experiment,
    load_config,
    no_regression,
    threshold,
)
from cobalt_lib.gates._assertions import config_assertions, lower_is_better
from cobalt_lib.results._report import ExperimentReport, Stats, Summary


def _report(**means: float) -> ExperimentReport:
    summary = Summary(total_runs=10, errors=1, timeouts=1)
    for name, value in means.items():
        target = summary.metrics if lower_is_better(name) or name == "tokens" else summary.scores
        target[name] = Stats(avg=value, p95=value * 2, count=10)
    return ExperimentReport(id="r", name="n", timestamp="2026-11-22T00:00:00+00:00", summary=summary)


CONFIG = define_config()


@pytest.mark.parametrize(
    ("name", "lower"),
    [("latency", True), ("latency.p99", True), ("cost.mean", True), ("tokens", True), ("judgeDuration", True),
     ("apiLatency", True), ("relevance", False), ("accuracy.p95", False), ("durationScore", False)],
)
def test_direction_detection(name: str, lower: bool) -> None:
    assert lower_is_better(name) is lower


@pytest.mark.parametrize(("actual", "passed"), [(0.79, False), (0.8, True), (0.81, True)])
def test_higher_is_better_threshold_boundary(actual: float, passed: bool) -> None:
    [result] = threshold("relevance", 0.8).evaluate(_report(relevance=actual), CONFIG)
    assert (result.passed, result.actual, result.expected) == (passed, actual, 0.8)


@pytest.mark.parametrize(("actual", "passed"), [(499.0, True), (500.0, True), (501.0, False)])
def test_lower_is_better_threshold_boundary(actual: float, passed: bool) -> None:
    [result] = threshold("latency", 500).evaluate(_report(latency=actual), CONFIG)
    assert result.passed is passed and result.name == "latency <= 500"


def test_dot_paths_pick_the_statistic() -> None:
    report = _report(relevance=0.5, latency=100.0)
    assert threshold("relevance.p95", 0.9).evaluate(report, CONFIG)[0].actual == 1.0
    assert threshold("latency.p95", 150).evaluate(report, CONFIG)[0].passed is False
    assert threshold("relevance.mean", 0.5).evaluate(report, CONFIG)[0].passed is True
    assert threshold("relevance.avg", 0.5).evaluate(report, CONFIG)[0].actual == 0.5


def test_a_metric_without_values_fails_its_gate() -> None:
    report = _report()
    report.summary.scores["relevance"] = Stats(count=0)
    [result] = threshold("relevance", 0.1).evaluate(report, CONFIG)
    assert result.passed is False and "no value" in result.message


def test_no_regression_is_relative_in_both_directions(tmp_path: Path) -> None:
    config = define_config()
    config.root = tmp_path
    (tmp_path / "base.json").write_text(json.dumps({"relevance": 0.8, "latency": 100.0}))
    gate = no_regression("base.json", tolerance=0.05)
    ok = {r.name: r.passed for r in gate.evaluate(_report(relevance=0.76, latency=105.0), config)}
    assert ok == {"no_regression:relevance": True, "no_regression:latency": True}
    bad = {r.name: r.passed for r in gate.evaluate(_report(relevance=0.759, latency=105.1), config)}
    assert bad == {"no_regression:relevance": False, "no_regression:latency": False}


def test_save_baseline_round_trips_into_no_regression(project: Path) -> None:
    exp = experiment("base", Dataset([{"expected_output": "a"}, {"expected_output": "b"}]), lambda ctx: "a",
                     evaluators=[Evaluator(name="exact", type="exact-match")])
    report = exp.run()
    path = report.save_baseline(project / "baseline.json")
    assert json.loads(path.read_text())["exact"] == 0.5
    exp2 = experiment("base", Dataset([{"expected_output": "a"}, {"expected_output": "b"}]), lambda ctx: "zzz",
                      evaluators=[Evaluator(name="exact", type="exact-match")],
                      assertions=[no_regression("baseline.json")])
    verdicts = {a.name: a for a in exp2.run().assertions}
    assert verdicts["no_regression:exact"].passed is False and verdicts["no_regression:exact"].actual == 0.0


def test_missing_baseline_is_a_config_error_before_the_run(project: Path) -> None:
    exp = experiment("nobase", Dataset([{"expected_output": "a"}]), lambda ctx: "a",
                     evaluators=[Evaluator(name="exact", type="exact-match")], assertions=[no_regression("nope.json")])
    with pytest.raises(ConfigError, match=r"save_baseline\('nope.json'\)"):
        exp.run()


def test_custom_assertion_gets_aggregates_and_stats() -> None:
    seen = {}

    def check(aggregated, stats):
        seen.update(aggregated=aggregated, stats=stats)
        return aggregated["relevance"]["mean"] > 0.5 and stats["errors"] == 2

    [result] = assertion("custom", check, "relevance and errors").evaluate(_report(relevance=0.6), CONFIG)
    assert result.passed is True and result.message == "relevance and errors"
    assert seen["stats"]["total"] == 10 and seen["aggregated"]["relevance"]["p95"] == 1.2


def test_custom_assertion_that_raises_fails_with_the_reason() -> None:
    [result] = assertion("boom", lambda a, s: a["missing"]["mean"]).evaluate(_report(), CONFIG)
    assert result.passed is False and "KeyError" in result.message


def test_config_thresholds_and_error_rate_become_gates() -> None:
    config = define_config(ci={"thresholds": {"relevance": {"min": 0.8}, "latency.p95": {"max": 5000}},
                               "max_error_rate": 0.1})
    gates = config_assertions(config)
    results = [r for g in gates for r in g.evaluate(_report(relevance=0.9, latency=3000.0), config)]
    assert [(r.name, r.passed) for r in results] == [
        ("relevance >= 0.8", True), ("latency.p95 <= 5000", False), ("error rate <= 10%", False)]
    assert results[2].actual == pytest.approx(0.2)


def test_errors_fail_by_default_and_fail_on_error_false_is_refused() -> None:
    [gate] = config_assertions(define_config())
    assert gate.name == "error rate <= 0%" and gate.evaluate(_report(), CONFIG)[0].passed is False
    assert [g.name for g in config_assertions(define_config(ci={"fail_on_error": True}))] == ["error rate <= 0%"]
    with pytest.raises(ConfigError, match=r"ci\.fail_on_error = false no longer exists: failed or timed-out agent "
                                          r"calls, eval-errors and duplicate item ids fail a run by default; remove "
                                          r"the line and set ci\.max_error_rate = 0\.05"):
        define_config(ci={"fail_on_error": False})


@pytest.mark.parametrize("value", [0.35, 0.1, 0.7, 0.45])
def test_a_mean_of_repeated_scores_at_the_limit_passes(project: Path, value: float) -> None:
    exp = experiment("edge", Dataset([{"i": i} for i in range(3)]), lambda ctx: "x",
                     evaluators=[Evaluator(name="quality", type="function", fn=lambda ctx: value)],
                     assertions=[threshold("quality", value), threshold("quality", value + 1e-6)])
    verdicts = [a.passed for a in exp.run().assertions if a.name.startswith("quality")]
    assert verdicts == [True, False]


def test_no_regression_at_exactly_the_tolerance_passes(tmp_path: Path) -> None:
    config = define_config()
    config.root = tmp_path
    (tmp_path / "base.json").write_text(json.dumps({"relevance": 0.8000000000000002}))
    [result] = no_regression("base.json", tolerance=0.1).evaluate(_report(relevance=0.72), config)
    assert result.passed is True


def test_save_baseline_holds_evaluators_unless_metrics_are_asked_for(project: Path) -> None:
    exp = experiment("base", Dataset([{"expected_output": "a"}]), lambda ctx: "a",
                     evaluators=[Evaluator(name="exact", type="exact-match")])
    report = exp.run()
    saved = json.loads(report.save_baseline(project / "b.json").read_text())
    assert saved.pop("$identity")["evaluators"][0]["kind"] == "exact-match"  # what the means measured
    assert saved.pop("$items") == [report.items[0].item_id]  # over which items
    assert saved == {"exact": 1.0}
    assert set(json.loads(report.save_baseline(project / "m.json", metrics=True).read_text())) == {
        "exact", "latency", "$identity", "$items"}


def test_an_unknown_statistic_is_named_as_such(project: Path) -> None:
    exp = experiment("stat", Dataset([{"expected_output": "a"}]), lambda ctx: "a",
                     evaluators=[Evaluator(name="exact", type="exact-match")], assertions=[threshold("exact.p42", 1)])
    with pytest.raises(ConfigError, match=r"statistic 'p42' of 'exact'.*p95"):
        exp.run()


def test_a_run_metric_without_values_says_no_item_reported_it() -> None:
    [result] = threshold("cost.mean", 0.1).evaluate(_report(), CONFIG)
    assert result.passed is False and "no item reported it" in result.message


def test_config_thresholds_apply_to_the_experiments_that_produce_the_metric(project: Path) -> None:
    (project / "cobalt.toml").write_text('[ci]\nthresholds = { relevance = { min = 0.8 }, exact = { min = 0.9 } }\n')
    from cobalt_lib import load_config

    data = Dataset([{"expected_output": "a"}])
    with_exact = experiment("has-exact", data, lambda ctx: "b",
                            evaluators=[Evaluator(name="exact", type="exact-match")])
    report = with_exact.run(config=load_config())  # `relevance` is another experiment's: no usage error
    assert [(a.name, a.passed) for a in report.assertions] == [("exact >= 0.9", False), ("error rate <= 0%", True),
                                                               ("every evaluator scored", True)]


def test_no_regression_names_the_limit_it_allowed(tmp_path: Path) -> None:
    config = define_config()
    config.root = tmp_path
    (tmp_path / "base.json").write_text(json.dumps({"relevance": 0.8, "latency": 1000}))
    report = _report(relevance=0.75)
    report.summary.metrics["latency"] = Stats(avg=1100.0, count=10)
    verdicts = {r.name: r for r in no_regression("base.json", tolerance=0.05).evaluate(report, config)}
    assert verdicts["no_regression:relevance"].message == ("relevance 0.75 < 0.76 = baseline 0.80 x (1 - 0.05): "
                                                          "beyond the 5% tolerance")
    assert verdicts["no_regression:relevance"].passed is False
    assert verdicts["no_regression:latency"].message == ("latency 1.1s > 1.05s = baseline 1s x (1 + 0.05): "
                                                        "beyond the 5% tolerance")


def test_updating_a_baseline_keeps_the_run_metrics_it_held(project: Path) -> None:
    exp = experiment("base", Dataset([{"expected_output": "a"}, {"expected_output": "b"}]), lambda ctx: "a",
                     evaluators=[Evaluator(name="exact", type="exact-match")])
    report = exp.run()
    gate = no_regression("gates/base.json")
    written = gate.update(report, load_config())  # no file yet: evaluator means only
    assert written == project / "gates" / "base.json"
    assert {k: v for k, v in json.loads(written.read_text()).items() if not k.startswith("$")} == {"exact": 0.5}
    written.write_text(json.dumps({"exact": 0.9, "latency": 99999.0, "gone": 1.0}))
    baseline = json.loads(gate.update(report, load_config()).read_text())
    assert set(baseline) == {"exact", "latency", "$identity", "$items"}
    assert baseline["exact"] == 0.5 and baseline["latency"] < 99999.0
    assert report.baseline(metrics=True).keys() == {"exact", "latency"}
