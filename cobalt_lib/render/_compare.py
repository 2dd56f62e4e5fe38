"""A run comparison as text: the lines of `cobalt compare` and its Markdown form."""

from __future__ import annotations

from collections import Counter
from typing import Any

from .._numbers import UNKNOWN, delta, delta_interval, fixed, interval, metric, percent, score
from ..results._compare import Comparison, EvaluatorDelta, FlakyItem, ItemChange, Unpaired


def _num(value: float | None, sign: bool = False) -> str:
    return delta(value) if sign else score(value)


def metric_text(name: str, value: float | None, *, sign: bool = False) -> str:
    """A run metric with its unit: latencies (stored in ms) as `420ms` or `4.24s`, costs as dollars
    with significant digits (`$0.0000421`, not `0.0000`); `sign` for a delta; `–` when unknown."""
    return metric(name, value, sign=sign)


def change_item(r: ItemChange) -> str:
    """`4`, `4 (was 3)` when the item moved in the dataset, `4 (flaky in B: 2 of 3 passed)`."""
    notes = [f"was {r.index_a}"] if r.index_a != r.index else []
    notes += [f"flaky in {side}: {text}" for side, text in (("A", r.flaky_a), ("B", r.flaky_b)) if text]
    return f"{r.index}" + (f" ({'; '.join(notes)})" if notes else "")


def flaky_line(f: FlakyItem) -> str:
    """`item 4 flaky: A 2 of 3 passed, B 1 of 3 passed`."""
    sides = [f"{side} {text}" for side, text in (("A", f.a), ("B", f.b)) if text]
    return f"item {f.index} flaky: {', '.join(sides)}"


def lost_text(e: EvaluatorDelta) -> str:
    """Why an evaluator with `lost_scores` counts as regressed, in one line."""
    return (f"{e.evaluator} has no score in B for {e.lost} of the {e.scored_a} paired items scored in A "
            "(eval-errors or failed agent calls)")


def missing_text(missing: list[Unpaired], shown: int = 5) -> str:
    """`2 items of the baseline are missing from run B: q3, q7`: never passed over in silence."""
    names = [u.item_id if u.reason == "only in A" and u.item_id else f"#{u.index}" for u in missing[:shown]]
    more = f" and {len(missing) - shown} more" if len(missing) > shown else ""
    noun = "item of the baseline is" if len(missing) == 1 else "items of the baseline are"
    return f"{len(missing)} {noun} missing from run B: {', '.join(names)}{more}"


def identity_lines(c: Comparison) -> list[str]:
    """What differs between the runs' evaluation identities, measurement changes first."""
    return [c.text for c in sorted(c.identity_changes, key=lambda change: not change.measurement)]


def identity_markdown(c: Comparison) -> str:
    """`#### Measured differently` (or `#### What differs`) with one line per identity change."""
    title = "Measured differently" if c.measured_differently else "What differs between the runs"
    return f"#### {title}\n\n" + "\n".join(f"- {line}" for line in identity_lines(c))


def _cell(value: Any, limit: int = 60) -> str:
    text = value if isinstance(value, str) else "" if value is None else str(value)
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def unpaired_summary(unpaired: list[Unpaired], shown: int = 5) -> str:
    """One line for every unpaired item: how many, why, and the first few (a changed dataset can
    leave hundreds, one line each would bury the comparison)."""
    reasons = ", ".join(f"{count} {reason}" for reason, count in Counter(u.reason for u in unpaired).items())
    items = [str(u.index) for u in unpaired[:shown]]
    more = f" and {len(unpaired) - shown} more" if len(unpaired) > shown else ""
    noun = "item" if len(unpaired) == 1 else "items"
    return f"{len(unpaired)} unpaired {noun}, not compared ({reasons}): {noun} {', '.join(items)}{more}"


def scope_note(c: Comparison) -> str:
    return f"latest/previous looked up in experiment {c.scope!r} only (--experiment picks another)"


def ci_text(e: EvaluatorDelta) -> str:
    return delta_interval(e.ci_low, e.ci_high)


def verdict_lines(c: Comparison) -> list[str]:
    """Each evaluator's verdict with the rule behind it (grading runs: each model's agreement with the human
    scores), then what `--fail-on-regression` checks."""
    return [*(f"{e.evaluator}: {e.why}" for e in c.evaluators if e.why), *agreement_lines(c), c.regression_rule]


