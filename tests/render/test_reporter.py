"""The terminal reporter, rendered to a string at a fixed width."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

from fakellm import FakeLLM, answer

from cobalt_lib import Dataset, Evaluator, define_config, experiment, load_config
from cobalt_lib.ops._run import run_plan
from cobalt_lib.render._terminal import TerminalReporter
from cobalt_lib.results._report import Evaluation, ItemResult
from cobalt_lib.run import FreshRun, prepare
from cobalt_lib.run._stages import build_report

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _plan(n: int = 3):
    exp = experiment("demo", Dataset([{"input": f"q{i}", "expected_output": "a"} for i in range(n)]),
                     lambda ctx: "a", evaluators=[Evaluator(name="exact", type="exact-match"),
                                                  Evaluator(name="style", type="function", fn=lambda c: 1.0,
                                                            threshold=0.7)],
                     concurrency=4, timeout=10)
    config = define_config(output_dir="/nonexistent")
    return prepare(exp, config, FreshRun(run_id="run-1"))


def _items() -> list[ItemResult]:
    def ev(score: float | None, status: str = "ok", cached: bool = False, error: str | None = None) -> Evaluation:
        return Evaluation(score=score, status=status, cached=cached, error=error,
                          passed=None if score is None else score >= 0.5)

    return [
        ItemResult(index=0, output="a", latency_ms=12.0, evaluations={"exact": ev(1.0), "style": ev(0.9, cached=True)}),
        ItemResult(index=1, output="b", latency_ms=1500.0,
                   evaluations={"exact": ev(0.0), "style": ev(None, "eval-error",
                                                                  error="ValueError: no style\n  in style()")}),
        ItemResult(index=2, status="timeout", error="the agent did not answer within 10 s", latency_ms=10000.0),
    ]


def _render(*, ci: bool, terminal: bool, n: int = 3) -> str:
    buffer = io.StringIO()
    reporter = TerminalReporter(buffer, ci=ci, width=100, force_terminal=terminal)
    plan = _plan(n)
    reporter.on_start(plan)
    items = _items()
    for item in items:
        reporter.on_item(item)
    report = build_report(plan, items, 11_600.0, "completed")
    report.results_path = ".cobalt/results/x.json"
    reporter.on_finish(report)
    return buffer.getvalue()


EXPECTED_PLAIN = """\
╭────────────────────────── cobalt demo ───────────────────────────╮
│ 3 items x 1 run x 2 evaluators  |  concurrency 4  |  timeout 10s │
╰───────────────────────────── run-1 ──────────────────────────────╯
    #0 ✓ exact=1.000 style=0.900* (12ms)
    #1 ⚠ exact=0.000 style=ERR (1.5s)
    #2 ⏱ TIMEOUT the agent did not answer within 10 s
