"""Renderings of one run for other tools: CSV, Markdown, JSON (the results file) and JUnit XML."""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..results._direction import lower_is_better
from ..results._report import Evaluation, ExperimentReport, ItemResult
from ._markdown import report_markdown

CSV_COLUMNS = ("index", "run_index", "input", "output", "status", "evaluator", "score", "reason", "latency_ms")
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def evaluator_names(report: ExperimentReport) -> list[str]:
    """Every evaluator of the run, in declaration order."""
    declared = [e.get("name") for e in report.config.get("evaluators") or [] if isinstance(e, dict)]
    names = [*(n for n in declared if isinstance(n, str)), *report.summary.scores]
    names += [n for item in report.items for n in item.evaluations]
    return list(dict.fromkeys(names))


def to_csv(report: ExperimentReport) -> str:
    """One row per item x evaluator; an item without evaluations (it failed) gets one row."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for item in report.items:
        base = [item.index, item.run_index, _text(item.input), _text(item.output), item.status]
        latency = "" if item.latency_ms is None else f"{item.latency_ms:.3f}"
        if not item.evaluations:
            writer.writerow([*base, "", "", item.error or "", latency])
        for name, ev in item.evaluations.items():
            score = "" if ev.score is None else repr(ev.score)
            writer.writerow([*base, name, score, ev.reason or ev.error or "", latency])
    return buffer.getvalue()


def _md_cell(value: Any, limit: int = 80) -> str:
    text = " ".join(_text(value).split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _md_score(ev: Evaluation | None) -> str:
    if ev is None:
        return "–"
    return "ERR" if ev.status != "ok" or ev.score is None else f"{ev.score:.3f}"


def to_markdown(report: ExperimentReport) -> str:
    """The run summary (as in GitHub step summaries) plus a table of every item."""
    names = evaluator_names(report)
    header = ["#", "run", "status", "input", "output", *names, "latency (ms)"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for item in report.items:
        latency = "–" if item.latency_ms is None else f"{item.latency_ms:.0f}"
        output = item.output if item.status == "ok" else item.error
        cells = [str(item.index), str(item.run_index), item.status, _md_cell(item.input), _md_cell(output),
                 *(_md_score(item.evaluations.get(n)) for n in names), latency]
        lines.append("| " + " | ".join(cells) + " |")
    return report_markdown(report) + _per_item_markdown(report, names) + "\n#### Items\n\n" + "\n".join(lines) + "\n"


def _per_item_markdown(report: ExperimentReport, names: list[str]) -> str:
    """With runs > 1: each item's mean ± spread and passes per evaluator, across its runs."""
    if not report.summary.per_item:
        return ""
    header = ["#", "runs", *names]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for spread in report.summary.per_item:
        cells = [str(spread.index), str(spread.runs)]
        for name in names:
            st = spread.evaluators.get(name)
            if st is None or st.avg is None:
                cells.append("–")
                continue
            passes = "" if st.pass_rate is None else f" · {round(st.pass_rate * spread.runs)}/{spread.runs} passed"
            cells.append(f"{st.avg:.3f} ± {st.stddev or 0:.3f}{passes}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n#### Per item across runs (mean ± stddev)\n\n" + "\n".join(lines) + "\n"


def to_json(report: ExperimentReport) -> str:
    """The report's JSON, exactly as the results file holds it."""
    return report.model_dump_json(indent=2) + "\n"


def _case_outcome(item: ItemResult, ev: Evaluation | None, name: str) -> tuple[str, str] | None:
    """(`failure` | `error`, message) for a failed item test case, None when it passed.

    An item is judged by the evaluator's own pass mark (`passed`), never by a gate: gates apply to
    run statistics such as the mean, and get their own test cases (`_gate_suite`).
    """
    if item.status != "ok":
        return "failure", f"the agent call {item.status}: {item.error or 'no output'}"
    if ev is None:
        return "error", "the evaluator did not score this item"
    if ev.status != "ok" or ev.score is None:
        return "error", f"eval-error: {ev.error or 'no score'}"
    if ev.passed is False:
        side = "above" if lower_is_better(name) else "below"  # `passed` was set in the evaluator's direction
        return "failure", f"score {ev.score:.4g} is {side} the evaluator's pass mark" + (
            f": {ev.reason}" if ev.reason else "")
    return None


def _xml(text: str) -> str:
    """`text` without the characters XML 1.0 cannot carry (control codes, lone surrogates)."""
    return _NOT_XML.sub("?", text)


def _add_case(suite: ET.Element, classname: str, name: str, seconds: float,
              outcome: tuple[str, str] | None) -> None:
    """One <testcase>, with a <failure> or <error> child when `outcome` says it failed."""
    case = ET.SubElement(suite, "testcase", classname=_xml(classname), name=_xml(name), time=f"{seconds:.3f}")
    if outcome is not None:
        kind, message = outcome[0], _xml(outcome[1])
        ET.SubElement(case, kind, message=message, type=kind).text = message


def _item_suite(report: ExperimentReport) -> ET.Element:
    suite = ET.Element("testsuite", name=_xml(report.name), timestamp=report.timestamp,
                       time=f"{report.summary.total_duration_ms / 1000:.3f}")
    for item in report.items:
        for name in evaluator_names(report):
            label = f"item {item.index} / {name}" + (f" (run {item.run_index})" if item.run_index else "")
            _add_case(suite, report.name, label, (item.latency_ms or 0) / 1000,
                      _case_outcome(item, item.evaluations.get(name), name))
    return suite


def _gate_suite(report: ExperimentReport) -> ET.Element:
    """One test case per quality gate, failed exactly when the run's gate failed (what exits 1)."""
    name = f"{report.name} / gates"
    suite = ET.Element("testsuite", name=_xml(name), timestamp=report.timestamp, time="0.000")
    for gate in report.assertions:
        _add_case(suite, name, gate.name, 0.0, None if gate.passed else ("failure", gate.message or "gate failed"))
    return suite


def _count(suite: ET.Element) -> None:
    """Set tests, failures and errors on a suite from its cases."""
    cases = list(suite.iter("testcase"))
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(c.find("failure") is not None for c in cases)))
    suite.set("errors", str(sum(c.find("error") is not None for c in cases)))


def to_junit(report: ExperimentReport) -> str:
    """A testsuite of item x evaluator cases (agent failures, eval-errors, scores below the pass mark)
    and, when the run has gates, a testsuite `<name> / gates` with one case per gate."""
    suites = ET.Element("testsuites", name="cobalt")
    suites.append(_item_suite(report))
    if report.assertions:
        suites.append(_gate_suite(report))
    for suite in suites:
        _count(suite)
    for key in ("tests", "failures", "errors"):
        suites.set(key, str(sum(int(suite.get(key, "0")) for suite in suites)))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def to_baseline(report: ExperimentReport) -> str:
    """The run's evaluator means as a `no_regression` baseline file."""
    return json.dumps(report.baseline(), indent=2, sort_keys=True) + "\n"


RENDERERS: dict[str, Callable[[ExperimentReport], str]] = {
    "csv": to_csv, "markdown": to_markdown, "json": to_json, "junit": to_junit, "baseline": to_baseline,
}
#: The format a file name implies when `--format` is not given (`-o results.xml` is JUnit).
FORMATS_BY_SUFFIX = {".csv": "csv", ".md": "markdown", ".markdown": "markdown", ".json": "json", ".xml": "junit"}


def format_for(path: Path) -> str | None:
    """The export format `path`'s extension implies, None when it implies none."""
    return FORMATS_BY_SUFFIX.get(path.suffix.lower())