def agreement_lines(c: Comparison) -> list[str]:
    """Grading runs: per model, `judge: exact 60% -> 90%, within one 80% -> 100%, kappa 0.52 [0.31, 0.70] ->
    0.88 [0.75, 0.95]; improved: ...`."""
    return [f"{g.model}: exact {_pct(g.exact_a)} -> {_pct(g.exact_b)}, within one {_pct(g.within_one_a)} -> "
            f"{_pct(g.within_one_b)}, kappa {_kappa(g.kappa_a, g.kappa_a_ci)} -> {_kappa(g.kappa_b, g.kappa_b_ci)}; "
            f"{g.why}" for g in c.agreement or []]


def _pct(value: float | None) -> str:
    return percent(value)


def _kappa(value: float | None, ci: tuple[float, float] | None) -> str:
    if value is None:
        return UNKNOWN
    return fixed(value, 2) + (f" {interval(ci[0], ci[1])}" if ci else "")


def verdicts_markdown(c: Comparison) -> str:
    return "#### Verdicts\n\n" + "\n".join(f"- {line}" for line in verdict_lines(c))


def comparison_markdown(c: Comparison) -> str:
    """The comparison as Markdown: evaluators, run metrics, top movers, unpaired items."""
    level = percent(c.confidence)
    parts = [f"### cobalt compare: `{c.run_b}` vs baseline `{c.run_a}`",
             f"{c.experiment_b} vs {c.experiment_a} · {c.paired} paired items · {len(c.unpaired)} unpaired · "
             f"{level} paired bootstrap CI ({c.resamples} resamples, seed {c.seed})"
             + (f" · {scope_note(c)}" if c.scope else ""),
             "\n".join([f"| evaluator | A | B | B - A | paired B - A | {level} CI | pairs | verdict |",
                        "|---|---|---|---|---|---|---|---|",
                        *(f"| {e.evaluator} | {_num(e.mean_a)} | {_num(e.mean_b)} | {_num(e.delta, sign=True)} "
                          f"| {_num(e.paired_delta, sign=True)} | {ci_text(e)} | {e.pairs} | {e.verdict} |"
                          for e in c.evaluators)]),
             "\n".join(["| metric | A | B | B - A |", "|---|---|---|---|",
                        *(f"| {m.metric} | {metric_text(m.metric, m.a)} | {metric_text(m.metric, m.b)} "
                          f"| {metric_text(m.metric, m.delta, sign=True)} |" for m in c.metrics)])]
    if c.identity_changes:
        parts.append(identity_markdown(c))
    parts.append(verdicts_markdown(c))
    if c.missing_from_b:
        parts.append(f"#### Missing from B\n\n{missing_text(c.missing_from_b)}")
    if c.lost_scores:
        parts.append("#### Lost scores\n\n" + "\n".join(f"- {lost_text(e)}" for e in c.lost_scores))
    for title, rows in (("Most regressed", c.regressions), ("Most improved", c.improvements)):
        if rows:
            parts.append(f"#### {title}\n\n| item | evaluator | A | B | B - A | input |\n"
                         "|---|---|---|---|---|---|\n" + "\n".join(
                             f"| {change_item(r)} | {r.evaluator} | {_num(r.score_a)} | {_num(r.score_b)} "
                             f"| {_num(r.delta, sign=True)} | {_cell(r.input)} |" for r in rows))
    if c.status_changes:
        parts.append("#### Status changes\n\n" + "\n".join(
            f"- item {s.index}: {s.status_a} → {s.status_b}" for s in c.status_changes))
    if c.flaky:
        parts.append("#### Flaky items\n\n" + "\n".join(f"- {flaky_line(f)}" for f in c.flaky))
    if c.conversations:
        from ..conversations._render import divergence_lines

        head, *parted = divergence_lines(c)
        parts.append("#### Conversations\n\n" + head + "".join(f"\n- {line}" for line in parted))
    if c.unpaired:
        parts.append(f"#### Unpaired\n\n{unpaired_summary(c.unpaired)}")
    return "\n\n".join(parts) + "\n"
