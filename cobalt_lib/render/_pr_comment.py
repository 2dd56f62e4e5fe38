"""The pull request comment: per experiment its gates, its deltas against the baseline with their paired
interval and verdict, the items that regressed (with the judge's reasons), cost, and what the two runs
measured differently. Markdown as GitHub renders it; text from agents and judges is escaped so that it
cannot close a table, open HTML, hide a marker or mention someone."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..results._compare import Comparison, EvaluatorDelta
from ..results._report import ExperimentReport
from ._compare import metric_text, missing_text
from ._units import count, delta, delta_interval, money, percent, score

#: GitHub refuses a comment body over 65,536 characters.
MAX_BODY = 65_536
#: Regressed items listed per experiment.
MAX_ITEMS = 10


@dataclass
class CommentSection:
    """One experiment's run in the comment, with its baseline comparison (None: no baseline yet)."""

    report: ExperimentReport
    comparison: Comparison | None
    #: Where the baseline came from, or why there is none, in one sentence.
    baseline_note: str
    #: Why this run counts as a regression against its baseline (`regression_reasons`); empty: it does not.
    regressions: list[str] = field(default_factory=list)
    #: `{(item index, evaluator): reason}` of the run's scores, for the regressed items.
    reasons: dict[tuple[int, str], str] = field(default_factory=dict)


def escape(text: object, limit: int = 160) -> str:
    """One line of untrusted text for a Markdown table cell: no pipes, HTML, mentions or line breaks."""
    line = " ".join(str(text if text is not None else "").split())
    line = line if len(line) <= limit else line[: limit - 1] + "…"
    line = line.replace("\\", "\\\\").replace("|", "\\|").replace("`", "'")
    line = line.replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"@(?=\w)", "@\u200b", line)  # `@user` would notify someone


def _interval(e: EvaluatorDelta) -> str:
    return delta_interval(e.ci_low, e.ci_high)


_VERDICT = {"improved": "✅ improved", "regressed": "🔻 regressed", "no significant change": "≈ noise",
            "not comparable": "not comparable"}


def comment_markdown(sections: list[CommentSection], *, marker: str, report_url: str | None = None,
                     commit: str | None = None, baseline_branch: str | None = None) -> str:
    """The whole comment: a headline, then one section per experiment; cut to GitHub's limit."""
    failed = [s.report.name for s in sections if not s.report.passed]
    regressed = [s.report.name for s in sections if s.regressions]
    icon = "❌" if failed or regressed else "✅"
    head = [marker, f"## {icon} cobalt evals: {_headline(sections, failed, regressed)}", "", ""]
    facts = [f"commit `{commit[:12]}`" if commit else "",
             f"baseline: the newest run on `{baseline_branch}` that passed its gates" if baseline_branch else "",
             f"[HTML report]({report_url})" if report_url else ""]
    if any(facts):
        head[-1:] = [" · ".join(f for f in facts if f), "", ""]
    body = "\n".join(head) + "\n".join(section_markdown(s) for s in sections)
    body += ("\n<sub>≈ noise: the paired bootstrap interval of the change contains 0. 🔻 regressed: it lies "
             "entirely on the worse side of 0.</sub>\n")
    if len(body) > MAX_BODY:
        note = "\n\n… cut: a GitHub comment holds 65,536 characters at most; the HTML report has everything.\n"
        body = body[: MAX_BODY - len(note)] + note
    return body


def stopped_markdown(sentences: list[str], *, marker: str, report_url: str | None = None,
                     commit: str | None = None) -> str:
    """The comment when `cobalt run --ci` ran nothing: the experiment files that did not load, and why."""
    files = "an experiment file" if len(sentences) == 1 else f"{len(sentences)} experiment files"
    lines = [marker, f"## ❌ cobalt evals: no experiment ran, {files} did not load", ""]
    facts = [f"commit `{commit[:12]}`" if commit else "", f"[workflow run]({report_url})" if report_url else ""]
    if any(facts):
        lines += [" · ".join(f for f in facts if f), ""]
    lines += [f"- {escape(s, 2000)}" for s in sentences]
    lines += ["", "Fix the file and push again: `cobalt run --ci` runs nothing while an experiment file does not "
              "load, so that no evaluation is skipped unseen.", ""]
    body = "\n".join(lines)
    return body if len(body) <= MAX_BODY else body[: MAX_BODY - 2] + "…\n"


def _headline(sections: list[CommentSection], failed: list[str], regressed: list[str]) -> str:
    if not sections:
        return "no runs to report"
    said = [f"{count(len(sections), 'experiment')} run"]
    said.append(f"{len(failed)} failed a gate ({', '.join(failed)})" if failed else "every gate passed")
    if regressed:
        said.append(f"{len(regressed)} regressed against the baseline ({', '.join(regressed)})")
    return "; ".join(said)


