"""`compare_reports` over hand-built reports: deltas, pairing, the bootstrap CI and the verdicts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pytest

from cobalt_lib import Evaluation, ExperimentReport, ItemResult, Stats, Summary
from cobalt_lib.render._compare import comparison_markdown, lost_text, metric_text, unpaired_summary
from cobalt_lib.results._compare import (
    Unpaired,
    bootstrap_ci,
    compare_reports,
)
from cobalt_lib.results._report import ItemStatus
from cobalt_lib.results._stats import describe


def make_report(run_id: str, scores: Mapping[str, Sequence[float | None]], *, hashes: list[str] | None = None,
                statuses: dict[int, ItemStatus] | None = None, latencies: list[float] | None = None,
                costs: list[float] | None = None) -> ExperimentReport:
    """A report whose item i has score scores[name][i] (None: an eval-error) for every evaluator."""
    size = len(next(iter(scores.values())))
    statuses = statuses or {}
    items = []
    for i in range(size):
        status = statuses.get(i, "ok")
        evaluations = {} if status != "ok" else {
            name: Evaluation(score=values[i], status="ok" if values[i] is not None else "eval-error")
            for name, values in scores.items()}
        items.append(ItemResult(index=i, input=f"question {i}", item={"input": f"question {i}"},
                                input_hash=(hashes or [f"h{i}"] * size)[i], output=f"answer {i}",
                                status=status, error=None if status == "ok" else "boom",
                                latency_ms=(latencies or [100.0] * size)[i],
                                cost_usd=None if costs is None else costs[i], evaluations=evaluations))
    summary = Summary(scores={
        name: Stats.model_validate(describe([items[i].evaluations[name].score or 0.0 for i in range(size)
                                             if name in items[i].evaluations and values[i] is not None]))
        for name, values in scores.items()})
    summary.metrics["latency"] = Stats.model_validate(describe([i.latency_ms or 0.0 for i in items]))
    if costs is not None:
        summary.metrics["cost"] = Stats.model_validate(describe(costs))
    return ExperimentReport(id=run_id, name="qa", timestamp="2026-01-01T00:00:00+00:00", summary=summary,
                            items=items)


def test_identical_runs_have_zero_delta_and_no_significant_change() -> None:
    values = [0.2, 0.9, 0.5, 0.7, 1.0, 0.0]
    a = make_report("a", {"relevance": values, "exact": [1, 0, 1, 1, 0, 1]})
    b = make_report("b", {"relevance": values, "exact": [1, 0, 1, 1, 0, 1]})
    result = compare_reports(a, b)
    assert result.run_a == "a" and result.run_b == "b" and result.paired == 6 and result.unpaired == []
    for e in result.evaluators:
        assert e.delta == 0 and e.paired_delta == 0 and (e.ci_low, e.ci_high) == (0.0, 0.0)
        assert e.verdict == "no significant change" and e.pairs == 6
    assert result.regressions == [] and result.improvements == [] and result.regressed == []
    assert [m.metric for m in result.metrics] == ["latency.p95", "cost.mean"]
    assert result.metrics[0].delta == 0 and result.metrics[1].delta is None  # no cost known


def test_a_clear_drop_is_regressed_and_a_clear_rise_improved() -> None:
    rng = np.random.default_rng(7)
    base = rng.uniform(0.6, 1.0, 40)
    lower = np.clip(base - 0.3 + rng.normal(0, 0.05, 40), 0, 1)
    a = make_report("a", {"relevance": base.tolist()})
    b = make_report("b", {"relevance": lower.tolist()})
    forward = compare_reports(a, b).evaluators[0]
    assert forward.delta == pytest.approx(lower.mean() - base.mean())
    assert forward.ci_low is not None and forward.ci_high is not None and forward.paired_delta is not None
    assert forward.ci_low < forward.paired_delta < forward.ci_high < 0 and forward.verdict == "regressed"
    backward = compare_reports(b, a).evaluators[0]
    assert backward.verdict == "improved" and backward.ci_low is not None and backward.ci_low > 0
    assert backward.delta == pytest.approx(-forward.delta)  # type: ignore[operator]


def test_noise_around_zero_is_no_significant_change() -> None:
    a = make_report("a", {"relevance": [0.5, 0.6, 0.7, 0.8, 0.5, 0.6, 0.7, 0.8]})
    b = make_report("b", {"relevance": [0.6, 0.5, 0.8, 0.7, 0.6, 0.5, 0.8, 0.7]})
    e = compare_reports(a, b).evaluators[0]
    assert e.delta == pytest.approx(0) and e.ci_low is not None and e.ci_high is not None
    assert e.ci_low < 0 < e.ci_high and e.verdict == "no significant change"


def test_changed_input_hash_is_unpaired_not_compared() -> None:
    a = make_report("a", {"exact": [1, 1, 1, 1]})
    b = make_report("b", {"exact": [1, 0, 0, 1]}, hashes=["h0", "h1", "CHANGED", "h3"])
    result = compare_reports(a, b)
    assert [(u.index, u.item_id, u.reason) for u in result.unpaired] == [(2, "CHANGED", "input changed")]
    assert result.paired == 3 and result.evaluators[0].pairs == 3
    assert [(r.index, r.score_a, r.score_b, r.delta) for r in result.regressions] == [(1, 1.0, 0.0, -1.0)]
    assert result.evaluators[0].paired_delta == pytest.approx(-1 / 3)
    assert result.evaluators[0].delta == pytest.approx(-0.5)  # the runs' own means still differ by 0.5


def test_items_present_in_one_run_only_are_unpaired() -> None:
    a = make_report("a", {"exact": [1, 1, 1]})
    b = make_report("b", {"exact": [1, 1, 1, 0, 0]})
    assert [(u.index, u.reason) for u in compare_reports(a, b).unpaired] == [(3, "only in B"), (4, "only in B")]
    assert [(u.index, u.reason) for u in compare_reports(b, a).unpaired] == [(3, "only in A"), (4, "only in A")]


def test_top_movers_are_ordered_by_size_and_limited() -> None:
    a = make_report("a", {"s": [0.9, 0.9, 0.9, 0.2, 0.2, 0.9]})
    b = make_report("b", {"s": [0.1, 0.5, 0.8, 0.9, 0.3, 0.9]})
    result = compare_reports(a, b, top=2)
    assert [(r.index, round(r.delta, 3)) for r in result.regressions] == [(0, -0.8), (1, -0.4)]
    assert [(r.index, round(r.delta, 3)) for r in result.improvements] == [(3, 0.7), (4, 0.1)]
    assert result.regressions[0].input == "question 0"
    assert compare_reports(a, b, top=0).regressions == []


def test_eval_errors_and_failed_calls_are_left_out_of_the_pairs() -> None:
    a = make_report("a", {"s": [0.5, 0.5, 0.5, 0.5]})
    b = make_report("b", {"s": [0.5, None, 0.5, 0.5]}, statuses={3: "timeout"})
    result = compare_reports(a, b)
    assert result.evaluators[0].pairs == 2 and result.paired == 4
    assert [(s.index, s.status_a, s.status_b, s.error) for s in result.status_changes] == [(3, "ok", "timeout",
                                                                                            "boom")]


def test_too_few_pairs_or_an_evaluator_in_one_run_is_not_comparable() -> None:
    a = make_report("a", {"s": [0.9], "old": [1.0]})
    b = make_report("b", {"s": [0.1], "new": [1.0]})
    by_name = {e.evaluator: e for e in compare_reports(a, b).evaluators}
    assert list(by_name) == ["s", "old", "new"]
    assert by_name["s"].paired_delta == pytest.approx(-0.8) and by_name["s"].ci_low is None
    assert by_name["s"].verdict == "not comparable"
    assert by_name["old"].mean_b is None and by_name["old"].delta is None and by_name["old"].verdict == "not comparable"
    assert by_name["new"].mean_a is None and by_name["new"].pairs == 0


def test_run_metrics_deltas() -> None:
    a = make_report("a", {"s": [1, 1]}, latencies=[100.0, 200.0], costs=[0.01, 0.03])
    b = make_report("b", {"s": [1, 1]}, latencies=[300.0, 500.0], costs=[0.01, 0.01])
    metrics = {m.metric: m for m in compare_reports(a, b).metrics}
    assert metrics["latency.p95"].a == pytest.approx(195.0) and metrics["latency.p95"].b == pytest.approx(490.0)
    assert metrics["latency.p95"].delta == pytest.approx(295.0)
    assert metrics["cost.mean"].delta == pytest.approx(-0.01)


def test_results_are_reproducible_for_a_seed() -> None:
    rng = np.random.default_rng(1)
    a = make_report("a", {"s": rng.uniform(0, 1, 30).tolist()})
    b = make_report("b", {"s": rng.uniform(0, 1, 30).tolist()})
    first, again = compare_reports(a, b), compare_reports(a, b)
    assert first.model_dump() == again.model_dump()
    other = compare_reports(a, b, seed=5).evaluators[0]
    assert (other.ci_low, other.ci_high) != (first.evaluators[0].ci_low, first.evaluators[0].ci_high)


def test_bootstrap_ci_matches_the_normal_approximation_for_large_samples() -> None:
    diffs = np.random.default_rng(3).normal(0.1, 0.2, 2000)
    low, high = bootstrap_ci(diffs.tolist(), resamples=2000, seed=0)
    half = 1.96 * diffs.std() / np.sqrt(len(diffs))
    assert low == pytest.approx(diffs.mean() - half, abs=0.003)
    assert high == pytest.approx(diffs.mean() + half, abs=0.003)


def test_bad_arguments_are_rejected() -> None:
    a = make_report("a", {"s": [1, 1]})
    with pytest.raises(ValueError, match="resamples"):
        compare_reports(a, a, resamples=0)
    with pytest.raises(ValueError, match="confidence"):
        compare_reports(a, a, confidence=1.5)


def test_markdown_rendering() -> None:
    a = make_report("a", {"exact": [1, 1, 1, 1]})
    b = make_report("b", {"exact": [0, 0, 0, 1]}, hashes=["h0", "h1", "h2", "new"])
    text = comparison_markdown(compare_reports(a, b))
    assert text.startswith("### cobalt compare: `b` vs baseline `a`")
    assert "| exact | 1.000 | 0.250 | -0.750 | -1.000 | [-1.000, -1.000] | 3 | regressed |" in text
    assert "| 0 | exact | 1.000 | 0.000 | -1.000 | question 0 |" in text
    assert "#### Unpaired\n\n1 unpaired item, not compared (1 input changed): item 3\n" in text
    assert "latest/previous" not in text  # the runs were named outright: no scope to report
    scoped = compare_reports(a, b)
    scoped.scope = "qa"
    assert "· latest/previous looked up in experiment 'qa' only (--experiment picks another)" in \
        comparison_markdown(scoped)


def test_unpaired_items_are_summarised_in_one_line() -> None:
    a = make_report("a", {"s": [1.0] * 4})
    b = make_report("b", {"s": [1.0] * 10}, hashes=["h0", "x1", "x2", "h3", *(f"h{i}" for i in range(4, 10))])
    unpaired = compare_reports(a, b).unpaired
    assert unpaired_summary(unpaired) == ("8 unpaired items, not compared (2 input changed, 6 only in B): "
                                          "items 1, 2, 4, 5, 6 and 3 more")
    assert unpaired_summary(unpaired, shown=8).endswith("items 1, 2, 4, 5, 6, 7, 8, 9")
    one = Unpaired(index=3, item_id="q3", reason="only in A")
    assert unpaired_summary([one]) == "1 unpaired item, not compared (1 only in A): item 3"


def test_scores_that_all_became_errors_in_b_are_lost_not_just_not_comparable() -> None:
    a = make_report("a", {"s": [0.5, 0.6, 0.7, 0.8], "ok": [1, 1, 1, 1]})
    b = make_report("b", {"s": [None, None, None, None], "ok": [1, 1, 1, 1]})
    result = compare_reports(a, b)
    lost = result.evaluators[0]
    assert (lost.verdict, lost.pairs, lost.mean_b) == ("not comparable", 0, None)
    assert (lost.scored_a, lost.scored_b, lost.lost, lost.lost_scores) == (4, 0, 4, True)
    assert [e.evaluator for e in result.lost_scores] == ["s"] and result.regressed == []
    assert lost_text(lost) == ("s has no score in B for 4 of the 4 paired items scored in A "
                               "(eval-errors or failed agent calls)")
    assert "#### Lost scores\n\n- s has no score in B for 4 of the 4 paired items" in comparison_markdown(result)
    assert (result.evaluators[1].lost, result.evaluators[1].lost_scores) == (0, False)


def test_fewer_scores_in_b_because_of_errors_or_failed_calls_are_lost_scores() -> None:
    a = make_report("a", {"s": [0.5, 0.5, None, 0.5, 0.5]})
    b = make_report("b", {"s": [0.5, None, 0.5, 0.5, 0.5]}, statuses={4: "error"})
    e = compare_reports(a, b).evaluators[0]
    # Items 1 (eval-error) and 4 (failed call) lost their scores; item 2 gained one.
    assert (e.scored_a, e.scored_b, e.lost, e.lost_scores) == (4, 3, 2, True)
    assert e.verdict == "no significant change"  # over the two pairs left: the verdict alone hides the loss
    gained = compare_reports(b, a).evaluators[0]
    assert (gained.scored_a, gained.scored_b, gained.lost, gained.lost_scores) == (3, 4, 1, False)
    swapped = compare_reports(a, make_report("b", {"s": [0.5, 0.5, 0.5, None, 0.5]})).evaluators[0]
    assert (swapped.lost, swapped.lost_scores) == (1, False)  # as many scores as before: coverage did not fall


def test_an_evaluator_dropped_from_b_has_not_lost_scores_to_errors() -> None:
    a = make_report("a", {"s": [0.5, 0.5], "old": [1.0, 1.0]})
    b = make_report("b", {"s": [0.5, 0.5]})
    old = next(e for e in compare_reports(a, b).evaluators if e.evaluator == "old")
    assert (old.scored_a, old.scored_b, old.lost, old.lost_scores) == (2, 0, 0, False)


@pytest.mark.parametrize(
    ("metric", "value", "sign", "text"),
    [("latency.p95", 4238.4, False, "4.24s"), ("latency.p95", 420.4, False, "420ms"),
     ("latency.p95", 0.04213, False, "0.0421ms"), ("latency.p95", -1500.0, True, "-1.5s"),
     ("latency.p95", 295.0, True, "+295ms"), ("cost.mean", 4.2e-5, False, "$0.0000420"),
     ("cost.mean", 0.0123, False, "$0.0123"), ("cost.mean", -4.2e-5, True, "-$0.0000420"),
     ("cost.mean", None, False, "–"), ("latency.p95", None, False, "–"), ("tokens.mean", 12.5, False, "12.5")],
)
def test_run_metrics_are_shown_with_their_units(metric: str, value: float | None, sign: bool, text: str) -> None:
    assert metric_text(metric, value, sign=sign) == text


def test_markdown_metrics_have_units() -> None:
    a = make_report("a", {"s": [1, 1]}, latencies=[100.0, 4000.0], costs=[4e-5, 4.4e-5])
    b = make_report("b", {"s": [1, 1]}, latencies=[100.0, 300.0], costs=[4e-5, 4e-5])
    text = comparison_markdown(compare_reports(a, b))
    assert "| latency.p95 | 3.81s | 290ms | -3.52s |" in text
    assert "| cost.mean | $0.0000420 | $0.0000400 | -$0.00000200 |" in text
    assert "Lost scores" not in text
