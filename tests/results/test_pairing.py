"""Item identity and pairing by it: an inserted item keeps every other item paired, duplicates pair in
order, repeats are resampled with their item (the cluster bootstrap), and grading runs are compared by
agreement with the human scores."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from cobalt_lib import Evaluation, ExperimentReport, ItemResult, duplicate_ids, item_identity
from cobalt_lib.ops._compare import compare_stored, regression_reasons
from cobalt_lib.render._compare import agreement_lines
from cobalt_lib.results._compare import compare_reports
from cobalt_lib.results._pairing import pair_items
from cobalt_lib.results._rows import item_from_rows, output_row


def item(index: int, data: dict[str, Any], score: float | None = 1.0, run_index: int = 0, *,
         passed: bool | None = None, raw: float | None = None) -> ItemResult:
    ev = Evaluation(score=score, raw_score=raw, passed=passed) if score is not None else Evaluation(
        status="eval-error", error="no score")
    return ItemResult(index=index, run_index=run_index, item=data, input=data.get("input"), output="o",
                      evaluations={"s": ev})


def report(run_id: str, items: Sequence[ItemResult], config: dict[str, Any] | None = None) -> ExperimentReport:
    return ExperimentReport(id=run_id, name="qa", timestamp="2026-01-01T00:00:00+00:00", items=list(items),
                            config=config or {})


def test_identity_is_the_id_field_else_a_content_hash() -> None:
    assert item_identity({"id": "q1", "input": "a"}) == item_identity({"id": "q1", "input": "b"}) == "q1"
    assert item_identity({"id": 7, "input": "a"}) == "7" == item_identity({"id": "7"})
    assert item_identity({"input": "a", "x": 1}) == item_identity({"x": 1, "input": "a"})  # key order is not content
    assert item_identity({"input": "a"}) != item_identity({"input": "b"})
    assert len(item_identity({"input": "a"})) == 16 and item_identity({"id": None, "input": "a"}) == item_identity(
        {"input": "a", "id": None})
    assert duplicate_ids([{"id": "a"}, {"id": "b"}, {"id": "a"}, {"input": "x"}, {"input": "x"}]) == {
        "a": [0, 2], item_identity({"input": "x"}): [3, 4]}
    assert duplicate_ids([{"id": "a"}, {"id": "b"}]) == {}


def test_an_item_inserted_at_index_0_keeps_every_other_item_paired() -> None:
    rows = [{"input": f"question {i}", "expected_output": f"a{i}"} for i in range(6000)]
    a = [item(i, row) for i, row in enumerate(rows)]
    b = [item(i, row) for i, row in enumerate([{"input": "new", "expected_output": "n"}, *rows])]
    pairs, unpaired = pair_items(a, b)
    assert len(pairs) == 6000 and all(p.index == p.index_a + 1 for p in pairs)
    assert [(u.index, u.reason) for u in unpaired] == [(0, "only in B")]
    result = compare_reports(report("a", a), report("b", b), resamples=10)
    assert (result.paired, result.evaluators[0].pairs, result.evaluators[0].paired_delta) == (6000, 6000, 0.0)


def test_an_edited_item_with_an_id_stays_paired_and_one_without_is_input_changed() -> None:
    a = [item(0, {"id": "x", "input": "q"}, 1.0), item(1, {"input": "r"}, 1.0), item(2, {"input": "s"}, 1.0)]
    b = [item(0, {"id": "x", "input": "q (fixed)"}, 0.0), item(1, {"input": "r (fixed)"}, 0.0),
         item(2, {"input": "s"}, 1.0)]
    result = compare_reports(report("a", a), report("b", b))
    assert [(r.item_id, r.delta) for r in result.regressions] == [("x", -1.0)]
    assert [(u.index, u.reason) for u in result.unpaired] == [(1, "input changed")]


def test_duplicated_items_pair_one_to_one_in_dataset_order() -> None:
    same = {"input": "q"}
    a = [item(0, same, 1.0), item(1, same, 0.0)]
    b = [item(0, {"input": "new"}, 1.0), item(1, same, 1.0), item(2, same, 0.5)]
    pairs, unpaired = pair_items(a, b)
    assert [(p.index_a, p.index) for p in pairs] == [(0, 1), (1, 2)]
    assert [(u.index, u.reason) for u in unpaired] == [(0, "only in B")]


def test_stored_rows_carry_the_identity_and_old_rows_fall_back_to_the_input_hash() -> None:
    fresh = ItemResult(index=3, item={"id": "q3", "input": "x"}, input_hash="abc")
    row = output_row("r", fresh)
    assert row["item_id"] == "q3" and item_from_rows(row, []).item_id == "q3"
    old = {**row, "input": {"input": "x"}, "item_id": None}  # a row an older cobalt wrote: no item_id column
    assert item_from_rows(old, []).item_id == "abc"
    older = {**old, "input_hash": None}
    assert item_from_rows(older, []).item_id == item_identity({"input": "x"})


def _repeated(effects: np.ndarray, noise: np.ndarray) -> list[ItemResult]:
    """Items whose repeat r scores effects[i] + noise[i, r] (clipped to 0..1)."""
    return [item(i, {"input": f"q{i}"}, float(np.clip(effects[i] + noise[i, r], 0, 1)), r)
            for i in range(len(effects)) for r in range(noise.shape[1])]


def test_repeats_are_resampled_with_their_item_so_the_interval_does_not_shrink() -> None:
    """A fixed simulation: 20 items, 3 repeats each, the items' change varying much more than the repeats.
    The interval must be that of a bootstrap over the 20 items' mean changes (numpy below), not the much
    narrower one of 60 (item, repeat) pairs taken as independent."""
    rng = np.random.default_rng(42)
    base = rng.uniform(0.3, 0.7, 20)
    change = rng.normal(0.05, 0.25, 20)
    a = _repeated(base, rng.normal(0, 0.02, (20, 3)))
    b = _repeated(base + change, rng.normal(0, 0.02, (20, 3)))
    got = compare_reports(report("a", a), report("b", b), resamples=4000).evaluators[0]
    per_item = [np.mean([x.evaluations["s"].score for x in b if x.index == i])
                - np.mean([x.evaluations["s"].score for x in a if x.index == i]) for i in range(20)]
    means = np.asarray(per_item)[np.random.default_rng(7).integers(0, 20, (20000, 20))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    assert got.pairs == 20 and got.paired_delta == pytest.approx(np.mean(per_item))
    assert got.ci_low == pytest.approx(low, abs=0.015) and got.ci_high == pytest.approx(high, abs=0.015)
    naive = [y.evaluations["s"].score - x.evaluations["s"].score for x, y in zip(a, b, strict=True)]  # type: ignore[operator]
    naive_means = np.asarray(naive)[np.random.default_rng(7).integers(0, 60, (20000, 60))].mean(axis=1)
    naive_low, naive_high = np.percentile(naive_means, [2.5, 97.5])
    assert (got.ci_high - got.ci_low) > 1.5 * (naive_high - naive_low)  # type: ignore[operator]
    # Repeats that say nothing new (every repeat the same) leave the interval as with one run each.
    single = compare_reports(report("a", _repeated(base, np.zeros((20, 1)))),
                             report("b", _repeated(base + change, np.zeros((20, 1))))).evaluators[0]
    tripled = compare_reports(report("a", _repeated(base, np.zeros((20, 3)))),
                              report("b", _repeated(base + change, np.zeros((20, 3))))).evaluators[0]
    assert (single.ci_low, single.ci_high) == pytest.approx((tripled.ci_low, tripled.ci_high), abs=1e-12)


def test_a_run_with_repeats_against_one_without_pairs_by_the_items_mean() -> None:
    a = [item(i, {"input": f"q{i}"}, 1.0) for i in range(4)]
    b = [item(i, {"input": f"q{i}"}, 1.0 if (i, r) != (2, 0) else 0.0, r, passed=(i, r) != (2, 0))
         for i in range(4) for r in range(3)]
    result = compare_reports(report("a", a), report("b", b))
    assert result.paired == 4 and result.unpaired == []
    [moved] = result.regressions
    assert (moved.index, moved.score_b, moved.repeats_a, moved.repeats_b, moved.flaky_b) == (
        2, pytest.approx(2 / 3), 1, 3, "2 of 3 passed")
    assert [(f.index, f.a, f.b) for f in result.flaky] == [(2, None, "2 of 3 passed")]


def _grading(run_id: str, right: int, samples: int) -> ExperimentReport:
    """A grading run: `right` of `samples` graded as the human did (truth 2), the rest two steps off (0)."""
    items = [ItemResult(index=i, item={"id": f"s{i}", "truth": 2}, evaluations={
        "judge": Evaluation(score=(g + 3) / 6, raw_score=g)}) for i, g in
        enumerate([2] * right + [0] * (samples - right))]
    return report(run_id, items, {"grading": {"calibration": {}}})


def test_grading_runs_are_compared_by_agreement_with_the_humans_not_by_mean_grade() -> None:
    """60% -> 90% exact: the mean grade rises here, but a grader that gets closer to humans who grade low
    would lower it; either way the verdict is the agreement's, and `--fail-on-regression` passes."""
    before, after = _grading("a", 12, 20), _grading("b", 18, 20)
    c = compare_stored(before, after)
    [g] = c.agreement or []
    assert (g.model, g.samples, g.exact_a, g.exact_b) == ("judge", 20, 0.6, 0.9)
    assert (g.within_one_a, g.within_one_b) == (0.6, 0.9)
    assert g.kappa_a is not None and g.kappa_b is not None and g.kappa_a_ci is not None
    assert g.verdict == "improved" and g.ci_low is not None and g.ci_low > 0 and g.exact_delta == pytest.approx(0.3)
    assert c.evaluators[0].verdict == "not comparable" and regression_reasons(c) == []
    [line] = agreement_lines(c)
    assert line.startswith("judge: exact 60% -> 90%, within one 60% -> 90%, kappa ")
    assert "; improved: exact agreement 60% -> 90% over 20 labelled samples, paired 95% CI [+" in line
    assert "agreement with the human scores" in c.regression_rule
    # The other way round it regressed, by agreement.
    worse = compare_stored(after, before)
    assert worse.regressed == ["judge"] and regression_reasons(worse) == [
        "agreement with the human scores regressed: judge"]


def test_a_grader_whose_mean_grade_drops_as_it_agrees_more_reads_improved() -> None:
    lenient = report("a", [ItemResult(index=i, item={"id": f"s{i}", "truth": -2}, evaluations={
        "judge": Evaluation(score=0.5, raw_score=0 if i < 8 else -2)}) for i in range(20)],
        {"grading": {"calibration": {}}})
    strict = report("b", [ItemResult(index=i, item={"id": f"s{i}", "truth": -2}, evaluations={
        "judge": Evaluation(score=1 / 6, raw_score=-2)}) for i in range(20)], {"grading": {"calibration": {}}})
    plain = compare_reports(lenient, strict)
    assert plain.evaluators[0].verdict == "regressed"  # by mean grade: what grading runs must not use
    c = compare_stored(lenient, strict)
    assert c.agreement is not None and c.agreement[0].verdict == "improved" and c.regressed == []