def section_markdown(s: CommentSection) -> str:
    """One experiment: gates, deltas, identity changes, regressed items, cost."""
    report, c = s.report, s.comparison
    icon = "✅" if report.passed and not s.regressions else "❌"
    status = "" if report.status == "completed" else f" ({report.status})"
    parts = [f"### {icon} {escape(report.name)}{status}",
             f"run `{report.id}` · {count(report.summary.total_items, 'item')} · {s.baseline_note}",
             _gates(report)]
    if s.regressions:
        parts.append("**Regression against the baseline:**\n" + "\n".join(f"- {escape(r, 600)}" for r in s.regressions))
    if c is not None:
        parts += [p for p in (_deltas(c), _identity(c), _missing(c), _items(c, s.reasons)) if p]
    parts.append(_cost(report, c))
    return "\n\n".join(parts) + "\n\n"


def _gates(report: ExperimentReport) -> str:
    ordered = sorted(report.assertions, key=lambda g: g.passed)  # failed first
    rows = [f"| {'✅' if g.passed else '❌'} | {escape(g.name, 80)} | {escape(g.message, 240)} |" for g in ordered]
    passed = sum(g.passed for g in report.assertions)
    title = f"**Gates:** {passed} of {len(report.assertions)} passed"
    return "\n".join([title, "", "| | gate | result |", "|---|---|---|", *rows]) if rows else title + " (none)"


def _deltas(c: Comparison) -> str:
    level = percent(c.confidence)
    rows = [f"| {escape(e.evaluator, 60)} | {score(e.mean_a)} | {score(e.mean_b)} | {delta(e.paired_delta)} | "
            f"{_interval(e)} | {e.pairs} | {_VERDICT[e.verdict]} |" for e in c.evaluators]
    if not rows:
        return ""
    return "\n".join([f"**Evaluators** ({c.paired} items paired by identity; {level} paired bootstrap interval):",
                      "", f"| evaluator | baseline | this run | paired Δ | {level} CI | pairs | verdict |",
                      "|---|---:|---:|---:|---|---:|---|", *rows])


def _identity(c: Comparison) -> str:
    if not c.identity_changes:
        return ""
    lines = [f"- ⚠️ {escape(x.text, 400)}" for x in c.identity_changes if x.measurement]
    lines += [f"- {escape(x.text, 400)}" for x in c.identity_changes if not x.measurement]
    title = ("**Measured differently from the baseline:**" if c.measured_differently
             else "**What differs from the baseline:**")
    return "\n".join([title, *lines])


def _missing(c: Comparison) -> str:
    return f"**Missing:** {escape(missing_text(c.missing_from_b, shown=10), 600)}" if c.missing_from_b else ""


def _items(c: Comparison, reasons: dict[tuple[int, str], str]) -> str:
    changes = c.regressions[:MAX_ITEMS]
    statuses = [s for s in c.status_changes if s.status_b != "ok"][: max(0, MAX_ITEMS - len(changes))]
    if not changes and not statuses:
        return ""
    rows = [f"| {escape(r.item_id or r.index, 40)} | {escape(r.evaluator, 40)} | {score(r.score_a)} | "
            f"{score(r.score_b)} | {escape(reasons.get((r.index, r.evaluator), ''), 200)} |" for r in changes]
    rows += [f"| {escape(s.item_id or s.index, 40)} | (agent) | {s.status_a} | {s.status_b} | "
             f"{escape(s.error or '', 200)} |" for s in statuses]
    shown = len(rows)
    return "\n".join([f"**Regressed items** ({shown} shown, largest drop first; at most {MAX_ITEMS}):", "",
                      "| item | evaluator | baseline | this run | reason |", "|---|---|---:|---:|---|", *rows])


def _cost(report: ExperimentReport, c: Comparison | None) -> str:
    cost = f"**Cost:** {money(report.summary.estimated_cost)}"
    if c is not None:
        metrics = {m.metric: m for m in c.metrics}
        if (m := metrics.get("cost.mean")) is not None and m.a is not None and m.b is not None:
            cost += f" (per item {metric_text(m.metric, m.b)}, baseline {metric_text(m.metric, m.a)})"
        if (m := metrics.get("latency.p95")) is not None and m.b is not None:
            cost += (f" · **latency p95:** {metric_text(m.metric, m.b)}"
                     + (f" (baseline {metric_text(m.metric, m.a)})" if m.a is not None else ""))
    return cost