evaluator     avg     min     max     p50     p95   n   errors
──────────────────────────────────────────────────────────────
exact       0.500   0.000   1.000   0.500   0.950   2        0
style       0.900   0.900   0.900   0.900   0.900   1        1
items 3 (2 ok, 0 errors, 1 timeout)  |  time 11.6s  |  avg latency 3.84s  |  p95 9.15s
tokens 0 (agent 0, judge 0)  |  cost: agent –, judge $0  |  judge calls 0, cached 1
⚠ low exact (< 0.5): #1
✗ 1 agent call failed: #2
✗ style: 1 evaluation error (#1); first: ValueError: no style in style()
gate FAIL error rate <= 0%  error rate 28.6% (2 of 7 attempts): 1 of 3 agent calls failed or timed out, \
1 of 4 evaluations were eval-errors
gate PASS every evaluator scored  scored: exact 2/2, style 1/2
results: .cobalt/results/x.json
run id:  run-1
"""


def test_non_tty_output_is_plain_and_stable() -> None:
    out = _render(ci=False, terminal=False)
    assert "\x1b[" not in out
    assert out == EXPECTED_PLAIN


def test_tty_output_has_colour_and_the_same_text() -> None:
    out = _render(ci=False, terminal=True)
    assert "\x1b[" in out
    assert ANSI.sub("", out) == EXPECTED_PLAIN


def test_ci_mode_is_compact_and_colourless() -> None:
    out = _render(ci=True, terminal=True)
    assert "\x1b[" not in out and "╭" not in out
    assert out.splitlines()[0] == ("cobalt run demo (run-1): 3 items x 1 run x 2 evaluators  |  concurrency 4  "
                                   "|  timeout 10s")
    assert "exact     | 0.500 | 0.000 | 1.000 | 0.500 | 0.950 | 2 |      0" in out


def test_many_items_show_a_progress_bar_instead_of_lines() -> None:
    buffer = io.StringIO()
    reporter = TerminalReporter(buffer, width=100, force_terminal=True)
    plan = _plan(60)
    reporter.on_start(plan)
    ok = ItemResult(index=0, output="a", latency_ms=1.0, evaluations={"exact": Evaluation(score=1.0)})
    for i in range(59):
        reporter.on_item(ok.model_copy(update={"index": i}))
    reporter.on_item(ItemResult(index=59, status="error", error="ValueError: broken"))
    reporter.on_finish(build_report(plan, [], 1.0, "completed"))
    text = ANSI.sub("", buffer.getvalue())
    assert "#3 ✓" not in text  # no line per ok item
    assert "#59 ✗ ERROR ValueError: broken" in text  # failures still show


def test_ci_mode_with_many_items_prints_only_problems() -> None:
    buffer = io.StringIO()
    reporter = TerminalReporter(buffer, ci=True)
    plan = _plan(60)
    reporter.on_start(plan)
    good = {"exact": Evaluation(score=1.0), "style": Evaluation(score=1.0)}
    for i in range(58):
        reporter.on_item(ItemResult(index=i, output="a", latency_ms=1.0, evaluations=good))
    reporter.on_item(ItemResult(index=58, output="b", latency_ms=1.0,
                                evaluations={"exact": Evaluation(score=0.0), "style": Evaluation(score=1.0)}))
    reporter.on_item(ItemResult(index=59, status="timeout", error="too slow"))
    lines = [line for line in buffer.getvalue().splitlines() if line.strip().startswith("#")]
    assert [line.split()[0] for line in lines] == ["#58", "#59"]


def test_money_keeps_significant_digits_for_sub_cent_amounts() -> None:
    from cobalt_lib.render._units import money

    assert [money(v) for v in (None, 0.0, 2.7e-05, 0.00123, 0.5, 12.3456)] == [
        "–", "$0", "$0.0000270", "$0.00123", "$0.5000", "$12.35"]


def test_durations_keep_three_significant_digits_and_never_an_exponent() -> None:
    from cobalt_lib.render._units import duration

    values = (None, 0.0, 3.47e-05, 0.00318, 0.042, 5.0, 3.18, 420.4, 4240.0, -2500.0)
    assert [duration(v) for v in values] == [
        "–", "0ms", "0.0000347ms", "0.00318ms", "0.042ms", "5ms", "3.18ms", "420ms", "4.24s", "-2.5s"]


def test_a_run_without_model_evaluators_prints_no_judge_cost() -> None:
    buffer = io.StringIO()
    reporter = TerminalReporter(buffer, width=100)
    plan = _plan(1)
    item = ItemResult(index=0, output="a", latency_ms=1.0, evaluations={"exact": Evaluation(score=1.0)})
    reporter.on_finish(build_report(plan, [item], 1.0, "completed"))
    text = buffer.getvalue()
    assert "tokens 0  |  cost: agent –  |  no judge calls" in text
    assert "judge $" not in text


def test_an_item_with_an_evaluation_error_is_not_marked_as_passing() -> None:
    reporter = TerminalReporter(io.StringIO(), width=100)
    reporter.on_start(_plan(1))
    item = ItemResult(index=0, output="a", latency_ms=5.0,
                      evaluations={"exact": Evaluation(score=1.0), "style": Evaluation(status="eval-error")})
    assert reporter.item_line(item).plain == "    #0 ⚠ exact=1.000 style=ERR (5ms)"


def test_judge_calls_that_all_failed_still_show_in_the_totals() -> None:
    buffer = io.StringIO()
    reporter = TerminalReporter(buffer, width=120)
    plan = _plan(1)
    failed = Evaluation(status="eval-error", error="openai/gpt-4o-mini call failed: HTTP 429",
                        judge_model="openai/gpt-4o-mini")
    item = ItemResult(index=0, output="a", latency_ms=1.0, evaluations={"exact": Evaluation(score=1.0),
                                                                       "style": failed})
    reporter.on_finish(build_report(plan, [item], 1.0, "completed"))
    text = buffer.getvalue()
    assert "no judge calls" not in text and "judge calls 0, cached 0" in text
    assert "✗ style: 1 evaluation error (#0); first: openai/gpt-4o-mini call failed: HTTP 429" in text


def test_with_several_runs_low_scores_name_the_run_and_flaky_items_are_listed() -> None:
    exp = experiment("rep", Dataset([{"input": "a", "expected_output": "a"}, {"input": "b", "expected_output": "b"}]),
                     lambda ctx: "a", evaluators=[Evaluator(name="exact", type="exact-match")])
    plan = prepare(exp, define_config(output_dir="/nonexistent"), FreshRun(run_id="run-3", runs=3))
    scores = {(0, 0): 1.0, (0, 1): 0.0, (0, 2): 1.0, (1, 0): 1.0, (1, 1): 1.0, (1, 2): 1.0}
    items = [ItemResult(index=i, run_index=r, output="a", latency_ms=1.0,
                        evaluations={"exact": Evaluation(score=v, passed=v >= 0.5)}) for (i, r), v in scores.items()]
    buffer = io.StringIO()
    reporter = TerminalReporter(buffer, width=120)
    reporter.on_start(plan)
    reporter.on_finish(build_report(plan, items, 1.0, "completed"))
    lines = buffer.getvalue().splitlines()
    assert "⚠ low exact (< 0.5): #0:1" in lines
    assert "⚠ flaky (passed in some runs, not all): #0 exact 2 of 3 passed" in lines


def test_an_error_message_keeps_its_whole_first_line_in_the_output_and_the_full_text_in_the_results(
        project: Path) -> None:
    advice = ("the agent did not answer within 0.05 s: the event loop was blocked, so no timeout could fire; an "
              "async agent must not make blocking calls (time.sleep, requests): make it a plain def")

    def agent(ctx):
        raise RuntimeError(advice + "\nsecond line")

    buffer = io.StringIO()
    report = experiment("long-error", Dataset([{"input": "q"}]), agent).run(
        observer=TerminalReporter(buffer, ci=True, width=80))
    assert f"#0 ✗ ERROR RuntimeError: {advice}\n" in buffer.getvalue()
    assert "second line" not in buffer.getvalue()
    stored = json.loads(Path(report.results_path or "").read_text())["items"][0]["error"]
    assert stored == f"RuntimeError: {advice}\nsecond line" == report.items[0].error


def test_the_live_line_counts_judge_calls_in_flight(judged_project: Path, llm: FakeLLM) -> None:
    """An item's line waits for its judge calls: meanwhile the live line says how many are out."""
    buffer = io.StringIO()
    seen: list[str] = []

    def judge(kind: str, body: dict[str, Any]) -> Any:  # runs as the call is in flight
        seen.append(ANSI.sub("", buffer.getvalue()))
        return answer(0.9)

    llm.respond = judge
    exp = experiment("judged", Dataset([{"input": "q0"}]), lambda ctx: "a",
                     evaluators=[Evaluator(name="quality", prompt="{{input}} {{output}}")], concurrency=1)
    reporter = TerminalReporter(buffer, width=100, force_terminal=True)
    report = run_plan(prepare(exp, load_config(judged_project), FreshRun()), reporter, record=False)
    assert report.passed
    assert len(seen) == 1 and "judge: 1 call in flight, 0 answered" in seen[0]
    assert "#0 ✓ quality=0.900" in ANSI.sub("", buffer.getvalue())
