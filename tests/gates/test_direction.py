"""One direction everywhere: a lower-is-better evaluator (`*Latency`) passes at or below its pass mark,
in the item verdicts, pass rate, terminal warnings, JUnit export and `compare` (issue 15)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from cobalt_lib import Dataset, Evaluator, define_config, experiment
from cobalt_lib.render._compare import comparison_markdown
from cobalt_lib.render._export import to_junit
from cobalt_lib.render._terminal import TerminalReporter
from cobalt_lib.results._compare import REGRESSION_RULE, compare_reports
from cobalt_lib.results._direction import gain, passes
from cobalt_lib.results._report import ExperimentReport


def _run(name: str, scores: list[float], *, threshold: float = 0.5) -> ExperimentReport:
    """A run whose evaluator `name` gives item i the score scores[i] (same inputs in every run: they pair)."""
    evaluator = Evaluator(name=name, type="function", fn=lambda ctx: scores[ctx.index], threshold=threshold)
    exp = experiment("dir", Dataset([{"input": f"q{i}"} for i in range(len(scores))]), lambda ctx: "a",
                     evaluators=[evaluator])
    return exp.run(config=define_config(), observer=TerminalReporter(io.StringIO(), ci=True, width=120))


def test_the_pass_mark_follows_the_direction_of_the_name() -> None:
    assert passes("responseLatency", 0.5, 0.5) and not passes("responseLatency", 0.51, 0.5)
    assert passes("relevance", 0.5, 0.5) and not passes("relevance", 0.49, 0.5)
    assert (gain("costPerCall", -0.2), gain("relevance", -0.2)) == (0.2, -0.2)


def test_a_latency_evaluator_passes_items_at_or_below_its_mark(project: Path) -> None:
    buffer = io.StringIO()
    evaluator = Evaluator(name="responseLatency", type="function", fn=lambda ctx: ctx.item["s"], threshold=0.5)
    exp = experiment("dir", Dataset([{"input": f"q{i}", "s": s} for i, s in enumerate([0.2, 0.5, 0.9])]),
                     lambda ctx: "a", evaluators=[evaluator])
    report = exp.run(config=define_config(), observer=TerminalReporter(buffer, ci=True, width=120))
    assert [i.evaluations["responseLatency"].passed for i in report.items] == [True, True, False]
    assert report.summary.scores["responseLatency"].pass_rate == 2 / 3
    assert "⚠ high responseLatency (> 0.5): #2" in buffer.getvalue() and "⚠ low" not in buffer.getvalue()
    assert report.passed and to_junit(report).count("<failure") == 0  # by default a low item is reported only
    junit = to_junit(report, items_fail=True)
    assert junit.count("<failure") == 1 and "score 0.900 is above the evaluator&apos;s pass mark" in junit.replace(
        "'", "&apos;")


def test_compare_counts_a_drop_of_a_latency_evaluator_as_an_improvement(project: Path) -> None:
    a = _run("responseLatency", [0.8, 0.7, 0.9, 0.8])
    b = _run("responseLatency", [0.3, 0.2, 0.4, 0.3])
    c = compare_reports(a, b)
    [e] = c.evaluators
    assert e.verdict == "improved"
    assert e.why == ("improved: paired mean -0.50, 95% CI [-0.50, -0.50] entirely below 0 (lower is better)")
    assert sorted(r.index for r in c.improvements) == [0, 1, 2, 3] and c.regressions == []
    assert compare_reports(b, a).evaluators[0].verdict == "regressed"


def test_compare_states_the_rule_behind_each_verdict(project: Path) -> None:
    base = _run("relevance", [0.9, 0.8, 0.9, 0.8])
    worse = _run("relevance", [0.8, 0.7, 0.8, 0.7])
    mixed = _run("relevance", [1.0, 0.7, 0.8, 0.9])
    [regressed] = compare_reports(base, worse).evaluators
    assert regressed.why == "regressed: paired mean -0.10, 95% CI [-0.10, -0.10] entirely below 0"
    [same] = compare_reports(base, mixed).evaluators
    assert same.verdict == "no significant change"
    assert same.why == "no significant change: paired mean +0.00, 95% CI [-0.10, +0.10] contains 0"
    comparison = compare_reports(base, worse)
    markdown = comparison_markdown(comparison)
    assert f"- relevance: {regressed.why}" in markdown and f"- {REGRESSION_RULE}" in markdown
    data = json.loads(comparison.model_dump_json())
    assert data["evaluators"][0]["why"] == regressed.why and data["regression_rule"] == REGRESSION_RULE
    assert "does not apply no_regression's tolerance" in REGRESSION_RULE
